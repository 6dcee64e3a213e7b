"""TCP over the CM: the kernel's TCP paces itself at the CM's rate via SO_MAX_PACING_RATE.

Linux honours SO_MAX_PACING_RATE (bytes/s) with TCP's internal pacing even without the fq
qdisc (setting the option switches internal pacing on). The CM flow's ``change_rate``
callback calls :func:`set_pacing_rate`.

``python -m fairgate_hosts.apps.tcp_cm --dst 10.0.0.2 --rate 5000 --duration 10`` uploads
to a sink (``python -m fairgate_hosts.traffic.server``) over kernel TCP paced at a fixed
rate; with ``--cm`` the rate comes from an in-process CM (probing off) fed from TCP_INFO
every ``--feedback-ms``: bytes newly acked, retransmissions (loss) and the RTT sample,
i.e. TCP reports to the CM as in the paper's TCP/CM. Goodput = ``tcpi_bytes_acked`` over
time (payload bytes; pacing counts payload bytes, so goodput ~= the set rate).

Two guards: the RTT reported to the CM is at least the poll period (the CM cannot see
feedback faster than it polls, and its aging halves the rate every minimum RTT without
feedback: with a 50 us loopback RTT and 10 ms polls it would collapse), and the pacing
rate never goes below ``--min-rate`` (the kernel schedules the next segment at
len/rate when it sends one, and a later rate increase does not pull that time in: one 64 kB
loopback segment at 150 B/s stalls the flow for minutes).
"""

from __future__ import annotations

import argparse
import contextlib
import selectors
import socket
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us
from fairgate_hosts.cm.core import ChangeRate, CMConfig, CongestionManager
from fairgate_hosts.kernel_tcp import add_mss_argument, limit_segment_size
from fairgate_hosts.traffic.records import tcp_info

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
UNLIMITED = (1 << 32) - 1  # ~0U: no pacing limit (the option is a u32 on 32-bit fields)


def set_pacing_rate(sock: socket.socket, rate_Bps: float) -> int:
    """Cap ``sock``'s pacing rate to ``rate_Bps`` (at least 1 B/s); returns what was set."""
    value = max(1, min(UNLIMITED - 1, int(rate_Bps)))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, value)
    return value


def get_pacing_rate(sock: socket.socket) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE)


CHUNK = 64 * 1024
TCP_CA_RECOVERY = 3
TCP_CA_LOSS = 4


@dataclass
class PacedFlow:
    idx: int
    sock: socket.socket
    fid: int | None = None
    pacing_Bps: int = 0
    acked: int = 0
    sent: int = 0
    retrans: int = 0
    acked_at_skip: int | None = None
    last_sample_acked: int = 0
    rtt_us: int = 0
    ca_state: int = 0  # tcpi_ca_state at the last poll
    recoveries: int = 0  # polls that found the kernel newly in fast recovery
    rtos: int = 0  # polls that found it newly in RTO recovery (TCP_CA_Loss)

    def track_state(self, ca_state: int) -> None:
        """Count loss episodes from successive polls of ``tcpi_ca_state``: an entry into
        Recovery (fast retransmit) or into Loss (a retransmission timeout, also from
        Recovery). Several timeouts in one Loss episode (the back-off) count once, as
        does an episode shorter than the poll period when the poll misses it."""
        if ca_state == TCP_CA_LOSS and self.ca_state != TCP_CA_LOSS:
            self.rtos += 1
        elif ca_state == TCP_CA_RECOVERY and self.ca_state not in (TCP_CA_RECOVERY, TCP_CA_LOSS):
            self.recoveries += 1
        self.ca_state = ca_state


