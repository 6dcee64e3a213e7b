"""The Congestion Manager on a simulated host: the sans-IO ``CongestionManager`` core and
the demo applications' own classes (``apps.bulk.BulkApp``, ``apps.audio.AudioApp``),
unchanged, driven by simulated time.

``SimCMHost`` is the simulator's counterpart of ``apps.cmhost.CMHost`` (the selectors
loop): both are ``fairgate_hosts.cm.host.CMHostCore`` (the same methods the applications
call, ``open``, ``request``, ``send``, ``cm``, ``cfg``, ``dst``, ``stats``, and the same
event handling: probes before grants, grants sent as rate-header DATA packets, ``notify``
after sending, the acks' explicit rate passed to ``update``), here with simulated UDP
ports for sockets and callbacks for the loop: each app's timer every ``timer_s`` and the
CM's ``tick`` at ``next_deadline``. It also runs TCP/CM flows (``tcp_cm.CmTcpFlow``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.cm.core import AppNotify, ChangeRate
from fairgate_hosts.cm.host import CMApp, CMFlow, CMHostCore
from fairgate_sim.engine import Clock
from fairgate_sim.network import SimHost
from fairgate_sim.packet import Packet, udp_packet
from fairgate_sim.tcp import TcpConfig
from fairgate_sim.tcp_cm import CmTcpFlow

__all__ = ["CMApp", "MemoryLog", "SimCMFlow", "SimCMHost", "TcpCmApp"]


@dataclass
class MemoryLog:
    """Stands in for the apps' ``JsonlLog``: keeps the records."""

    records: list[dict[str, Any]] = field(default_factory=list)

    def write(self, record: dict[str, Any]) -> None:
        self.records.append(record)


@dataclass
class SimCMFlow(CMFlow):
    """``apps.cmhost.UdpFlow`` with a simulated UDP port (``sport``) instead of a socket."""


@dataclass
class _Run:
    """One app running on the host until ``end_us``, and the flows it opened."""

    app: CMApp
    end_us: int
    on_done: Callable[[int], None] | None
    fids: list[int] = field(default_factory=list)


@dataclass(kw_only=True)
class SimCMHost(CMHostCore):
    """The CM of one host towards one destination (one macroflow: every app of the host
    to ``dst`` shares it, as one CM per host would)."""

    clock: Clock
    host: SimHost
    tcp: dict[int, CmTcpFlow] = field(default_factory=dict)  # TCP/CM flows
    app: CMApp | None = None  # the first app started (cm-sharing's one app)
    on_done: Callable[[int], None] | None = None  # called at the end, before closing
    runs: list[_Run] = field(default_factory=list)
    owner: dict[int, _Run] = field(default_factory=dict)
    _current: _Run | None = None
    _probe_port: int = 0
    _wake_us: int | None = None
    _token: int = 0
    # the macroflow's AIMD counters, kept when its last flow closes
    aimd_counts: dict[str, int] = field(
        default_factory=lambda: {"losses": 0, "timeouts": 0, "agings": 0}
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        self._probe_port = self.host.bind(self._on_probe_response)

    # ------------------------------------------------------------------ I/O (CMHostCore)
    def _send_data(self, flow: SimCMFlow, data: bytes) -> bool:
        # False: the NIC queue is full (a socket's ENOBUFS)
        return self.host.send(udp_packet(self.host.ip, self.dst, flow.sport, self.port, data))

    def _send_probe(self, dst: str, data: bytes) -> bool:
        return self.host.send(udp_packet(self.host.ip, dst, self._probe_port, self.port, data))

    def _app_of(self, fid: int, app: CMApp | None) -> CMApp | None:
        run = self.owner.get(fid)
        return run.app if run is not None else None

    def _grant(self, ev: AppNotify, app: CMApp | None, now_us: int) -> None:
        if ev.flow in self.tcp:
            self.tcp[ev.flow].on_grant(ev.nbytes)
        else:
            super()._grant(ev, app, now_us)

    def _rate(self, ev: ChangeRate, app: CMApp | None, now_us: int) -> None:
        if ev.flow not in self.tcp:
            super()._rate(ev, app, now_us)

    # ------------------------------------------------------------------ what apps call
    def open(self, weight: float = 1.0) -> SimCMFlow:
        now = self.clock.now_us()
        fid = self.cm.open("", self.dst, weight, now_us=now)
        flow = SimCMFlow(fid, weight)
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
            self.handle(self.cm.request(flow.fid, nbytes, now), None, now)

    def tcp_sent(self, flow: CmTcpFlow, nbytes: int) -> None:
        self._notify.append((flow.fid, nbytes))
        if not self._in_handle:
            self.handle([], None, self.clock.now_us())

    def tcp_feedback(
        self, flow: CmTcpFlow, nrecd: int, loss: bool, rtt_us: int | None, persistent: bool
    ) -> None:
        if flow.fid not in self.cm.flows or not self.runs:
            return
        now = self.clock.now_us()
        events = self.cm.update(flow.fid, nrecd, loss, rtt_us, now, persistent=persistent)
        self.handle(events, None, now)
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

    def request(self, flow: SimCMFlow, nbytes: int, app: CMApp) -> None:
        now = self.clock.now_us()
        self.handle(self.cm.request(flow.fid, nbytes, now), None, now)

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
        self.handle(self.cm.tick(now), None, now)
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

    # ------------------------------------------------------------------ packets
    def _on_probe_response(self, pkt: Packet) -> None:
        if not self.runs or pkt.data is None:
            return
        now = self.clock.now_us()
        self.handle(self.cm.on_probe_response(pkt.src, bytes(pkt.data), now), None, now)
        self._tick()

    def _responses(self) -> int:
        tot = self.cm.probe_totals.get(self.dst)
        return tot.responses if tot is not None else 0

    def _on_ack(self, flow: SimCMFlow, pkt: Packet) -> None:
        if not self.runs or pkt.data is None:
            flow.acks += 1
            return
        now = self.clock.now_us()
        before = flow.explicit_kbps, self._responses()
        events = self.on_ack(flow, bytes(pkt.data), now)
        # the path's explicit rate changed (update ran) or a probe response was taken
        if (flow.explicit_kbps, self._responses()) != before:
            self.handle(events, None, now)
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
