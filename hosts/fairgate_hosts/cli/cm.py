"""fg-cm: UDP flows sharing one Congestion Manager macroflow (the CM experiments' bulk app).

``h1 fg-cm r1 --flows 3 --for 10``: the in-process CM paces every flow of this host to DST,
learning the path from the receiver's probe answers and the switches' stamped rate. A line
a second on the terminal; the app's JSONL log in ``$FG_RUN_DIR/cmds/``.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

from fairgate_hosts.agentio import JsonlTail
from fairgate_hosts.apps.bulk import main as bulk_main
from fairgate_hosts.cli.common import (
    CommandError,
    OneLineParser,
    Session,
    fail,
    fmt_kbps,
    in_foreground,
    json_lines,
    local_address,
    log_path,
    parse_bitrate_kbps,
    parse_count,
    parse_seconds,
    registered,
    say,
)
from fairgate_p4 import generated as g

PROG = "fg-cm"


def parse_weights(text: str) -> list[float]:
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"weights are numbers, e.g. 1,2,1: {text!r}") from None
    if not weights or min(weights) <= 0:
        raise argparse.ArgumentTypeError(f"weights must be > 0: {text!r}")
    return weights


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog=PROG,
        description="Bulk UDP flows to DST sharing one Congestion Manager macroflow "
        "(a receiver must listen at DST: the lab starts one on every host).",
    )
    p.add_argument("dst", help="destination host (r1) or IPv4 address")
    p.add_argument("--flows", type=parse_count, default=2, help="flows in the macroflow (2)")
    p.add_argument("--weights", type=parse_weights, default=None, help="e.g. 1,2 (all 1)")
    p.add_argument("--for", dest="seconds", type=parse_seconds, default=10.0, help="seconds (10)")
    p.add_argument(
        "--max-rate", type=parse_bitrate_kbps, default=20_000, help="macroflow cap (20M)"
    )
    p.add_argument("--no-explicit", action="store_true", help="ignore the switches' rate")
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="receiver's UDP port")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = Session.load()
        dst = session.address(args.dst)
        if args.weights is not None and len(args.weights) != args.flows:
            raise CommandError(
                f"--weights gives {len(args.weights)} weights for {args.flows} flows"
            )
    except CommandError as exc:
        return fail(PROG, str(exc))
    me = session.name_of(local_address(dst, args.port))
    label = f"{me} -> {session.name_of(dst)} (CM)"
    log = log_path(session, me, "cm")
    argv2 = ["--dst", dst, "--port", str(args.port), "--flows", str(args.flows)]
    argv2 += ["--duration", str(args.seconds), "--interval", "1.0", "--log", str(log)]
    argv2 += ["--max-rate", str(args.max_rate)]
    if args.weights:
        argv2 += ["--weights", ",".join(f"{w:g}" for w in args.weights)]
    if args.no_explicit:
        argv2.append("--no-explicit")
    say(f"{label}: {args.flows} flows for {args.seconds:g} s; log {log}")
    done = threading.Event()
    thread = threading.Thread(target=_print_while, args=(log, label, done), daemon=True)
    thread.start()
    with registered(session, f"{PROG} {' '.join(argv or sys.argv[1:])}"):
        try:
            code = bulk_main(argv2)
        finally:
            done.set()
            thread.join(2.0)
    final = [r for r in json_lines(log) if r.get("type") == "done"]
    if final:
        f = final[-1]
        jain = f.get("jain_index_per_weight")
        say(
            f"{label}: total {fmt_kbps(f['total_kbps'])}, per flow "
            + ", ".join(fmt_kbps(v["kbps"]) for v in f["flows"].values())
            + f", Jain {'-' if jain is None else f'{jain:.3f}'}"
        )
    return code


def _print_while(path: Path, label: str, done: threading.Event) -> None:
    tail = JsonlTail(path)
    while not done.wait(0.3):
        for r in tail.new():
            if r.get("type") == "sample" and in_foreground():
                flows = ", ".join(fmt_kbps(v["kbps"]) for v in r["flows"].values())
                say(
                    f"{label}  t={r['t_s']:5.1f}s  macroflow {fmt_kbps(r['macroflow_kbps'])}"
                    f"  flows {flows or '-'}"
                )


if __name__ == "__main__":
    raise SystemExit(main())
