"""An in-process Congestion Manager driving UDP flows to one receiver agent (selectors loop).

Each flow has its own UDP socket (so the receiver agent sees it as its own peer) and sends
rate-header DATA packets when the CM grants it bytes (``app_notify``); the CM learns the
path from probes answered by the receiver agent (``python -m fairgate_hosts.receiver``)
and, when ``explicit`` is on, from the rate field the switches stamp into the acks.
Applications implement :class:`CMApp`: ``on_grant`` sends (and returns what it sent),
``on_rate`` sees every ``change_rate``, ``on_timer`` runs every ``timer_s``.
"""

from __future__ import annotations

import selectors
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fairgate_hosts.agentio import monotonic_us
from fairgate_hosts.cm.core import (
    AppNotify,
    ChangeRate,
    CMConfig,
    CongestionManager,
    Event,
    SendProbe,
)
from fairgate_hosts.wire import RATE_UNLIMITED, u32
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, HeaderError, RateHeader


class CMApp(Protocol):
    def on_grant(self, host: CMHost, flow: UdpFlow, nbytes: int, now_us: int) -> None: ...

    def on_rate(self, host: CMHost, flow: UdpFlow, rate_Bps: float, now_us: int) -> None: ...

    def on_timer(self, host: CMHost, now_us: int) -> None: ...


@dataclass
class UdpFlow:
    fid: int
    sock: socket.socket
    weight: float
    seq: int = 0
    sent_bytes: int = 0  # application bytes (after the rate header)
    sent_packets: int = 0
    rate_Bps: float = 0.0
    explicit_kbps: int | None = None
    acks: int = 0
    sport: int = 0  # the socket's local port: the receiver agent's name for this flow


