"""TCP/CM (paper 001, section 3.1): kernel TCP connections whose every new segment goes out
when the Congestion Manager grants it.

The application (this process) holds the data; each connection is a CM flow with an
outstanding ``cm_request``. A grant (``app_notify``, one MSS) is written to the socket at
once (``TCP_NODELAY``) and reported with ``cm_notify``; nothing else is written, and
``TCP_NOTSENT_LOWAT`` of one MSS makes the kernel refuse to queue more than one unsent
segment, so it cannot run ahead of the CM. Feedback: ``TCP_INFO`` is polled every
``--feedback-ms`` and reported with ``cm_update`` (bytes newly acked, none while the
kernel is in fast recovery, where SACKed deliveries still count as feedback, but counted
after a timeout, where NewReno's slow start grows on them too; one loss per
recovery episode, when the kernel enters fast recovery, not for a tail loss probe; its
smoothed RTT; a retransmission timeout as persistent congestion). The kernel retransmits
by itself, at once; the poll that sees them charges their bytes to the CM (``charge``: the
macroflow's credit pays for them, so the next grants wait), as the paper's TCP/CM sends
retransmissions on the CM's grants too.
Probing is off: TCP's acks are the feedback, as in the paper.

The kernel's congestion control still runs underneath; TCP/CM needs it never to be the
binding limit. The lab gives TCP/CM hosts a huge initial window (route ``initcwnd``
2^30: each loss recovery still halves it, so it takes 30 recoveries to come down to a
few segments) and ``tcp_slow_start_after_idle = 0`` so that an application-limited window
is never decayed; every poll is also a trace sample (``kernel_tcp.classify``): data
waiting while the kernel's window is full counts as *cwnd-bound*, apart for samples in
loss recovery, where the kernel's retransmissions go first. The log's ``kernel`` lines
and the ``done`` line's ``binding`` say whether that ever happened.

``python -m fairgate_hosts.apps.tcpcm --dst 10.0.0.2 --flows 4 --duration 20`` uploads to
a sink (``python -m fairgate_hosts.traffic.server``).
"""

from __future__ import annotations

import argparse
import selectors
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us
from fairgate_hosts.apps.cm_args import add_cm_arguments, cm_config
from fairgate_hosts.cm.core import AppNotify, CongestionManager, Event
from fairgate_hosts.kernel_cc import current_default, resolve_kernel_cc
from fairgate_hosts.kernel_tcp import (
    TCP_CA_LOSS,
    TCP_CA_RECOVERY,
    TCP_NOTSENT_LOWAT,
    BindingTrace,
    KernelInfo,
    kernel_info,
    limit_segment_size,
)

BIG_REQUEST = 1 << 40
_PAYLOAD = memoryview(bytes(1 << 16))


@dataclass
class CmConn:
    idx: int
    sock: socket.socket
    fid: int
    backlog: int = 0  # granted bytes the socket has not accepted yet
    written: int = 0
    acked: int = 0
    total_retrans: int = 0
    bytes_retrans: int = 0  # retransmitted bytes charged to the CM
    in_rto: bool = False
    recovering: bool = False
    delivered: int = 0
    rtt_us: int = 0
    last_info: KernelInfo | None = None
    trace: BindingTrace = field(default_factory=BindingTrace)
    interval: BindingTrace = field(default_factory=BindingTrace)
    last_sample_acked: int = 0
    losses_reported: int = 0
    timeouts_reported: int = 0


