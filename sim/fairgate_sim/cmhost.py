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
from fairgate_sim.tcp import TcpConfig
from fairgate_sim.tcp_cm import CmTcpFlow


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
class _Run:
    """One app running on the host until ``end_us``, and the flows it opened."""

    app: CMApp
    end_us: int
    on_done: Callable[[int], None] | None
    fids: list[int] = field(default_factory=list)


@dataclass
class SimCMHost:
    """The CM of one host towards one destination (one macroflow: every app of the host
    to ``dst`` shares it, as one CM per host would)."""

    clock: Clock
    host: SimHost
    dst: str  # receiver agent's IP
    cfg: CMConfig
    explicit: bool = True
    port: int = g.FG_UDP_PORT
    cm: CongestionManager = field(init=False)
    flows: dict[int, SimCMFlow] = field(default_factory=dict)
    tcp: dict[int, CmTcpFlow] = field(default_factory=dict)  # TCP/CM flows
    app: CMApp | None = None  # the first app started (cm-sharing's one app)
    on_done: Callable[[int], None] | None = None  # called at the end, before closing
    probes_sent: int = 0
    send_errors: int = 0
    runs: list[_Run] = field(default_factory=list)
    owner: dict[int, _Run] = field(default_factory=dict)
    _current: _Run | None = None
    _notify: list[tuple[int, int]] = field(default_factory=list)
    _probe_port: int = 0
    _wake_us: int | None = None
    _token: int = 0
    _in_handle: bool = False
    # the macroflow's AIMD counters, kept when its last flow closes
    aimd_counts: dict[str, int] = field(
        default_factory=lambda: {"losses": 0, "timeouts": 0, "agings": 0}
    )

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
        self._own(fid)
        return flow

    def open_tcp(self, size: int, cfg: TcpConfig, weight: float = 1.0) -> CmTcpFlow:
        """A TCP/CM connection to ``dst``'s TCP sink (started at once); its feedback is
        TCP's acks (``probed=False``)."""
        now = self.clock.now_us()
        fid = self.cm.open("", self.dst, weight, now_us=now, probed=False)
        flow = CmTcpFlow(self.clock, self.host, self.dst, size, cfg, cm=self, fid=fid)
        self.tcp[fid] = flow
        self._own(fid)
        flow.start()
        return flow

    def _own(self, fid: int) -> None:
        run = self._current or (self.runs[-1] if self.runs else None)
        if run is not None:
            run.fids.append(fid)
            self.owner[fid] = run

    # ------------------------------------------------------------------ TCP/CM (CmPort)
    def tcp_request(self, flow: CmTcpFlow, nbytes: int) -> None:
        if flow.fid in self.cm.flows:
            now = self.clock.now_us()
            self._handle(self.cm.request(flow.fid, nbytes, now), now)

    def tcp_sent(self, flow: CmTcpFlow, nbytes: int) -> None:
        self._notify.append((flow.fid, nbytes))
        if not self._in_handle:
            self._handle([], self.clock.now_us())

    def tcp_feedback(
        self, flow: CmTcpFlow, nrecd: int, loss: bool, rtt_us: int | None, persistent: bool
    ) -> None:
        if flow.fid not in self.cm.flows or not self.runs:
            return
        now = self.clock.now_us()
        events = self.cm.update(flow.fid, nrecd, loss, rtt_us, now, persistent=persistent)
        self._handle(events, now)
        self._tick()

    def loss_events(self) -> int:
        """The macroflow's rate decreases on loss so far (losses and timeouts)."""
        mf = self.cm.macroflows.get(self.dst)
        if mf is not None:
            a = mf.aimd
            self.aimd_counts = {"losses": a.losses, "timeouts": a.timeouts, "agings": a.agings}
        return self.aimd_counts["losses"] + self.aimd_counts["timeouts"]

    def flow_rate_kbps(self, fid: int) -> float | None:
        """The CM's current rate for one flow (its weighted share of the macroflow)."""
        if fid not in self.cm.flows:
            return None
        return float(self.cm.query(fid)["rate_Bps"]) * 8 / 1000

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
        self._handle(self.cm.request(flow.fid, nbytes, now), now)

    def stats(self) -> dict[str, object]:
        mf = self.cm.macroflows.get(self.dst)
        out: dict[str, object] = {"probes_sent": self.probes_sent, "send_errors": self.send_errors}
        if mf is not None:
            a = mf.aimd
            out |= {"losses": a.losses, "timeouts": a.timeouts, "agings": a.agings}
            out["rate_kbps"] = round(mf.rate_Bps * 8 / 1000, 2)
        return out

    # ------------------------------------------------------------------ running
    def start(
        self,
        app: CMApp,
        at_s: float,
        duration_s: float,
        timer_s: float,
        on_done: Callable[[int], None] | None = None,
    ) -> None:
        """Run ``app`` from ``at_s`` for ``duration_s`` (CMHost.run), then close its flows.
        Several apps may run on one host (one macroflow); each has its own timer."""
        if self.app is None:
            self.app = app
        run = _Run(app, round((at_s + duration_s) * 1e6), on_done)
        self.runs.append(run)
        self.clock.at(at_s + timer_s, self._timer, timer_s, run)

    def _timer(self, timer_s: float, run: _Run) -> None:
        now = self.clock.now_us()
        if run not in self.runs or now >= run.end_us:
            self._stop(run)
            return
        self._current = run
        run.app.on_timer(self, now)
        self._current = None
        self._tick()
        self.clock.after(timer_s, self._timer, timer_s, run)

    @property
    def _end_us(self) -> int:
        return max((r.end_us for r in self.runs), default=0)

    def _tick(self) -> None:
        if not self.runs:
            return
        now = self.clock.now_us()
        self._handle(self.cm.tick(now), now)
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

    def _stop(self, run: _Run) -> None:
        if run not in self.runs:
            return
        now = self.clock.now_us()
        done = run.on_done or (self.on_done if run.app is self.app else None)
        if done is not None:
            done(now)
        self.runs.remove(run)
        for fid in run.fids:
            self.owner.pop(fid, None)
            if fid in self.flows:
                self.host.unbind(self.flows.pop(fid).sport)
            if fid in self.tcp:
                self.tcp[fid].abort()
            if fid in self.cm.flows:
                self.loss_events()  # keep the count past the macroflow's end
                self.cm.close(fid, now)
        if not self.runs:
            self._token += 1
            self.host.unbind(self._probe_port)

    # ------------------------------------------------------------------ events (CMHost._handle)
    def _handle(self, events: list[Any], now_us: int) -> None:
        outer, self._in_handle = self._in_handle, True
        try:
            self._handle_all(events, now_us)
        finally:
            self._in_handle = outer

    def _handle_all(self, events: list[Any], now_us: int) -> None:
        todo = list(events)
        while todo or self._notify:
            todo.sort(key=lambda ev: not isinstance(ev, SendProbe))  # probes first (cmhost.py)
            for ev in todo:
                run = self.owner.get(ev.flow) if not isinstance(ev, SendProbe) else None
                if isinstance(ev, AppNotify) and ev.flow in self.tcp:
                    self.tcp[ev.flow].on_grant(ev.nbytes)
                elif isinstance(ev, AppNotify) and ev.flow in self.flows and run is not None:
                    run.app.on_grant(self, self.flows[ev.flow], ev.nbytes, now_us)
                elif isinstance(ev, ChangeRate) and ev.flow in self.flows and run is not None:
                    self.flows[ev.flow].rate_Bps = ev.rate_Bps
                    run.app.on_rate(self, self.flows[ev.flow], ev.rate_Bps, now_us)
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
        if not self.runs or pkt.data is None:
            return
        now = self.clock.now_us()
        self._handle(self.cm.on_probe_response(pkt.src, bytes(pkt.data), now), now)
        self._tick()

    def _on_ack(self, flow: SimCMFlow, pkt: Packet) -> None:
        flow.acks += 1
        if not self.runs or not self.explicit or pkt.data is None:
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
            self._handle(events, now)
            self._tick()


@dataclass
class TcpCmApp:
    """The TCP/CM app: ``len(weights)`` TCP/CM uploads of ``size`` bytes, flow i opening
    ``i x stagger_s`` after the start (the CM paper's TCP/CM, Figs. 2, 3, 9, 10)."""

    weights: list[float]
    size: int
    tcp: TcpConfig
    stagger_s: float
    start_us: int
    flows: list[CmTcpFlow] = field(default_factory=list)

    def on_grant(self, host: Any, flow: Any, nbytes: int, now_us: int) -> None:
        pass  # TCP/CM grants go to the TCP flow itself (SimCMHost routes them)

    def on_rate(self, host: Any, flow: Any, rate_Bps: float, now_us: int) -> None:
        pass

    def on_timer(self, host: Any, now_us: int) -> None:
        while len(self.flows) < len(self.weights):
            k = len(self.flows)
            if now_us < self.start_us + round(k * self.stagger_s * 1e6):
                break
            self.flows.append(host.open_tcp(self.size, self.tcp, self.weights[k]))
