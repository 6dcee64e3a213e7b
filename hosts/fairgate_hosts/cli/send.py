"""fg-send: one paced UDP flow carrying the rate header (the experiments' sender agent).

``h1 fg-send r1 --for 30`` asks for as much as the network grants; ``--rate 20M`` asks for at
most 20 Mbit/s (the switches min-stamp their fair rate into it); ``--mode fixed --rate 2M``
sends at 2 Mbit/s whatever the network says. A line a second on the terminal; the agent's
JSONL log in ``$FG_RUN_DIR/cmds/``.
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from dataclasses import dataclass
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag
from fairgate_hosts.cli.common import (
    CommandError,
    OneLineParser,
    Session,
    fail,
    fmt_kbps,
    in_foreground,
    local_address,
    log_path,
    parse_bitrate_kbps,
    parse_bytes,
    parse_seconds,
    registered,
    say,
)
from fairgate_hosts.sender import Mode, SenderConfig, SenderCore
from fairgate_hosts.udp_sender import run
from fairgate_hosts.wire import RATE_UNLIMITED
from fairgate_p4 import generated as g

PROG = "fg-send"
# The lab's sender mode per controller algorithm (as fairgate_topo's scenarios use).
MODE_OF_ALGO = {"qfcp": "qfcp", "rcp": "qfcp", "lestas": "lestas", "xcp": "xcp", "none": "qfcp"}


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog=PROG,
        description="Send one rate-controlled UDP flow to DST (a host name of the lab or an "
        "IPv4 address; a receiver must listen there: the lab starts one on every host). "
        "Rates are bit/s of frames with k/M/G suffixes.",
    )
    p.add_argument("dst", help="destination host (r1) or IPv4 address")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--for", dest="seconds", type=parse_seconds, help="send S seconds (30)")
    what.add_argument("--size", type=parse_bytes, help="send this many bytes (10M) and stop")
    p.add_argument(
        "--rate",
        type=parse_bitrate_kbps,
        default=None,
        help="rate asked for (written in the header; the network may grant less); "
        "with --mode fixed the sending rate (default: unlimited)",
    )
    p.add_argument(
        "--mode",
        choices=["auto", "qfcp", "lestas", "xcp", "fixed"],
        default="auto",
        help="rate control; auto follows the lab's algorithm (default: auto)",
    )
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="receiver's UDP port")
    p.add_argument("--name", default=None, help="flow label in the log")
    p.add_argument(
        "--quiet",
        action="store_true",
        help="only the first and the final line (the default for a background job: &)",
    )
    return p


def config(args: argparse.Namespace, algo: str) -> SenderConfig:
    mode = MODE_OF_ALGO.get(algo, "qfcp") if args.mode == "auto" else args.mode
    if mode == "fixed" and args.rate is None:
        raise CommandError("--mode fixed needs --rate (e.g. --rate 2M)")
    seconds = args.seconds if args.seconds is not None or args.size is not None else 30.0
    return SenderConfig(
        mode=Mode(mode),
        flow_bytes=args.size,
        duration_us=None if seconds is None else int(seconds * 1e6),
        desired_rate_kbps=RATE_UNLIMITED if args.rate is None else args.rate,
        initial_rate_kbps=min(400, args.rate or 400),
        fixed_rate_kbps=args.rate or 1000,
        give_up_us=30_000_000,
        log_interval_us=200_000,
    )


@dataclass
class TeeLog(JsonlLog):
    """The agent's JSONL log, and a human line a second (and at the end) on stdout."""

    label: str = ""
    quiet: bool = False
    every_us: int = 1_000_000
    _next_us: int = 0

    def write(self, record: dict[str, Any]) -> None:
        super().write(record)
        kind = record.get("type")
        if kind == "sample" and record["t_us"] >= self._next_us and not self.quiet:
            if not in_foreground():
                return
            self._next_us = record["t_us"] + self.every_us
            srtt = record.get("srtt_us")
            say(
                f"{self.label}  t={record['t_us'] / 1e6:5.1f}s  granted "
                f"{fmt_kbps(record.get('granted_kbps'))}  sending {fmt_kbps(record['sent_kbps'])}"
                f"  rtt {'-' if srtt is None else f'{srtt / 1000:.0f} ms'}"
                f"  lost {record['losses']}{'  congested' if record.get('congested') else ''}"
            )
        elif kind == "done":
            secs = max(record["t_us"], 1) / 1e6
            say(
                f"{self.label}  {record['outcome']} after {secs:.1f}s: "
                f"{record['acked_bytes']} B acked ({fmt_kbps(record['acked_bytes'] * 8e-3 / secs)}"
                f" goodput), {record['retransmissions']} retransmitted"
            )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = Session.load()
        dst = session.address(args.dst)
        cfg = config(args, session.algo)
    except (CommandError, ValueError) as exc:
        return fail(PROG, str(exc))
    src = local_address(dst, args.port)
    me = session.name_of(src)
    label = f"{me} -> {session.name_of(dst)}"
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    try:
        sock.connect((dst, args.port))
    except OSError as exc:
        sock.close()
        return fail(PROG, f"cannot send to {dst}:{args.port}: {exc.strerror}")
    sock.setblocking(False)
    local = sock.getsockname()
    flow_id = args.name or f"{local[0]}:{local[1]}->{dst}:{args.port}"
    log = TeeLog(str(log_path(session, me, "send")), label=label, quiet=args.quiet)
    stop = StopFlag().install()
    say(f"{label}: {cfg.mode} flow, asking {fmt_kbps(cfg.desired_rate_kbps)}; log {log.path}")
    with registered(session, f"{PROG} {' '.join(argv or sys.argv[1:])}"):
        try:
            log.write(
                {"type": "agent", "agent": "fg-send", "flow": flow_id, "wall_time": time.time()}
            )
            final = run(SenderCore(cfg, flow_id=flow_id), sock, log, 100, stop)
        finally:
            log.close()
            sock.close()
    if stop.stopped:
        return 130
    return 0 if final.get("outcome") == "completed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
