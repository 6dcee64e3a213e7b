"""The Congestion Manager on a simulated host: the sans-IO ``CongestionManager`` core and
the demo applications' own classes (``apps.bulk.BulkApp``, ``apps.audio.AudioApp``),
unchanged, driven by simulated time.

``SimCMHost`` is the simulator's counterpart of ``apps.cmhost.CMHost`` (the selectors
loop): the same methods the applications call (``open``, ``request``, ``send``, ``cm``,
``cfg``, ``dst``, ``stats``) and the same event handling (probes before grants, grants
sent as rate-header DATA packets, ``notify`` after sending, the acks' explicit rate
passed to ``update``), with sockets replaced by simulated UDP ports and the loop by
callbacks: the application's timer every ``timer_s`` and the CM's ``tick`` at
``next_deadline``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fairgate_hosts.cm.core import AppNotify, ChangeRate, CMConfig, CongestionManager, SendProbe
from fairgate_hosts.wire import RATE_UNLIMITED, u32
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, HeaderError, RateHeader
from fairgate_sim.engine import Clock
from fairgate_sim.network import SimHost
from fairgate_sim.packet import Packet, udp_packet


class CMApp(Protocol):
    def on_grant(self, host: Any, flow: Any, nbytes: int, now_us: int) -> None: ...

    def on_rate(self, host: Any, flow: Any, rate_Bps: float, now_us: int) -> None: ...

    def on_timer(self, host: Any, now_us: int) -> None: ...


@dataclass
class MemoryLog:
    """Stands in for the apps' ``JsonlLog``: keeps the records."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)


@dataclass
class SimCMFlow:
    """``apps.cmhost.UdpFlow`` with a simulated UDP port instead of a socket."""

    fid: int
    sport: int
    weight: float
    seq: int = 0
    sent_bytes: int = 0
    sent_packets: int = 0
    rate_Bps: float = 0.0
    explicit_kbps: int | None = None
    acks: int = 0


