"""The UDP sender agent: a :class:`~fairgate_hosts.sender.SenderCore` on a socket and a clock.

``python -m fairgate_hosts.sender --dst 10.0.0.2 --mode qfcp --size 10M --log run.jsonl``
"""

from __future__ import annotations

import argparse
import errno
import socket
import time
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us, parse_size, wait_until
from fairgate_hosts.sender import Finished, Mode, SenderConfig, SenderCore, Transmit
from fairgate_hosts.wire import RATE_UNLIMITED
from fairgate_p4 import generated as g


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.sender",
        description="Paced UDP sender carrying the FairGate rate header. Rates are kbit/s of "
        "frames (UDP payload + 42 B of Ethernet/IPv4/UDP headers).",
    )
    p.add_argument("--dst", required=True, help="receiver IPv4 address")
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="receiver UDP port")
    p.add_argument("--bind", default="0.0.0.0", help="local address to send from")
    p.add_argument("--sport", type=int, default=0, help="local UDP port (0: any)")
    p.add_argument(
        "--mode",
        choices=[m.value for m in Mode if m is not Mode.CM],
        default="qfcp",
        help="rate control (cm mode: see fairgate_hosts.apps)",
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--size", type=parse_size, help="flow size in bytes (10k, 5M, ...)")
    what.add_argument("--duration", type=float, help="send for this many seconds")
    p.add_argument("--rate", type=int, default=1000, help="fixed mode rate, kbit/s")
    p.add_argument(
        "--desired-rate",
        type=int,
        default=RATE_UNLIMITED,
        help="requested rate written in data headers, kbit/s (default: unlimited)",
    )
    p.add_argument(
        "--initial-rate", type=int, default=1000, help="rate before the first feedback, kbit/s"
    )
    p.add_argument("--min-rate", type=int, default=8, help="floor for feedback, kbit/s")
    p.add_argument("--max-rate", type=int, default=1_000_000, help="cap for feedback, kbit/s")
    p.add_argument(
        "--packet-bytes",
        type=int,
        default=1200,
        help="UDP payload per packet, rate header included",
    )
    p.add_argument("--init-cwnd", type=float, default=4.0, help="packets before feedback")
    p.add_argument("--min-rto-ms", type=float, default=200.0, help="minimum RTO, ms")
    p.add_argument(
        "--give-up",
        type=float,
        default=10.0,
        help="abort after this many seconds without ack progress",
    )
    p.add_argument("--flow-id", default=None, help="label of the flow in the log")
    p.add_argument("--log", default="-", help="JSONL log file ('-' = stdout)")
    p.add_argument("--log-interval", type=float, default=0.1, help="seconds between samples")
    p.add_argument(
        "--spin-us",
        type=int,
        default=150,
        help="busy-wait this long before each deadline (sleep before that)",
    )
    return p


def config_from_args(a: argparse.Namespace) -> SenderConfig:
    return SenderConfig(
        mode=Mode(a.mode),
        packet_bytes=a.packet_bytes,
        flow_bytes=a.size,
        duration_us=None if a.duration is None else int(a.duration * 1e6),
        desired_rate_kbps=a.desired_rate,
        initial_rate_kbps=a.initial_rate,
        fixed_rate_kbps=a.rate,
        min_rate_kbps=a.min_rate,
        max_rate_kbps=a.max_rate,
        init_cwnd=a.init_cwnd,
        min_rto_us=int(a.min_rto_ms * 1000),
        give_up_us=int(a.give_up * 1e6),
        log_interval_us=int(a.log_interval * 1e6),
    )


def drain_socket(sock: socket.socket, core: SenderCore) -> None:
    while True:
        try:
            data = sock.recv(65535)
        except BlockingIOError:
            return
        except OSError:  # e.g. ICMP port unreachable on a connected socket
            continue
        core.on_datagram(data, monotonic_us())


def run(
    core: SenderCore, sock: socket.socket, log: JsonlLog, spin_us: int, stop: StopFlag | None = None
) -> dict[str, Any]:
    """Drive ``core`` until it finishes; returns its final log record."""
    final: dict[str, Any] = {}
    send_errors = 0
    while True:
        drain_socket(sock, core)
        now = monotonic_us()
        act = core.abort(now, "interrupted") if stop and stop.stopped else core.poll(now)
        for rec in core.drain_log():
            log.write(rec)
            if rec["type"] == "done":
                final = rec
        if isinstance(act, Transmit):
            try:
                sock.send(act.data)
            except OSError as exc:  # ENOBUFS etc.: the packet is lost, the core recovers
                send_errors += 1
                if exc.errno not in (errno.ENOBUFS, errno.EAGAIN, errno.ECONNREFUSED):
                    raise
            continue
        if isinstance(act, Finished):
            final["send_errors"] = send_errors
            return final
        deadline = act.until_us if act.until_us is not None else now + 100_000
        wait_until(sock, deadline, spin_us)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cfg = config_from_args(args)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    sock.bind((args.bind, args.sport))
    sock.connect((args.dst, args.port))
    sock.setblocking(False)
    local = sock.getsockname()
    flow_id = args.flow_id or f"{local[0]}:{local[1]}->{args.dst}:{args.port}"
    core = SenderCore(cfg, flow_id=flow_id)
    log = JsonlLog(args.log)
    stop = StopFlag().install()
    try:
        log.write(
            {
                "type": "agent",
                "agent": "sender",
                "flow": flow_id,
                "wall_time": time.time(),
                "args": vars(args),
            }
        )
        final = run(core, sock, log, args.spin_us, stop)
    finally:
        log.close()
        sock.close()
    return 0 if final.get("outcome") == "completed" else 1
