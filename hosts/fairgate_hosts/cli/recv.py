"""fg-recv: the receiver agent (echoes rate headers into acks) with a line a second per flow.

The lab already runs a receiver on every host (UDP 7471, acks held by the lab's ack delay);
there ``h3 fg-recv`` shows that receiver's flows from its log instead of starting a second
one. With ``--port`` (or outside a lab) it starts its own receiver agent.
"""

from __future__ import annotations

import errno
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_hosts.agentio import JsonlTail, StopFlag
from fairgate_hosts.cli.common import (
    CommandError,
    OneLineParser,
    Session,
    fail,
    fmt_kbps,
    log_path,
    parse_seconds,
    registered,
    say,
)
from fairgate_hosts.udp_receiver import main as receiver_main
from fairgate_p4 import generated as g

PROG = "fg-recv"


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog=PROG,
        description="Receive rate-header flows and print each flow's goodput every second. "
        "In a lab the default port already has the lab's receiver: fg-recv then follows it.",
    )
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="UDP port (default 7471)")
    p.add_argument(
        "--delay",
        type=float,
        default=None,
        metavar="MS",
        help="hold acks this long, emulated propagation delay (default: the lab's)",
    )
    p.add_argument("--for", dest="seconds", type=parse_seconds, help="stop after S seconds")
    return p


@dataclass
class RxPrinter:
    """Turns the receiver's ``rx`` records into a line per flow per ``every_s``."""

    session: Session
    me: str
    every_s: float = 1.0
    last: dict[str, tuple[float, int, int]] = field(default_factory=dict)

    def lines(self, records: list[dict[str, Any]]) -> list[str]:
        out = []
        for r in records:
            if r.get("type") != "rx":
                continue
            peer, t = r["peer"], r["t_us"] / 1e6
            prev = self.last.get(peer)
            if prev is None:
                self.last[peer] = (t, r["unique_bytes"], r["packets"])
                continue
            if t - prev[0] < self.every_s:
                continue
            kbps = (r["unique_bytes"] - prev[1]) * 8e-3 / (t - prev[0])
            pps = (r["packets"] - prev[2]) / (t - prev[0])
            who = self.session.name_of(peer.rsplit(":", 1)[0])
            out.append(
                f"{self.me} <- {who} ({peer})  t={t:5.1f}s  {fmt_kbps(kbps)} goodput  "
                f"{pps:.0f} pkt/s  dup {r['duplicates']}  congested {r['congested']}"
            )
            self.last[peer] = (t, r["unique_bytes"], r["packets"])
        return out


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("0.0.0.0", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return False
            raise
    return True


def my_name(session: Session) -> str:
    for name, ip in session.hosts.items():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.bind((ip, 0))
            except OSError:
                continue
            return name
    return socket.gethostname()


def follow(path: Path, printer: RxPrinter, seconds: float | None, stop: StopFlag) -> None:
    tail = JsonlTail(path)
    tail.new()  # start from now
    end = None if seconds is None else time.monotonic() + seconds
    while not stop.stopped and (end is None or time.monotonic() < end):
        for line in printer.lines(tail.new()):
            say(line)
        time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = Session.load()
    except CommandError as exc:
        return fail(PROG, str(exc))
    me = my_name(session)
    printer = RxPrinter(session, me)
    stop = StopFlag().install()
    with registered(session, f"{PROG} port {args.port}"):
        if not port_free(args.port):
            lab_log = None if session.run_dir is None else session.run_dir / f"hosts/rx-{me}.jsonl"
            if lab_log is None or not lab_log.exists():
                return fail(PROG, f"UDP port {args.port} is taken on {me}; try --port")
            say(f"{me}: the lab's receiver listens on UDP {args.port}; following {lab_log}")
            follow(lab_log, printer, args.seconds, stop)
            return 0
        log = log_path(session, me, "recv")
        delay = session.ack_delay_ms if args.delay is None else args.delay
        say(f"{me}: receiving on UDP {args.port}, acks held {delay:g} ms; log {log}")
        done = threading.Event()
        printer_thread = threading.Thread(
            target=lambda: _print_while(log, printer, done), daemon=True
        )
        printer_thread.start()
        argv2 = ["--port", str(args.port), "--ack-delay-ms", str(delay), "--log", str(log)]
        argv2 += ["--log-interval", "0.2"]
        if args.seconds is not None:
            argv2 += ["--duration", str(args.seconds)]
        try:
            return receiver_main(argv2)
        finally:
            done.set()
            printer_thread.join(2.0)


def _print_while(path: Path, printer: RxPrinter, done: threading.Event) -> None:
    tail = JsonlTail(path)
    while not done.wait(0.2):
        for line in printer.lines(tail.new()):
            say(line)


if __name__ == "__main__":
    raise SystemExit(main())