@dataclass
class TcpCm:
    """``flows_n`` kernel TCP uploads to ``dst:port``, one CM macroflow, grant-driven."""

    dst: str
    port: int
    cm: CongestionManager
    flows_n: int = 1
    weights: list[float] | None = None
    feedback_us: int = 5_000
    kernel_cc: str | None = None  # the sockets' TCP_CONGESTION (None: the host's default)
    # Where the CM's events go when this is not the CM's only user (apps.audio shares its
    # CM with TCP/CM connections): that host hands the TCP grants back to ``on_grant``.
    route: Callable[[list[Event]], None] | None = None
    conns: list[CmConn] = field(default_factory=list)
    sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)

    def join(self, timeout_s: float = 5.0) -> CmConn:
        """Connect the next connection, open its CM flow and request unlimited data."""
        i = len(self.conns)
        mss = self.cm.cfg.mss
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if self.kernel_cc is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, self.kernel_cc.encode())
        sock.settimeout(timeout_s)
        try:
            limit_segment_size(sock, mss)  # the CM's grants are whole segments of mss
            sock.connect((self.dst, self.port))
        except OSError:
            sock.close()
            raise
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, mss)
        sock.setblocking(False)
        weight = 1.0 if self.weights is None else self.weights[i]
        fid = self.cm.open("", self.dst, weight, now_us=monotonic_us(), probed=False)
        conn = CmConn(i, sock, fid)
        self.conns.append(conn)
        self.handle(self.cm.request(conn.fid, BIG_REQUEST, monotonic_us()))
        return conn

    def connect(self, timeout_s: float = 5.0) -> None:
        """Every connection at once."""
        while len(self.conns) < self.flows_n:
            self.join(timeout_s)

    # ------------------------------------------------------------------ grants
    def on_grant(self, fid: int, nbytes: int, now_us: int) -> list[Event]:
        """One grant of a shared CM: write it; returns the events of its ``cm_notify``."""
        conn = next((c for c in self.conns if c.fid == fid), None)
        if conn is None:
            return []
        conn.backlog += nbytes
        n = self._write(conn)
        return self.cm.notify(fid, n, now_us) if n else []

    def owns(self, fid: int) -> bool:
        return any(c.fid == fid for c in self.conns)

    def handle(self, events: list[Event]) -> None:
        """Write every grant; a write's ``cm_notify`` may grant again (loop, no recursion)."""
        if self.route is not None:
            self.route(events)
            return
        by_fid = {c.fid: c for c in self.conns}
        todo = list(events)
        while todo:
            now = monotonic_us()
            for ev in todo:
                if isinstance(ev, AppNotify) and ev.flow in by_fid:
                    by_fid[ev.flow].backlog += ev.nbytes
            todo = []
            for conn in self.conns:
                n = self._write(conn)
                if n:
                    todo += self.cm.notify(conn.fid, n, now)

    def flush(self, now_us: int) -> list[Event]:
        """Shared CM: write what sockets refused before; returns the notifies' events."""
        out: list[Event] = []
        for conn in self.conns:
            if conn.backlog > 0:
                n = self._write(conn)
                if n:
                    out += self.cm.notify(conn.fid, n, now_us)
        return out

    def _write(self, conn: CmConn) -> int:
        sent = 0
        while conn.backlog > 0:
            try:
                n = conn.sock.send(_PAYLOAD[: min(conn.backlog, len(_PAYLOAD))])
            except (BlockingIOError, InterruptedError):
                break
            if n <= 0:
                break
            conn.backlog -= n
            conn.written += n
            sent += n
        self._watch(conn)
        return sent

    def _watch(self, conn: CmConn) -> None:
        """Wait for writability only while the socket holds back granted bytes."""
        registered = conn.sock in self.sel.get_map()
        if conn.backlog > 0 and not registered:
            self.sel.register(conn.sock, selectors.EVENT_WRITE, conn)
        elif conn.backlog == 0 and registered:
            self.sel.unregister(conn.sock)

    # ------------------------------------------------------------------ feedback
    def feedback(self, now_us: int) -> None:
        """Poll TCP_INFO: trace the kernel's window and report acks and losses to the CM."""
        events: list[Event] = []
        for conn in self.conns:
            info = kernel_info(conn.sock)
            if info is None:
                continue
            conn.last_info = info
            conn.trace.add(info, conn.backlog)
            conn.interval.add(info, conn.backlog)
            d_acked = info.bytes_acked - conn.acked
            d_delivered = info.delivered - conn.delivered
            # One loss per recovery episode, as NewReno reduces once per episode: the
            # poll that finds the kernel newly in fast recovery (or in RTO recovery). A
            # tail loss probe is not a loss (the kernel stays Open).
            recovering = info.ca_state >= TCP_CA_RECOVERY
            loss = recovering and not conn.recovering
            rto = info.ca_state == TCP_CA_LOSS
            persistent = rto and not conn.in_rto
            d_retrans = max(0, info.bytes_retrans - conn.bytes_retrans)
            conn.acked, conn.total_retrans, conn.in_rto = info.bytes_acked, info.total_retrans, rto
            conn.bytes_retrans = info.bytes_retrans
            if d_retrans:  # sent without a grant: the CM's rate pays for them
                events += self.cm.charge(conn.fid, d_retrans, now_us)
            conn.delivered, conn.recovering = info.delivered, recovering
            conn.rtt_us = info.rtt_us
            # SACKs during fast recovery deliver segments without advancing the cumulative
            # ack: they are feedback (no aging), without growth (NewReno's window does not
            # grow in fast recovery). After a timeout (TCP_CA_LOSS) the acks of the resent
            # data count: NewReno slow-starts on them, the paper's CM too ("the rate drops
            # to a small value forcing slow start"), and so does the simulator's TCP/CM.
            if d_acked > 0 or d_delivered > 0 or loss or persistent:
                conn.losses_reported += loss and not persistent
                conn.timeouts_reported += persistent
                rtt = info.rtt_us if info.rtt_us > 0 else None
                nrecd = 0 if info.ca_state == TCP_CA_RECOVERY else max(0, d_acked)
                events += self.cm.update(
                    conn.fid, nrecd, loss and not persistent, rtt, now_us, persistent=persistent
                )
        if self.route is None:
            events += self.cm.tick(now_us)
        self.handle(events)

    def pump(self, until_us: int) -> None:
        """Serve grants and writability until ``until_us``."""
        while True:
            now = monotonic_us()
            self.handle(self.cm.tick(now))
            if now >= until_us:
                return
            deadline = until_us
            nxt = self.cm.next_deadline(now)
            if nxt is not None:
                deadline = min(deadline, nxt)
            timeout = max(0.0, (deadline - monotonic_us()) / 1e6)
            if self.sel.get_map():
                for key, _ in self.sel.select(timeout):
                    conn: CmConn = key.data
                    n = self._write(conn)
                    if n:
                        self.handle(self.cm.notify(conn.fid, n, monotonic_us()))
            elif timeout > 0:
                time.sleep(timeout)

    def close(self) -> None:
        for conn in self.conns:
            if conn.sock in self.sel.get_map():
                self.sel.unregister(conn.sock)
            conn.sock.close()
            if conn.fid in self.cm.flows:
                self.cm.close(conn.fid)
        self.sel.close()