@dataclass
class TcpOverCM:
    """N kernel TCP uploads to ``dst``: fixed pacing rate or driven by an in-process CM."""

    dst: str
    port: int
    flows_n: int = 1
    rate_Bps: float | None = None  # fixed mode
    cm: CongestionManager | None = None  # CM mode
    feedback_us: int = 10_000
    min_rate_Bps: float = 12_500.0
    sport: int | None = None  # flow i's source port is sport + i (None: the kernel's)
    mss: int | None = None  # data bytes per segment (None: the kernel's, from the path)
    flows: list[PacedFlow] = field(default_factory=list)
    sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)
    _payload: memoryview = field(default_factory=lambda: memoryview(bytes(CHUNK)))

    def connect(self, timeout_s: float = 5.0) -> None:
        now = monotonic_us()
        for i in range(self.flows_n):
            sock = self._open(i, timeout_s)
            flow = PacedFlow(i, sock)
            if self.cm is not None:
                flow.fid = self.cm.open("", self.dst, now_us=now)
            self.flows.append(flow)
            self._set(flow, self.rate_Bps if self.cm is None else self._share(flow))
            sock.setblocking(False)
            self.sel.register(sock, selectors.EVENT_WRITE, flow)
        if self.cm is not None:  # shares changed as flows joined
            for flow in self.flows:
                self._set(flow, self._share(flow))

    def _open(self, i: int, timeout_s: float) -> socket.socket:
        """Flow ``i``'s connection, from source port ``sport + i`` when given (a fixed
        5-tuple: the same flows in every run; SO_REUSEADDR lets it reuse a port whose
        previous connection is in TIME_WAIT), with segments of ``mss`` when given."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            if self.mss is not None:
                limit_segment_size(sock, self.mss)
            if self.sport is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("0.0.0.0", self.sport + i))
            sock.settimeout(timeout_s)
            sock.connect((self.dst, self.port))
        except (OSError, ValueError):
            sock.close()
            raise
        return sock

    def _share(self, flow: PacedFlow) -> float:
        assert self.cm is not None and flow.fid is not None
        return float(self.cm.query(flow.fid)["rate_Bps"])

    def _set(self, flow: PacedFlow, rate_Bps: float | None) -> None:
        if rate_Bps is not None and (self.cm is not None or rate_Bps > 0):
            flow.pacing_Bps = set_pacing_rate(flow.sock, max(self.min_rate_Bps, rate_Bps))

    def feedback(self, now_us: int) -> None:
        """Read TCP_INFO of every flow; in CM mode report it and apply rate changes."""
        for flow in self.flows:
            info = tcp_info(flow.sock)
            if info is None or info.bytes_acked is None:
                continue
            acked, sent = info.bytes_acked, info.bytes_sent or 0
            d_acked = acked - flow.acked
            loss = info.total_retrans > flow.retrans
            flow.acked, flow.sent, flow.retrans = acked, sent, info.total_retrans
            flow.rtt_us = info.rtt_us
            flow.track_state(info.ca_state)
            if self.cm is None or flow.fid is None:
                continue
            # TCP tells the CM what it sent when the acks for it arrive (not when it sends):
            # with sparse acks (paced 64 kB loopback segments) the CM's aging would otherwise
            # halve the rate every poll. TCP's own RTO covers silence; it is reported as
            # persistent congestion (ca_state Loss).
            events = []
            if d_acked > 0 or loss:
                rtt = max(info.rtt_us, self.feedback_us) if info.rtt_us > 0 else None
                if d_acked > 0:
                    events += self.cm.notify(flow.fid, d_acked, now_us)
                persistent = info.ca_state == TCP_CA_LOSS
                events += self.cm.update(
                    flow.fid, d_acked, loss, rtt, now_us, persistent=persistent and loss
                )
            self._apply(events)
        if self.cm is not None:
            self._apply(self.cm.tick(now_us))

    def _apply(self, events: list[Any]) -> None:
        by_fid = {f.fid: f for f in self.flows}
        for ev in events:
            if isinstance(ev, ChangeRate) and ev.flow in by_fid:
                self._set(by_fid[ev.flow], ev.rate_Bps)

    def pump(self, timeout_s: float) -> None:
        for key, _ in self.sel.select(timeout_s):
            sock: socket.socket = key.fileobj  # type: ignore[assignment]
            with contextlib.suppress(BlockingIOError, InterruptedError):
                sock.send(self._payload)

    def close(self) -> None:
        for flow in self.flows:
            self.sel.unregister(flow.sock)
            flow.sock.close()
            if self.cm is not None and flow.fid is not None:
                self.cm.close(flow.fid)
        self.sel.close()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.apps.tcp_cm",
        description="TCP over the CM: kernel TCP uploads paced with SO_MAX_PACING_RATE, at a "
        "fixed --rate or at the rate of an in-process Congestion Manager (--cm) fed from "
        "TCP_INFO. Sink: python -m fairgate_hosts.traffic.server.",
    )
    p.add_argument("--dst", required=True, help="server IPv4 address")
    p.add_argument("--port", type=int, default=5001, help="server TCP port")
    p.add_argument("--flows", type=int, default=1, help="parallel connections (one macroflow)")
    p.add_argument(
        "--sport",
        type=int,
        default=None,
        help="source port of the first connection (the i-th: sport + i; default: the kernel's)",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--rate",
        type=float,
        help="fixed pacing rate per flow, kbit/s (0: no pacing option, plain kernel TCP)",
    )
    mode.add_argument("--cm", action="store_true", help="pacing rate from the CM")
    add_mss_argument(p)
    p.add_argument("--initial-rate", type=float, default=1000.0, help="CM initial rate, kbit/s")
    p.add_argument("--max-rate", type=float, default=50_000.0, help="CM rate cap, kbit/s")
    p.add_argument("--min-rate", type=float, default=100.0, help="pacing floor, kbit/s")
    p.add_argument("--feedback-ms", type=float, default=10.0, help="TCP_INFO poll period")
    p.add_argument("--duration", type=float, default=10.0, help="seconds")
    p.add_argument("--skip", type=float, default=1.0, help="steady-state goodput after S s")
    p.add_argument("--interval", type=float, default=0.5, help="sample interval, s")
    p.add_argument("--log", default="-", help="JSONL output (default stdout)")
    return p


def run(args: argparse.Namespace, log: JsonlLog, stop: StopFlag) -> dict[str, Any]:
    cm = None
    if args.cm:
        cm = CongestionManager(
            CMConfig(
                mss=args.mss or 1448,
                initial_rate_Bps=args.initial_rate * 125.0,
                max_rate_Bps=args.max_rate * 125.0,
                probing=False,
            )
        )
    app = TcpOverCM(
        args.dst,
        args.port,
        args.flows,
        rate_Bps=None if args.cm else args.rate * 125.0,
        cm=cm,
        feedback_us=int(args.feedback_ms * 1000),
        min_rate_Bps=args.min_rate * 125.0,
        sport=args.sport,
        mss=args.mss,
    )
    app.connect()
    start = monotonic_us()
    end = start + int(args.duration * 1e6)
    skip_at = start + int(args.skip * 1e6)
    next_fb = start
    next_sample = start + int(args.interval * 1e6)
    try:
        while not stop.stopped:
            now = monotonic_us()
            if now >= end:
                break
            if now >= next_fb:
                app.feedback(now)
                next_fb = now + app.feedback_us
                if now >= skip_at:
                    for f in app.flows:
                        if f.acked_at_skip is None:
                            f.acked_at_skip = f.acked
                            skip_at = now
            if now >= next_sample:
                log.write(
                    {
                        "type": "sample",
                        "t_s": round((now - start) / 1e6, 3),
                        "flows": [
                            {
                                "flow": f.idx,
                                "pacing_kbps": round(f.pacing_Bps * 8 / 1000, 1),
                                "goodput_kbps": round(
                                    (f.acked - f.last_sample_acked) * 8 / args.interval / 1000, 1
                                ),
                                "rtt_us": f.rtt_us,
                                "retrans": f.retrans,
                                "acked_bytes": f.acked,
                                "ca_state": f.ca_state,
                                "recoveries": f.recoveries,
                                "rtos": f.rtos,
                            }
                            for f in app.flows
                        ],
                    }
                )
                for f in app.flows:
                    f.last_sample_acked = f.acked
                next_sample += int(args.interval * 1e6)
            app.pump(max(0.0, (min(next_fb, next_sample, end) - monotonic_us()) / 1e6))
        now = monotonic_us()
        app.feedback(now)
        secs = (now - start) / 1e6
        steady = max(1e-6, (now - skip_at) / 1e6)
        per = [
            {
                "flow": f.idx,
                "pacing_kbps": round(f.pacing_Bps * 8 / 1000, 1),
                "acked_bytes": f.acked,
                "goodput_kbps": round(f.acked * 8 / secs / 1000, 2),
                "steady_goodput_kbps": (
                    round((f.acked - f.acked_at_skip) * 8 / steady / 1000, 2)
                    if f.acked_at_skip is not None
                    else None
                ),
                "retrans": f.retrans,
                "recoveries": f.recoveries,
                "rtos": f.rtos,
            }
            for f in app.flows
        ]
        return {"type": "done", "t_s": round(secs, 3), "steady_s": round(steady, 3), "flows": per}
    finally:
        app.close()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    log = JsonlLog(args.log)
    log.write({"type": "agent", "agent": "tcp_cm", "wall_time": time.time(), "args": vars(args)})
    stop = StopFlag().install()
    try:
        log.write(run(args, log, stop))
    except OSError as exc:
        print(f"tcp_cm: {exc}", file=sys.stderr)
        return 1
    finally:
        log.close()
    return 1 if stop.stopped else 0


if __name__ == "__main__":
    raise SystemExit(main())