@dataclass
class CMHost:
    dst: str
    port: int = g.FG_UDP_PORT
    cfg: CMConfig = field(default_factory=CMConfig)
    explicit: bool = True
    cm: CongestionManager = field(init=False)
    flows: dict[int, UdpFlow] = field(default_factory=dict)
    probe_sock: socket.socket = field(init=False)
    sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)
    probes_sent: int = 0
    send_errors: int = 0
    # Grants for flows that are not this host's UDP flows (TCP/CM connections sharing
    # the CM, apps.audio --tcp-flows): handed over, the notifies' events come back.
    foreign_grant: Callable[[int, int, int], list[Event]] | None = None
    _notify: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cm = CongestionManager(self.cfg)
        self.probe_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.probe_sock.bind(("0.0.0.0", 0))
        self.probe_sock.setblocking(False)
        self.sel.register(self.probe_sock, selectors.EVENT_READ, None)

    # ------------------------------------------------------------------ flows
    def open(self, weight: float = 1.0) -> UdpFlow:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.connect((self.dst, self.port))
        sock.setblocking(False)
        fid = self.cm.open("", self.dst, weight, now_us=monotonic_us())
        flow = UdpFlow(fid, sock, weight, sport=sock.getsockname()[1])
        self.flows[fid] = flow
        self.sel.register(sock, selectors.EVENT_READ, flow)
        return flow

    def close_all(self) -> None:
        for flow in list(self.flows.values()):
            self.sel.unregister(flow.sock)
            flow.sock.close()
            self.cm.close(flow.fid)
        self.flows.clear()
        self.sel.unregister(self.probe_sock)
        self.probe_sock.close()
        self.sel.close()

    def send(self, flow: UdpFlow, payload_bytes: int, now_us: int) -> int:
        """One DATA packet carrying ``payload_bytes`` after the header; returns bytes sent."""
        srtt = (
            int(self.cm.macroflows[self.dst].aimd.srtt_us) if self.dst in self.cm.macroflows else 0
        )
        hdr = RateHeader(
            kind=g.FG_KIND_DATA,
            seq=u32(flow.seq),
            ts_us=u32(now_us),
            rtt_us=u32(srtt),
            rate_kbps=RATE_UNLIMITED,
        )
        try:
            flow.sock.send(hdr.pack() + bytes(payload_bytes))
        except OSError:
            self.send_errors += 1
            return 0
        flow.seq += 1
        flow.sent_packets += 1
        flow.sent_bytes += payload_bytes
        self._notify.append((flow.fid, payload_bytes))
        return payload_bytes

    def request(self, flow: UdpFlow, nbytes: int, app: CMApp) -> None:
        now = monotonic_us()
        self._handle(self.cm.request(flow.fid, nbytes, now), app, now)

    def stats(self) -> dict[str, object]:
        mf = self.cm.macroflows.get(self.dst)
        out: dict[str, object] = {"probes_sent": self.probes_sent, "send_errors": self.send_errors}
        if mf is not None:
            a = mf.aimd
            out |= {"losses": a.losses, "timeouts": a.timeouts, "agings": a.agings}
            out["rate_kbps"] = round(mf.rate_Bps * 8 / 1000, 2)
        return out

    # ------------------------------------------------------------------ loop
    def _handle(self, events: list[Event], app: CMApp, now_us: int) -> None:
        todo = list(events)
        while todo:
            # Probes first: a probe's byte count was taken when the CM made it, before
            # the grants of the same batch were sent and notified. Sent after them, it
            # would trail bytes it does not count, and the receiver (which counts what
            # arrives before the probe) would make the next interval look lossy.
            todo.sort(key=lambda ev: not isinstance(ev, SendProbe))
            more: list[Event] = []
            for ev in todo:
                if isinstance(ev, AppNotify) and ev.flow in self.flows:
                    app.on_grant(self, self.flows[ev.flow], ev.nbytes, now_us)
                elif isinstance(ev, AppNotify) and self.foreign_grant is not None:
                    more += self.foreign_grant(ev.flow, ev.nbytes, now_us)
                elif isinstance(ev, ChangeRate) and ev.flow in self.flows:
                    self.flows[ev.flow].rate_Bps = ev.rate_Bps
                    app.on_rate(self, self.flows[ev.flow], ev.rate_Bps, now_us)
                elif isinstance(ev, SendProbe):
                    try:
                        self.probe_sock.sendto(ev.data, (ev.dst, self.port))
                        self.probes_sent += 1
                    except OSError:
                        self.send_errors += 1
            todo = list(more)
            pending, self._notify = self._notify, []
            for fid, n in pending:
                if fid in self.cm.flows:
                    todo.extend(self.cm.notify(fid, n, now_us))

    def _read(self, key: selectors.SelectorKey, app: CMApp) -> None:
        sock: socket.socket = key.fileobj  # type: ignore[assignment]
        flow: UdpFlow | None = key.data
        for _ in range(256):
            try:
                data, peer = sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # ICMP port unreachable etc.
                return
            now = monotonic_us()
            if flow is None:
                self._handle(self.cm.on_probe_response(peer[0], data, now), app, now)
                continue
            flow.acks += 1
            if not self.explicit or len(data) < HEADER_BYTES:
                continue
            try:
                hdr = RateHeader.unpack(data)
            except HeaderError:
                continue
            if hdr.kind == g.FG_KIND_ACK and hdr.rate_kbps != flow.explicit_kbps:
                flow.explicit_kbps = hdr.rate_kbps
                self._handle(
                    self.cm.update(flow.fid, 0, False, None, now, explicit_rate_kbps=hdr.rate_kbps),
                    app,
                    now,
                )

    def run(self, app: CMApp, duration_s: float, timer_s: float, stopped: object) -> None:
        """Run until ``duration_s`` passed or ``stopped.stopped`` (a StopFlag) is set."""
        start = monotonic_us()
        end = start + int(duration_s * 1e6)
        next_timer = start + int(timer_s * 1e6)
        while not getattr(stopped, "stopped", False):
            now = monotonic_us()
            if now >= end:
                break
            if now >= next_timer:
                app.on_timer(self, now)
                next_timer += int(timer_s * 1e6)
            self._handle(self.cm.tick(now), app, now)
            deadline = min(end, next_timer)
            cm_next = self.cm.next_deadline(now)
            if cm_next is not None:
                deadline = min(deadline, cm_next)
            timeout = max(0.0, (deadline - monotonic_us()) / 1e6)
            for key, _ in self.sel.select(timeout):
                self._read(key, app)