def kernel_line(conn: CmConn, t_s: float) -> dict[str, Any]:
    """One ``kernel`` trace line: the kernel's window against what the CM put in flight
    (last poll) and the interval's worst case."""
    i = conn.last_info
    iv = conn.interval
    return {
        "type": "kernel",
        "t_s": t_s,
        "flow": conn.idx,
        "cwnd_segs": None if i is None else i.snd_cwnd,
        "in_flight_segs": None if i is None else i.in_flight,
        "notsent_bytes": None if i is None else i.notsent,
        "ssthresh_segs": None if i is None else i.snd_ssthresh,
        "ca_state": None if i is None else i.ca_state,
        "srtt_us": None if i is None else i.rtt_us,
        "backlog_bytes": conn.backlog,
        "polls": iv.samples,
        "cwnd_bound": iv.cwnd_bound,
        "cwnd_bound_open": iv.cwnd_bound_open,
        "recovery": iv.recovery,
        "min_headroom_segs": iv.min_headroom,
        "max_in_flight_segs": iv.max_in_flight,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.apps.tcpcm",
        description="TCP/CM: kernel TCP uploads whose every segment is sent when an "
        "in-process Congestion Manager grants it (feedback from TCP_INFO). Sink: "
        "python -m fairgate_hosts.traffic.server.",
    )
    p.add_argument("--dst", required=True, help="server IPv4 address")
    p.add_argument("--port", type=int, default=5001, help="server TCP port")
    p.add_argument("--flows", type=int, default=1, help="connections (one macroflow)")
    p.add_argument("--weights", default=None, help="comma-separated weights (default all 1)")
    p.add_argument("--stagger", type=float, default=0.0, help="connection i opens at i x S s")
    add_cm_arguments(p, mss=1448, max_rate_kbps=100_000.0, probing=False)
    p.add_argument("--feedback-ms", type=float, default=5.0, help="TCP_INFO poll period")
    p.add_argument(
        "--kernel-cc",
        default="auto",
        help="the sockets' kernel congestion control: auto (fg_cm when registered, see "
        "fairgate_hosts.kernel_cc, else the host's default), or a name",
    )
    p.add_argument("--duration", type=float, default=10.0, help="seconds")
    p.add_argument("--interval", type=float, default=0.5, help="sample interval, s")
    p.add_argument("--log", default="-", help="JSONL output (default stdout)")
    return p


def _weights(args: argparse.Namespace) -> list[float] | None:
    if args.weights is None:
        return None
    try:
        ws = [float(w) for w in args.weights.split(",")]
    except ValueError:
        raise ValueError(f"--weights: numbers separated by commas, not {args.weights!r}") from None
    if len(ws) != args.flows or min(ws) <= 0:
        raise ValueError(f"--weights: {args.flows} positive numbers, got {args.weights!r}")
    return ws


