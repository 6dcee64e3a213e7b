"""The UDP receiver agent: a :class:`~fairgate_hosts.receiver.ReceiverCore` on a socket.

``python -m fairgate_hosts.receiver --ack-delay-ms 20 --log rx.jsonl``
"""

from __future__ import annotations

import argparse
import contextlib
import heapq
import socket
import time
from collections.abc import Hashable
from dataclasses import dataclass, field

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us, wait_until
from fairgate_hosts.receiver import ReceiverCore
from fairgate_p4 import generated as g


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.receiver",
        description="FairGate receiver: echoes rate headers into acks, answers CM probes, "
        "logs goodput per flow (JSONL).",
    )
    p.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="UDP port to listen on")
    p.add_argument(
        "--ack-delay-ms",
        type=float,
        default=0.0,
        help="hold every ack this long (emulated propagation delay, ms)",
    )
    p.add_argument(
        "--drop-every",
        type=int,
        default=0,
        metavar="N",
        help="emulated loss: discard every N-th data packet (0: none)",
    )
    p.add_argument(
        "--duration",
        type=float,
        default=None,
        help="exit after this many seconds (default: until SIGINT/SIGTERM)",
    )
    p.add_argument(
        "--flow-idle",
        type=float,
        default=5.0,
        help="a flow idle this many seconds is closed and summarised",
    )
    p.add_argument(
        "--stamp",
        type=parse_schedule,
        default=[],
        metavar="T:KBPS,...",
        help="emulate a switch: min-stamp data rates with KBPS from second T on, "
        "e.g. '0:5000,3:10000' (none: echo what arrives)",
    )
    p.add_argument("--log", default="-", help="JSONL log file ('-' = stdout)")
    p.add_argument("--log-interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument(
        "--spin-us", type=int, default=100, help="busy-wait this long before a delayed ack is due"
    )
    return p


def parse_schedule(text: str) -> list[tuple[float, int]]:
    """'0:5000,3:10000' -> [(0.0, 5000), (3.0, 10000)] (seconds, kbit/s), sorted."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        t, _, rate = part.partition(":")
        if not rate:
            raise argparse.ArgumentTypeError(f"expected T:KBPS, got {part!r}")
        out.append((float(t), int(rate)))
    return sorted(out)


@dataclass
class AckQueue:
    """Acks waiting for their send time."""

    heap: list[tuple[int, int, bytes, Hashable]] = field(default_factory=list)
    n: int = 0

    def push(self, at_us: int, data: bytes, peer: Hashable) -> None:
        self.n += 1
        heapq.heappush(self.heap, (at_us, self.n, data, peer))

    def next_time(self) -> int | None:
        return self.heap[0][0] if self.heap else None

    def pop_due(self, now_us: int) -> list[tuple[bytes, Hashable]]:
        out = []
        while self.heap and self.heap[0][0] <= now_us:
            _at, _n, data, peer = heapq.heappop(self.heap)
            out.append((data, peer))
        return out


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    core = ReceiverCore(
        ack_delay_us=int(args.ack_delay_ms * 1000),
        flow_idle_us=int(args.flow_idle * 1e6),
        drop_every=args.drop_every,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind((args.bind, args.port))
    sock.setblocking(False)
    log = JsonlLog(args.log)
    stop = StopFlag().install()
    queue = AckQueue()
    schedule = list(args.stamp)
    start = monotonic_us()
    end = None if args.duration is None else start + int(args.duration * 1e6)
    interval = int(args.log_interval * 1e6)
    next_log = start + interval
    last_bytes: dict[Hashable, int] = {}
    log.write({"type": "agent", "agent": "receiver", "wall_time": time.time(), "args": vars(args)})
    log.flush()
    try:
        while not stop.stopped:
            now = monotonic_us()
            if end is not None and now >= end:
                break
            while schedule and now - start >= schedule[0][0] * 1e6:
                core.stamp_kbps = schedule.pop(0)[1]
                log.write({"type": "stamp", "t_us": now - start, "kbps": core.stamp_kbps})
            while True:
                try:
                    data, peer = sock.recvfrom(65535)
                except BlockingIOError:
                    break
                except OSError:
                    continue
                for act in core.on_datagram(data, monotonic_us(), peer):
                    queue.push(act.at_us, act.data, act.peer)
            now = monotonic_us()
            for data, peer in queue.pop_due(now):
                with contextlib.suppress(OSError):
                    sock.sendto(data, peer)  # type: ignore[arg-type]
            if now >= next_log:
                for rec in core.expire(now):
                    log.write({"type": "flow_done", "t_us": now - start, **rec})
                for peer, flow in core.flows.items():
                    prev = last_bytes.get(peer, 0)
                    log.write(
                        {
                            "type": "rx",
                            "t_us": now - start,
                            **flow.record(peer),
                            "interval_kbps": round(
                                (flow.unique_bytes - prev) * 8000.0 / interval, 3
                            ),
                        }
                    )
                    last_bytes[peer] = flow.unique_bytes
                log.flush()
                next_log += interval
            wake = [next_log]
            if end is not None:
                wake.append(end)
            nt = queue.next_time()
            if nt is not None:
                wake.append(nt)
            if schedule:
                wake.append(start + int(schedule[0][0] * 1e6))
            deadline = min(wake)
            spin = args.spin_us if nt is not None and nt == deadline else 0
            wait_until(sock, deadline, spin)
    finally:
        now = monotonic_us()
        for peer, flow in list(core.flows.items()):
            log.write({"type": "flow_done", "t_us": now - start, **flow.record(peer)})
        log.write(
            {
                "type": "receiver_done",
                "t_us": now - start,
                "malformed": core.stats.malformed,
                "ignored": core.stats.ignored,
                "acks": core.stats.acks,
                "probe_acks": core.stats.probe_acks,
                "dropped": core.stats.dropped,
            }
        )
        log.close()
        sock.close()
    return 0