@dataclass
class SimCMHost:
    clock: Clock
    host: SimHost
    dst: str  # receiver agent's IP
    cfg: CMConfig
    explicit: bool = True
    port: int = g.FG_UDP_PORT
    cm: CongestionManager = field(init=False)
    flows: dict[int, SimCMFlow] = field(default_factory=dict)
    app: CMApp | None = None
    on_done: Callable[[int], None] | None = None  # called at the end, before closing
    probes_sent: int = 0
    send_errors: int = 0
    _notify: list[tuple[int, int]] = field(default_factory=list)
    _probe_port: int = 0
    _end_us: int = 0
    _wake_us: int | None = None
    _token: int = 0

    def __post_init__(self) -> None:
        self.cm = CongestionManager(self.cfg)
        self._probe_port = self.host.bind(self._on_probe_response)

    # ------------------------------------------------------------------ what apps call
    def open(self, weight: float = 1.0) -> SimCMFlow:
        now = self.clock.now_us()
        fid = self.cm.open("", self.dst, weight, now_us=now)
        flow = SimCMFlow(fid, 0, weight)
        flow.sport = self.host.bind(lambda pkt, f=flow: self._on_ack(f, pkt))
        self.flows[fid] = flow
        return flow

    def send(self, flow: SimCMFlow, payload_bytes: int, now_us: int) -> int:
        mf = self.cm.macroflows.get(self.dst)
        hdr = RateHeader(
            kind=g.FG_KIND_DATA,
            seq=u32(flow.seq),
            ts_us=u32(now_us),
            rtt_us=u32(int(mf.aimd.srtt_us) if mf is not None else 0),
            rate_kbps=RATE_UNLIMITED,
        )
        data = hdr.pack() + bytes(payload_bytes)
        if not self.host.send(udp_packet(self.host.ip, self.dst, flow.sport, self.port, data)):
            self.send_errors += 1  # the NIC queue is full (a socket's ENOBUFS)
            return 0
        flow.seq += 1
        flow.sent_packets += 1
        flow.sent_bytes += payload_bytes
        self._notify.append((flow.fid, payload_bytes))
        return payload_bytes

    def request(self, flow: SimCMFlow, nbytes: int, app: CMApp) -> None:
        now = self.clock.now_us()
        self._handle(self.cm.request(flow.fid, nbytes, now), app, now)

    def stats(self) -> dict[str, object]:
        mf = self.cm.macroflows.get(self.dst)
        out: dict[str, object] = {"probes_sent": self.probes_sent, "send_errors": self.send_errors}
        if mf is not None:
            a = mf.aimd
            out |= {"losses": a.losses, "timeouts": a.timeouts, "agings": a.agings}
            out["rate_kbps"] = round(mf.rate_Bps * 8 / 1000, 2)
        return out

    # ------------------------------------------------------------------ running
    def start(self, app: CMApp, at_s: float, duration_s: float, timer_s: float) -> None:
        """Run ``app`` from ``at_s`` for ``duration_s`` (CMHost.run), then close its flows."""
        self.app = app
        self._end_us = round((at_s + duration_s) * 1e6)
        self.clock.at(at_s + timer_s, self._timer, timer_s)

    def _timer(self, timer_s: float) -> None:
        now = self.clock.now_us()
        if self.app is None or now >= self._end_us:
            self._stop()
            return
        self.app.on_timer(self, now)
        self._tick()
        self.clock.after(timer_s, self._timer, timer_s)

    def _tick(self) -> None:
        if self.app is None:
            return
        now = self.clock.now_us()
        self._handle(self.cm.tick(now), self.app, now)
        deadline = self.cm.next_deadline(now)
        if deadline is None or deadline >= self._end_us:
            return
        deadline = max(deadline, now + 1)
        if self._wake_us is not None and now < self._wake_us <= deadline:
            return
        self._token += 1
        self._wake_us = deadline
        self.clock.at(deadline * 1e-6, self._wake, self._token)

    def _wake(self, token: int) -> None:
        if token == self._token:
            self._wake_us = None
            self._tick()

    def _stop(self) -> None:
        if self.on_done is not None and self.app is not None:
            self.on_done(self.clock.now_us())
        self.app = None
        self._token += 1
        for flow in list(self.flows.values()):
            self.host.unbind(flow.sport)
            self.cm.close(flow.fid, self.clock.now_us())
        self.flows.clear()
        self.host.unbind(self._probe_port)

    # ------------------------------------------------------------------ events (CMHost._handle)
    def _handle(self, events: list[Any], app: CMApp, now_us: int) -> None:
        todo = list(events)
        while todo:
            todo.sort(key=lambda ev: not isinstance(ev, SendProbe))  # probes first (cmhost.py)
            for ev in todo:
                if isinstance(ev, AppNotify) and ev.flow in self.flows:
                    app.on_grant(self, self.flows[ev.flow], ev.nbytes, now_us)
                elif isinstance(ev, ChangeRate) and ev.flow in self.flows:
                    self.flows[ev.flow].rate_Bps = ev.rate_Bps
                    app.on_rate(self, self.flows[ev.flow], ev.rate_Bps, now_us)
                elif isinstance(ev, SendProbe):
                    pkt = udp_packet(self.host.ip, ev.dst, self._probe_port, self.port, ev.data)
                    if self.host.send(pkt):
                        self.probes_sent += 1
                    else:
                        self.send_errors += 1
            todo = []
            pending, self._notify = self._notify, []
            for fid, n in pending:
                if fid in self.cm.flows:
                    todo.extend(self.cm.notify(fid, n, now_us))

    def _on_probe_response(self, pkt: Packet) -> None:
        if self.app is None or pkt.data is None:
            return
        now = self.clock.now_us()
        self._handle(self.cm.on_probe_response(pkt.src, bytes(pkt.data), now), self.app, now)
        self._tick()

    def _on_ack(self, flow: SimCMFlow, pkt: Packet) -> None:
        flow.acks += 1
        if self.app is None or not self.explicit or pkt.data is None:
            return
        if len(pkt.data) < HEADER_BYTES:
            return
        try:
            hdr = RateHeader.unpack(pkt.data)
        except HeaderError:
            return
        if hdr.kind == g.FG_KIND_ACK and hdr.rate_kbps != flow.explicit_kbps:
            flow.explicit_kbps = hdr.rate_kbps
            now = self.clock.now_us()
            events = self.cm.update(flow.fid, 0, False, None, now, explicit_rate_kbps=hdr.rate_kbps)
            self._handle(events, self.app, now)
            self._tick()