def run(args: argparse.Namespace, log: JsonlLog, stop: StopFlag) -> dict[str, Any]:
    if args.flows < 1 or args.mss < 100 or args.feedback_ms <= 0:
        raise ValueError("--flows >= 1, --mss >= 100 and --feedback-ms > 0")
    cm = CongestionManager(cm_config(args, probing=False))
    kcc = resolve_kernel_cc(args.kernel_cc)
    app = TcpCm(
        args.dst, args.port, cm, args.flows, _weights(args), int(args.feedback_ms * 1000), kcc
    )
    log.write({"type": "kernel_cc", "name": kcc or current_default()})
    start = monotonic_us()
    stagger_us = int(args.stagger * 1e6)
    end = start + int(args.duration * 1e6)
    next_fb = start
    interval_us = int(args.interval * 1e6)
    next_sample = start + interval_us
    try:
        while not stop.stopped:
            now = monotonic_us()
            if now >= end:
                break
            while len(app.conns) < app.flows_n and now >= start + len(app.conns) * stagger_us:
                c = app.join()
                sport = c.sock.getsockname()[1]
                log.write({"type": "open", "role": "tcpcm", "flow": c.idx, "sport": sport})
            if now >= next_fb:
                app.feedback(now)
                next_fb = now + app.feedback_us
            if now >= next_sample:
                t_s = round((now - start) / 1e6, 3)
                sample_lines(app, log, t_s, args.interval)
                next_sample += interval_us
            nxt = min(next_fb, next_sample, end)
            if len(app.conns) < app.flows_n:
                nxt = min(nxt, start + len(app.conns) * stagger_us)
            app.pump(nxt)
        now = monotonic_us()
        app.feedback(now)
        return done_record(app, max(1e-6, (now - start) / 1e6))
    finally:
        app.close()


def done_record(app: TcpCm, secs: float) -> dict[str, Any]:
    """The log's ``done`` line: per connection its goodput, losses and kernel trace."""
    mf = app.cm.macroflows.get(app.dst)
    kcc = app.kernel_cc or current_default()
    return {
        "type": "done",
        "t_s": round(secs, 3),
        "flows": [
            {
                "flow": c.idx,
                "acked_bytes": c.acked,
                "written_bytes": c.written,
                "goodput_kbps": round(c.acked * 8 / secs / 1000, 2),
                "retrans": c.total_retrans,
                "retrans_bytes_charged": c.bytes_retrans,
                "losses_reported": c.losses_reported,
                "timeouts_reported": c.timeouts_reported,
                "binding": c.trace.as_json(),
            }
            for c in app.conns
        ],
        "cm": None
        if mf is None
        else {"losses": mf.aimd.losses, "timeouts": mf.aimd.timeouts, "agings": mf.aimd.agings},
        "kernel_cc": kcc,
        "cwnd_bound_polls": sum(c.trace.cwnd_bound for c in app.conns),
        "cwnd_bound_open_polls": sum(c.trace.cwnd_bound_open for c in app.conns),
        "polls": sum(c.trace.samples for c in app.conns),
    }


def sample_lines(app: TcpCm, log: JsonlLog, t_s: float, interval_s: float) -> None:
    """A ``sample`` line and one ``kernel`` line per connection; restarts the interval."""
    mf = app.cm.macroflows.get(app.dst)
    log.write(
        {
            "type": "sample",
            "t_s": t_s,
            "macroflow_kbps": None if mf is None else round(mf.rate_Bps * 8 / 1000, 1),
            "srtt_ms": None if mf is None else round(mf.aimd.srtt_us / 1000, 2),
            "losses": None if mf is None else mf.aimd.losses + mf.aimd.timeouts,
            "flows": [
                {
                    "flow": c.idx,
                    "share_kbps": round(float(app.cm.query(c.fid)["rate_Bps"]) * 8 / 1000, 2),
                    "goodput_kbps": round(
                        (c.acked - c.last_sample_acked) * 8 / interval_s / 1000, 1
                    ),
                    "rtt_us": c.rtt_us,
                    "retrans": c.total_retrans,
                    "acked_bytes": c.acked,
                }
                for c in app.conns
            ],
        }
    )
    for c in app.conns:
        log.write(kernel_line(c, t_s))
        c.last_sample_acked = c.acked
        c.interval = BindingTrace()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    log = JsonlLog(args.log)
    log.write({"type": "agent", "agent": "tcpcm", "wall_time": time.time(), "args": vars(args)})
    stop = StopFlag().install()
    try:
        log.write(run(args, log, stop))
    except (OSError, ValueError) as exc:
        print(f"tcpcm: {exc}", file=sys.stderr)
        return 1
    finally:
        log.close()
    return 1 if stop.stopped else 0


if __name__ == "__main__":
    raise SystemExit(main())
