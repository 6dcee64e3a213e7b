"""fg-status: one line per switch port from the controller's records (read-only).

The controller appends a record per port per control period to ``controller.jsonl`` in the run
folder; fg-status reads the newest record of every port from the end of that file. It never
talks to a switch, so the controller's P4Runtime mastership is untouched.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fairgate_hosts.cli.common import CommandError, OneLineParser, Session, fail, parse_seconds

PROG = "fg-status"
TAIL_BYTES = 256 * 1024
FRAME_BYTES = 1242.0  # the labs' data frame, for queue bytes -> packets


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog=PROG,
        description="Per port of every switch: the fair rate the controller wrote, arrivals "
        "(input rate y) against capacity, mean queue, drops, congestion flag. Read from the "
        "controller's records; no switch is touched.",
    )
    p.add_argument(
        "--records", type=Path, default=None, help="default: $FG_RUN_DIR/controller.jsonl"
    )
    p.add_argument("--json", action="store_true", help="the latest records as JSON, one a line")
    p.add_argument("--all", action="store_true", help="also ports without traffic or rate")
    p.add_argument("--stale", type=parse_seconds, default=3.0, help="warn when older (3 s)")
    return p


def latest_records(
    path: Path, tail_bytes: int = TAIL_BYTES
) -> dict[tuple[str, int], dict[str, Any]]:
    """The newest record per (switch, port) among the file's last ``tail_bytes``."""
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - tail_bytes))
        data = f.read()
    lines = data.splitlines()
    if size > tail_bytes:
        lines = lines[1:]  # the first line is probably cut
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for line in lines:
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(r, dict) and "switch" in r and "port" in r:
            out[(str(r["switch"]), int(r["port"]))] = r
    return out


def port_line(r: dict[str, Any], peer: str | None) -> str:
    """One port: fair rate, arrivals vs capacity, queue, drops, congestion."""
    period = r.get("period_s") or 0.0
    cap = r.get("capacity_Bps") or 0.0
    y = r.get("y_Bps") or 0.0
    rate = r.get("rate_kbps")
    if rate is None:
        rate_txt = "    -"
    elif rate >= 0xFFFFFFFF:
        rate_txt = "unlim"
    else:
        rate_txt = f"{rate:5.0f}"
    drops = r.get("drop_pkts") or 0
    drops_ps = drops / period if period else 0.0
    queue = (r.get("queue_mean_bytes") or 0.0) / FRAME_BYTES
    name = f"{r['switch']}:{r['port']}"
    to = f"-> {peer}" if peer else ""
    util = f"{y / cap:4.0%}" if cap else "   -"
    return (
        f"{name:<6} {to:<8} rate {rate_txt} kb/s  arrivals {y * 8e-3:7.0f} kb/s ({util} of "
        f"{cap * 8e-3:.0f})  queue {queue:5.1f} pkt  drops {drops_ps:6.1f}/s"
        f"{'  congested' if r.get('congested') else ''}"
    )


def render(
    records: dict[tuple[str, int], dict[str, Any]],
    peers: dict[str, str],
    show_all: bool,
    now: float,
    stale_s: float,
) -> list[str]:
    if not records:
        return ["fg-status: no controller records yet (is the controller running?)"]
    newest = max(float(r.get("t", 0.0)) for r in records.values())
    age = now - newest
    head = f"controller records, newest {age:.1f} s old"
    if age > stale_s:
        head += f"  (STALE: nothing written for {age:.0f} s; is the controller running?)"
    out = [head]
    for key in sorted(records):
        r = records[key]
        busy = (r.get("y_Bps") or 0) > 0 or r.get("rate_kbps") is not None
        if show_all or busy:
            out.append(port_line(r, peers.get(f"{key[0]}:{key[1]}")))
    return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = Session.load()
    except CommandError as exc:
        return fail(PROG, str(exc))
    path = args.records
    if path is None:
        if session.run_dir is None:
            return fail(PROG, "not in a lab (no FG_RUN_DIR): give --records FILE")
        path = session.run_dir / "controller.jsonl"
    try:
        records = latest_records(path)
    except OSError as exc:
        return fail(PROG, f"cannot read {path}: {exc.strerror}")
    if args.json:
        for key in sorted(records):
            print(json.dumps(records[key]))
        return 0
    peers: dict[str, str] = {}
    if session.run_dir is not None:
        try:
            doc = json.loads((session.run_dir / "session.json").read_text())
            peers = {str(k): str(v) for k, v in doc.get("ports", {}).items()}
        except (OSError, json.JSONDecodeError):
            peers = {}
    for line in render(records, peers, args.all, time.time(), args.stale):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
