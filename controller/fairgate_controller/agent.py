"""The per-switch control loop (asyncio, finsy).

On every connection that makes us primary (first connect, a switch restart, a
controller restart, a mastership change) the agent reconciles the switch with
what it should hold: routes, histogram buckets, admission ports, the last
computed rates and admit rates. A controller that restarts finds the rates on
the switch and continues from them; a switch that restarts gets its pipeline
(finsy pushes it when the switch has none) and the last state back.

Then every output port runs on its own timer: its control interval is the
average RTT d carried by the packets through it in its last interval (Lestas
et al.; d(0) = 0.05 s, kept while no packet carries one), or the fixed
``--period``. The loop wakes when the earliest port is due, makes one Read of
the counter cells of this switch's ports (wire.CounterReader), and for every
port that is due: deltas against that port's own last read, one
PortMeasurement, the configured algorithm; then one Write holding the due
ports' rates and congestion flags, XCP's factors and the meters of admit rates
that changed (wire.UpdateEncoder). A backup controller (lower election id)
reads nothing and writes nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import finsy as fy
from finsy.proto import p4r

from fairgate_controller import entities as ent
from fairgate_controller import ficcrd as fc
from fairgate_controller.algorithms import (
    HoldWhenIdle,
    LestasController,
    QfcpController,
    RateController,
    RcpController,
    SessionController,
    SessionParams,
    StaticGate,
)
from fairgate_controller.records import Recorder
from fairgate_controller.routes import compute_routes
from fairgate_controller.session_counts import Downstream, SessionBoard, downstream_of
from fairgate_controller.session_counts import step as downstream_step
from fairgate_controller.telemetry import (
    COUNTERS,
    SIM_QUEUE_DROPS,
    XCP_COUNTERS,
    QueueDropEstimator,
    Snapshot,
    counter_cells,
    counter_deltas,
    event_count,
    measure_port,
    queue_buckets,
    queue_overflow,
    queue_top_pkts,
    rtt_buckets,
)
from fairgate_controller.thrift_cli import QueueSetting, SwitchCliError
from fairgate_controller.topology import PortSpec, SwitchSpec, Topology
from fairgate_controller.wire import ChannelClosedError, CounterReader, UpdateEncoder
from fairgate_controller.xcp_ports import XcpPorts
from fairgate_p4 import generated as g
from fairgate_p4.header import Bps_to_kbps, kbps_to_Bps

LOG = logging.getLogger("fairgate.controller")

Algo = Literal["qfcp", "rcp", "lestas", "xcp", "none"]
# where session control counts a gated port's flows (SwitchAgent.session_counts)
SessionCompletions = Literal["servers", "downstream", "reverse", "same"]
SESSION_COMPLETIONS: tuple[str, ...] = get_args(SessionCompletions)
INITIAL_INTERVAL_S = 0.05
"""d(0) of Lestas et al.: a port's control interval before any packet carried an RTT."""
DUE_SLACK_S = 0.001
"""Ports due within this of a read are served by it (one Read for ports whose timers agree)."""
OWNED_TABLES = (
    g.TABLE_IPV4_ROUTES,
    g.TABLE_PORT_FEEDBACK,
    g.TABLE_ADMISSION_PORTS,
    g.TABLE_QUEUE_BUCKETS,
    g.TABLE_RTT_BUCKETS,
)
# owned too when the algorithm is XCP (xcp_ports.py)
XCP_TABLES = (g.TABLE_XCP_FACTORS, g.TABLE_XCP_RATIO_BUCKETS)


@dataclass(frozen=True)
class ControlConfig:
    """What the controller runs; every field has a CLI option."""

    algo: Algo = "qfcp"
    session: Literal["off", "strategy1", "strategy2"] = "off"
    # a static gate: this admit rate (flows/s) on every admission port, kept and recorded
    # by the controller as a search's would be (exclusive with a session strategy)
    admit_fps: float | None = None
    period_s: float | None = 0.1  # None: every port follows its measured mean RTT
    # Bounds of a port's interval in "auto"; the defaults are what the data plane forces:
    # the RTT histogram's range (bucket 0 ends at 1 ms, RTTs above 1 s overflow).
    period_min_s: float = 0.001
    period_max_s: float = 1.0
    session_window_s: float = 1.0
    # where session control counts flows (SwitchAgent.session_counts)
    session_completions: SessionCompletions = "servers"
    min_rate_kbps: int = 8
    q_ref_pkts: float = 10.0
    meter_burst: int = ent.METER_BURST_DEFAULT
    ficcrd: fc.FiccrdConfig | None = None  # FICCRD roles, k, DPF tables (off by default)

    def __post_init__(self) -> None:
        if self.period_s is not None and not self.period_s > 0:
            raise ValueError(f"period must be > 0 s, got {self.period_s}")
        if not 0 < self.period_min_s <= self.period_max_s:
            raise ValueError("need 0 < period_min <= period_max")
        if not self.session_window_s > 0:
            raise ValueError("session window must be > 0 s")
        if not self.min_rate_kbps > 0:
            raise ValueError(f"--min-rate must be > 0 kbit/s, got {self.min_rate_kbps}")
        if not (math.isfinite(self.q_ref_pkts) and self.q_ref_pkts >= 0):
            raise ValueError(f"--q-ref must be a finite number >= 0, got {self.q_ref_pkts}")
        if not self.meter_burst >= 1:
            raise ValueError(f"meter burst must be >= 1, got {self.meter_burst}")
        if self.admit_fps is not None:
            if not (math.isfinite(self.admit_fps) and self.admit_fps > 0):
                raise ValueError(f"--admit-rate must be > 0 flows/s, got {self.admit_fps}")
            if self.session != "off":
                raise ValueError(
                    f"--admit-rate fixes the gate and --session {self.session} searches it: "
                    "give one of them"
                )

    def rate_controller(self, port: PortSpec, initial_Bps: float | None) -> RateController | None:
        common: dict[str, Any] = {
            "min_rate_Bps": kbps_to_Bps(self.min_rate_kbps),
            "initial_rate_Bps": initial_Bps,
        }
        ctl: RateController
        if self.algo == "qfcp":
            ctl = QfcpController(port.capacity_Bps, **common)
        elif self.algo == "rcp":
            ctl = RcpController(port.capacity_Bps, **common)
        elif self.algo == "lestas":
            ctl = LestasController(port.capacity_Bps, q_ref_bytes=self.q_ref_pkts * 1500, **common)
        else:
            return None
        return HoldWhenIdle(ctl)  # outages hold the rate (algorithms/idle.py)

    def queue_target_pkts(self) -> float | None:
        """The queue the rate algorithm regulates to, in packets (of 1500 B, the
        unit of q_ref_pkts): Lestas's q_ref. QFCP and RCP drain the queue and
        have none. The queue histogram's fine buckets are laid out around it."""
        return self.q_ref_pkts if self.algo == "lestas" else None

    def session_controller(self) -> SessionController | StaticGate | None:
        if self.admit_fps is not None:
            return StaticGate(self.admit_fps)
        if self.session == "off":
            return None
        return SessionController(SessionParams(strategy=1 if self.session == "strategy1" else 2))


@dataclass
class _SessionWindow:
    seconds: float = 0.0
    admitted: int = 0
    offered: int = 0
    fins: int = 0
    handshakes: int = 0


@dataclass
class SwitchAgent:
    spec: SwitchSpec
    topo: Topology
    config: ControlConfig
    recorder: Recorder
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    # Sets the switch's egress queues (thrift port, settings); None: leave them.
    queue_setter: Callable[[int, list[QueueSetting]], None] | None = None
    # Reads whole registers (thrift port, names) -> name -> cells; None: no reads.
    register_reader: Callable[[int, list[str]], dict[str, list[int]]] | None = None
    # FICCRD's registers (fc.REGISTERS) as last read; None: not read (yet, or failed)
    ficcrd_regs: dict[str, list[int]] | None = None
    # at most one register read started per this many seconds (a CLI run costs a
    # Python process; the switches share the lab's CPUs)
    register_read_every_s: float = 0.5
    rate_ctl: dict[int, RateController] = field(default_factory=dict)
    session_ctl: dict[int, SessionController | StaticGate] = field(default_factory=dict)
    feedback: dict[int, tuple[int, bool]] = field(default_factory=dict)
    admit: dict[int, float | None] = field(default_factory=dict)
    prev: Snapshot | None = None  # the last read; None: re-baseline at the next one
    prev_t: float = 0.0
    # Per port: the read its next delta starts from, when it is due, its interval d
    # and the estimator of its queue's drops.
    port_prev: dict[int, tuple[Snapshot, float]] = field(default_factory=dict)
    port_due: dict[int, float] = field(default_factory=dict)
    interval: dict[int, float] = field(default_factory=dict)
    drop_est: dict[int, QueueDropEstimator] = field(default_factory=dict)
    # XCP's updates (xcp_ports.py) not yet written into a port's period record
    xcp_pending: dict[int, dict[str, Any]] = field(default_factory=dict)
    periods: int = 0
    resets: int = 0
    errors: int = 0
    queues_pending: bool = False
    queue_restores: int = 0
    # perf_counter at the last step's start, read, computed, written (benchmarks)
    times: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    updates: int = 0  # in the last Write
    # The topology's switches' session_events as last read, shared by its agents: the
    # "downstream" counts of a gated port are its neighbour's (session_counts.py).
    board: SessionBoard | None = None

    def __post_init__(self) -> None:
        self.ports = self.topo.switch_ports(self.spec.name)
        self.routes = compute_routes(self.topo)[self.spec.name]
        depth = max((p.queue_depth or 64 for p in self.ports), default=64)
        self.qbuckets = queue_buckets(depth, self.config.queue_target_pkts())
        self.rbuckets = rtt_buckets()
        self.windows = {p.port: _SessionWindow() for p in self.ports if p.admission}
        # per gated port: where its flows are counted after its queue ("downstream")
        # and the neighbour's (FINs, SYNs) totals its last period used
        self.downstream: dict[int, Downstream] = {}
        self.downstream_prev: dict[int, tuple[int, int] | None] = {}
        self.completions_from = self._completions_sources()
        self.period_s = self.config.period_s or INITIAL_INTERVAL_S
        ficcrd = self.config.ficcrd
        self.owned_tables = OWNED_TABLES + (fc.TABLES if ficcrd else ())
        self.counters = COUNTERS + (fc.COUNTERS if ficcrd else ())
        self.ficcrd_core = (
            {p.port: p for p in fc.roles(self.topo, self.spec.name, ficcrd).core} if ficcrd else {}
        )
        self._reg_task: asyncio.Task[None] | None = None
        self._wire_for: tuple[fy.P4Schema, CounterReader, UpdateEncoder] | None = None
        self._reg_started = -math.inf
        self._reg_failed = False
        # XCP: one controller per port on its own interval (the port's average RTT)
        self.xcp: XcpPorts | None = None
        if self.config.algo == "xcp":
            self.xcp = XcpPorts(
                self.ports, self.qbuckets, self.rbuckets, tick_s=self.config.period_min_s
            )
            self.owned_tables += XCP_TABLES
            self.counters += XCP_COUNTERS

    # ---- connection ----------------------------------------------------------
    async def ready(self, sw: fy.Switch) -> None:
        """finsy ready handler: runs until the channel goes down or we lose mastership."""
        configured = sw.options.initial_election_id
        if not sw.is_primary:
            LOG.warning(
                "%s: backup controller (our election id %d, the primary's %d): not writing",
                self.spec.name,
                sw.election_id,
                sw.primary_id,
            )
            return
        LOG.info(
            "%s: primary controller (election id %d%s): reading the switch before writing",
            self.spec.name,
            sw.election_id,
            "" if sw.election_id == configured else f", configured {configured}",
        )
        installed = False
        self.prev = None
        while True:
            started = self.clock()
            try:
                if not installed:
                    await self.install(sw)
                    installed = True
                else:
                    await self.step(sw)
                if self.queues_pending:
                    await self.restore_queues()
            except ChannelClosedError:
                # the switch went down mid-period (restart): finsy cancels this loop and
                # runs it again when the switch is back, reading it before writing
                LOG.info("%s: channel closed mid-period (switch down?)", self.spec.name)
                return
            except fy.P4ClientError as exc:
                # Keep controlling: log what the switch refused, then reconcile the
                # tables again next period (someone may have changed them) and
                # re-baseline the counters.
                self.errors += 1
                installed = False
                self.prev = None
                LOG.error(
                    "%s: P4Runtime request refused, retrying next period: %s", self.spec.name, exc
                )
            await asyncio.sleep(max(0.0, self.next_wakeup(started) - self.clock()))

    def next_wakeup(self, started: float) -> float:
        """When the loop reads next: the earliest port deadline, or one default
        interval after `started` while there is no baseline; with XCP also the end of
        its earliest port's interval."""
        if self.prev is None or not self.port_due:
            due = started + self.period_s
        else:
            due = min(self.port_due.values())
        if self.xcp is not None:  # and XCP's earliest port
            due = min(due, self.xcp.next_due(started + self.xcp_tick_s()))
        return due

    def queue_settings(self) -> list[QueueSetting]:
        """The egress queues this switch must hold (host ports and links' data ends)."""
        return [
            (p.port, p.queue_rate_pps, p.queue_depth)
            for p in self.ports
            if p.queue_end and (p.queue_rate_pps is not None or p.queue_depth is not None)
        ]

    async def restore_queues(self) -> bool:
        """Set the egress queue rate and depth over Thrift (BMv2 forgets them on
        a restart, and P4Runtime cannot set them). On failure, log it and try
        again next period."""
        settings = self.queue_settings()
        thrift = self.spec.thrift_port
        if not settings or thrift is None or self.queue_setter is None:
            self.queues_pending = False
            return True
        first_try = not self.queues_pending
        try:
            await asyncio.to_thread(self.queue_setter, thrift, settings)
        except (SwitchCliError, OSError, subprocess.SubprocessError) as exc:
            if first_try:
                LOG.error(
                    "%s: could not set the egress queues over Thrift (port %d), retrying "
                    "every period: %s",
                    self.spec.name,
                    thrift,
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                )
            self.queues_pending = True
            return False
        self.queues_pending = False
        self.queue_restores += 1
        LOG.info(
            "%s: egress queues set over Thrift (port %d): %s",
            self.spec.name,
            thrift,
            "; ".join(
                f"port {port}: {'-' if rate is None else rate} pkt/s, "
                f"depth {'-' if depth is None else depth} pkts"
                for port, rate, depth in settings
            ),
        )
        return True

    async def install(self, sw: fy.Switch) -> None:
        current = [e async for e in sw.read([fy.P4TableEntry(t) for t in self.owned_tables])]
        self._seed_from_switch(current)
        self.ensure_controllers()
        desired: list[Any] = [ent.route_entry(r) for r in self.routes]
        desired += ent.bucket_entries(g.TABLE_QUEUE_BUCKETS, self.qbuckets)
        desired += ent.bucket_entries(g.TABLE_RTT_BUCKETS, self.rbuckets)
        desired += [ent.admission_entry(port) for port in self.windows]
        if self.config.algo != "none":
            desired += [ent.feedback_entry(p, kbps, c) for p, (kbps, c) in self.feedback.items()]
        if self.config.ficcrd is not None:
            desired += fc.table_entries(self.topo, self.spec.name, self.config.ficcrd)
        if self.xcp is not None:
            desired += self.xcp.entries()
            self.xcp.rebaseline()
        inserts, modifies, deletes = ent.reconcile(desired, current, sw.p4info)
        await sw.delete(deletes)
        await sw.modify(modifies)
        await sw.insert(inserts)
        if self.config.ficcrd is not None:
            for session in fc.clone_sessions(self.topo, self.spec.name):
                try:
                    await sw.insert([session])
                except fy.P4ClientError:  # already there (controller restart)
                    await sw.modify([session])
        meters = [
            ent.meter_entry(p, self.admit.get(p), self.config.meter_burst) for p in self.windows
        ]
        await sw.modify(meters)
        await self.restore_queues()
        LOG.info(
            "%s: installed %d, modified %d, deleted %d entries; %d meters",
            self.spec.name,
            len(inserts),
            len(modifies),
            len(deletes),
            len(meters),
        )

    def _seed_from_switch(self, current: list[Any]) -> None:
        """Whenever we (re)gain a switch, the rates it holds win over ours.

        A restarted controller has none of its own; a former primary that takes
        over again has stale ones (another controller wrote since): both continue
        from the switch's, and the rate controllers of those ports restart from
        them. Only a switch that holds no rates (it restarted) gets ours back.
        """
        on_switch: dict[int, tuple[int, bool]] = {}
        for entry in current:
            if entry.table_id == g.TABLE_PORT_FEEDBACK and entry.match and entry.action:
                port = int(entry.match["egress_port"])
                args = entry.action.args
                on_switch[port] = (int(args["fair_rate_kbps"]), bool(args["congested"]))
        if not on_switch:
            if self.feedback:
                LOG.info(
                    "%s: the switch holds no rates (restarted?): restoring ours %s",
                    self.spec.name,
                    {p: k for p, (k, _c) in sorted(self.feedback.items())},
                )
            return
        stale = {p: k for p, (k, _c) in self.feedback.items() if on_switch.get(p, (k,))[0] != k}
        for port, (kbps, _c) in on_switch.items():
            if self.feedback.get(port, (None,))[0] != kbps:
                # Re-created from the switch's rate; a controller whose rate the
                # switch holds (a refused request, a reconnect) keeps its state.
                self.rate_ctl.pop(port, None)
        self.feedback.update(on_switch)
        LOG.info(
            "%s: continuing from the rates on the switch: %s%s",
            self.spec.name,
            {p: k for p, (k, _c) in sorted(on_switch.items())},
            f" (ours were {dict(sorted(stale.items()))})" if stale else "",
        )

    def ensure_controllers(self) -> None:
        """Create the per-port rate and session controllers (seeded from the
        rates known so far); install() calls it, a simulator can too."""
        for port in self.ports:
            if port.port not in self.rate_ctl:
                seeded = self.feedback.get(port.port)
                ctl = self.config.rate_controller(port, kbps_to_Bps(seeded[0]) if seeded else None)
                if ctl is not None:
                    self.rate_ctl[port.port] = ctl
                    if seeded is None:
                        self.feedback[port.port] = (Bps_to_kbps(ctl.rate_Bps), False)
            if port.admission and port.port not in self.session_ctl:
                sctl = self.config.session_controller()
                if sctl is not None:
                    self.session_ctl[port.port] = sctl
                if isinstance(sctl, StaticGate):  # its rate from the first write on
                    self.admit.setdefault(port.port, sctl.admit_fps)

    # ---- one period ----------------------------------------------------------
    def _wire(self, sw: fy.Switch) -> tuple[CounterReader, UpdateEncoder] | None:
        """The period's prepared Read and encoder for `sw`'s P4Info (built once per
        pipeline), or None when finsy's client is not there (then the public API)."""
        client = getattr(sw, "_p4client", None)
        if client is None or not hasattr(client, "request_iter"):
            return None
        schema = sw.p4info
        if self._wire_for is None or self._wire_for[0] is not schema:
            port_numbers = [p.port for p in self.ports]
            cells = {
                name: got
                for name in self.counters
                if (got := counter_cells(name, port_numbers)) is not None
            }
            reader = CounterReader(schema, sw.device_id, self.counters, cells)
            self._wire_for = (schema, reader, UpdateEncoder(schema))
        return self._wire_for[1], self._wire_for[2]

    async def read_snapshot(self, sw: fy.Switch) -> Snapshot:
        """Every counter the agent uses in one Read request (wire.CounterReader:
        built once, decoded straight into a Snapshot; finsy's public read() turns
        each entry into an object, which cost more than the RPC itself). finsy is
        pinned, so its private client is stable for us; without it we fall back to
        the public API."""
        wire = self._wire(sw)
        if wire is None:
            snap: Snapshot = {name: {} for name in self.counters}
            async for e in sw.read([fy.P4CounterEntry(name) for name in self.counters]):
                if e.index is not None:
                    snap[e.counter_id][e.index] = (e.packet_count, e.byte_count)
            return snap
        return await wire[0].read(sw._p4client)

    async def write(self, sw: fy.Switch, entities: list[Any]) -> None:
        """MODIFY `entities` (rates, XCP factors, meters) in one Write request."""
        self.updates = len(entities)
        if not entities:
            return
        wire = self._wire(sw)
        if wire is None:
            await sw.modify(entities)
            return
        client = sw._p4client
        assert client is not None
        request = p4r.WriteRequest(device_id=sw.device_id, updates=wire[1].modify(entities))
        await client.request(request)

    async def _read_ficcrd(self, thrift: int) -> None:
        assert self.register_reader is not None
        try:
            self.ficcrd_regs = await asyncio.to_thread(
                self.register_reader, thrift, list(fc.REGISTERS)
            )
            self._reg_failed = False
        except (SwitchCliError, OSError, subprocess.SubprocessError) as exc:
            self.ficcrd_regs = None  # records leave MAPR/DPF out, never a stale value
            if not self._reg_failed:
                LOG.warning("%s: FICCRD registers not read over Thrift: %s", self.spec.name, exc)
            self._reg_failed = True

    def _start_ficcrd_read(self) -> None:
        """FICCRD's registers, read over Thrift in the background (a CLI run takes
        longer than a period), at most every ``register_read_every_s``: each record
        carries the newest completed read."""
        thrift = self.spec.thrift_port
        if not self.ficcrd_core or self.register_reader is None or thrift is None:
            return
        now = self.clock()
        if now - self._reg_started < self.register_read_every_s:
            return
        if self._reg_task is None or self._reg_task.done():
            self._reg_started = now
            self._reg_task = asyncio.create_task(self._read_ficcrd(thrift))

    async def step(self, sw: fy.Switch) -> None:
        """One period: one Read, the computation, at most one Write (rates, XCP
        factors and meters together), the records flushed. ``times`` keeps the
        period's perf_counter stamps (start, read, computed, written)."""
        t0 = time.perf_counter()
        now = self.clock()
        self._start_ficcrd_read()
        snap = await self.read_snapshot(sw)
        t1 = time.perf_counter()
        writes, meters = self.tick(snap, now)
        self.recorder.flush()
        t2 = time.perf_counter()
        await self.write(sw, writes + meters)
        self.times = (t0, t1, t2, time.perf_counter())

    def interval_of(self, port: int) -> float:
        """The port's control interval: XCP's own d for an XCP port, else the fixed
        period, or its d."""
        if self.xcp is not None and port in self.xcp.ports:
            return self.xcp.ports[port].ctl.interval_s
        if self.config.period_s is not None:
            return self.config.period_s
        return self.interval.get(port, INITIAL_INTERVAL_S)

    def baseline(self, snap: Snapshot, now: float) -> None:
        """Start every port's next interval at this read (first read, counter reset)."""
        self.prev, self.prev_t = snap, now
        for port in self.ports:
            self.port_prev[port.port] = (snap, now)
            self.port_due[port.port] = now + self.interval_of(port.port)
            self.drop_est[port.port] = QueueDropEstimator()
        for port in self.downstream_prev:  # the neighbour's totals re-baselined too
            self.downstream_prev[port] = None

    def tick(self, snap: Snapshot, now: float) -> tuple[list[Any], list[Any]]:
        """One read of the counters at `now`: every port whose interval has ended is
        measured since its own last read and controlled; the others wait. Returns
        the entities to write (rates and XCP factors, meters). Pure but for the
        agent's own state; the simulator calls it too, so both engines run this code.
        XCP first: every XCP port whose own d has elapsed gets new factors
        (``XcpPorts.step``), and its diagnostics go into the port's next record."""
        xcp_writes: list[Any] = []
        if self.xcp is not None:
            xcp_writes, xcp_info = self.xcp.step(snap, now)
            self.xcp_pending.update(xcp_info)
            self.xcp_tick_s()
        if self.board is not None:
            self.board.publish(self.spec.name, snap)
        if self.prev is None:
            self.baseline(snap, now)
            return xcp_writes, []
        self.prev, self.prev_t = snap, now
        due = [p.port for p in self.ports if self.port_due.get(p.port, now) <= now + DUE_SLACK_S]
        groups: dict[int, list[int]] = {}
        for port in due:
            groups.setdefault(id(self.port_prev[port][0]), []).append(port)
        writes: list[Any] = []
        meters: list[Any] = []
        for ports in groups.values():
            before, then = self.port_prev[ports[0]]
            delta, reset = counter_deltas(before, snap)
            if reset:
                self.resets += 1
                LOG.warning(
                    "%s: counters went backwards (switch restarted?): re-baselined",
                    self.spec.name,
                )
                self.baseline(snap, now)
                return xcp_writes, []
            if now - then <= 0:
                continue
            w, m = self.compute(delta, now - then, ports)
            writes += w
            meters += m
        for port in due:
            self.port_prev[port] = (snap, now)
            self.port_due[port] = now + self.interval_of(port)
        return xcp_writes + writes, meters

    def compute(
        self, delta: Snapshot, period: float, ports: list[int] | None = None
    ) -> tuple[list[Any], list[Any]]:
        """Pure part of an interval for `ports` (default: all) that share one delta:
        measurements -> decisions -> entities to write; each port's next interval
        (its mean carried RTT) is left in ``interval``. XCP's updates since a port's
        last record (``xcp_pending``) go into its record."""
        self.periods += 1
        writes: list[Any] = []
        meters: list[Any] = []
        t = self.wall()
        chosen = set(ports) if ports is not None else None
        exact_drops = delta.get(SIM_QUEUE_DROPS)
        for port in self.ports:
            if chosen is not None and port.port not in chosen:
                continue
            arrivals = delta.get(g.COUNTER_PORT_ARRIVALS, {}).get(port.port, (0, 0))
            departures = delta.get(g.COUNTER_PORT_DEPARTURES, {}).get(port.port, (0, 0))
            pkt_bytes = departures[1] / departures[0] if departures[0] else 1500.0
            depth = port.queue_depth or 64
            seen = queue_top_pkts(delta, port.port, self.qbuckets, depth)
            est = self.drop_est.setdefault(port.port, QueueDropEstimator())
            estimate = est.update(arrivals, departures, seen, pkt_bytes)
            drops = estimate if exact_drops is None else exact_drops.get(port.port, (0, 0))
            m = measure_port(
                delta,
                port.port,
                period,
                port.capacity_Bps,
                self.qbuckets,
                self.rbuckets,
                queue_drops=drops,
            )
            if m.rtt_mean_s and self.config.period_s is None:
                self.interval[port.port] = min(
                    self.config.period_max_s, max(self.config.period_min_s, m.rtt_mean_s)
                )
            record: dict[str, Any] = {
                "t": round(t, 4),
                "switch": self.spec.name,
                "port": port.port,
                "period_s": round(period, 5),
                "interval_s": self.interval_of(port.port),
                "capacity_Bps": port.capacity_Bps,
                "y_Bps": m.y_Bps,
                "departure_Bps": m.departure_Bps,
                "arrival_pkts": m.arrival_pkts,
                "departure_pkts": m.departure_pkts,
                "drop_pkts": m.drop_pkts,
                "queue_drop_pkts": m.queue_drop_pkts,
                "queue_drop_est_pkts": estimate[0],
                "queue_drops_exact": exact_drops is not None,
                "queue_mean_bytes": m.queue_mean_bytes,
                "queue_min_bytes": m.queue_min_bytes,
                "queue_overflow_pkts": queue_overflow(delta, port.port),
                "rtt_mean_s": m.rtt_mean_s,
                "syn_admitted": m.syn_admitted,
                "syn_dropped": m.syn_dropped,
                "syn_ungated": m.syn_ungated,
                "fins": m.fins,
                "rsts": m.rsts,
            }
            if self.config.ficcrd is not None:
                record.update(fc.port_events(delta, port.port))
                core = self.ficcrd_core.get(port.port)
                if core is not None:
                    record.update(fc.core_state(core, self.config.ficcrd, self.ficcrd_regs))
            if port.port in self.xcp_pending:
                record.update(self.xcp_pending.pop(port.port))
            ctl = self.rate_ctl.get(port.port)
            if ctl is not None:
                d = ctl.update(m)
                kbps = Bps_to_kbps(d.rate_Bps)
                self.feedback[port.port] = (kbps, d.congested)
                writes.append(ent.feedback_entry(port.port, kbps, d.congested))
                record.update(
                    rate_Bps=d.rate_Bps,
                    rate_kbps=kbps,
                    congested=d.congested,
                    **{k: v for k, v in d.diagnostics.items() if k not in record},
                )
            if port.port in self.windows:  # gated: its session step (FINs of every port)
                meter = self._session_step(
                    port.port, m, self.session_counts(port.port, delta), period, record
                )
                if meter is not None:
                    meters.append(meter)
            self.recorder.write(record)
        return writes, meters

    def _completions_sources(self) -> dict[int, str]:
        """Per gated port, where its session counts come from: the configured mode, but
        "reverse" for a "downstream" or "servers" port whose link leads to a host (no
        switch counts its flows after the queue; logged). Both need the agents to share
        a ``SessionBoard``: without one, a ValueError."""
        mode = self.config.session_completions
        if self.config.session == "off" and self.config.admit_fps is None:
            return {}
        out: dict[int, str] = {}
        for port in self.windows:
            out[port] = mode
            if mode not in ("downstream", "servers"):
                continue
            where = downstream_of(self.topo, self.spec.name, port)
            if where is None:
                LOG.warning(
                    "%s: gated port %d leads to a host: nothing counts its flows after the "
                    "queue, so session control counts them on this switch's other ports "
                    "(--session-completions reverse)",
                    self.spec.name,
                    port,
                )
                out[port] = "reverse"
                continue
            if self.board is None:
                raise ValueError(
                    f"{self.spec.name}: --session-completions {mode} counts gated port "
                    f"{port}'s flows at {where.switch}: the agents must share a SessionBoard "
                    "(app.build_agents and the simulator pass one)"
                )
            self.downstream[port] = where
            self.downstream_prev[port] = None
        return out

    def session_counts(self, port: int, delta: Snapshot) -> tuple[int, int]:
        """(completions, handshakes) of gated `port` in this period, counted where
        ``completions_from`` says: "servers", the servers' first FINs leaving this
        switch's other ports (``completions``) and the clients' SYNs that left the
        neighbour switch towards the servers; "downstream", the clients' first FINs and
        SYNs that left the neighbour (both got through this port's queue;
        session_counts.py); "reverse" / "same", ``completions`` and ``handshakes`` of
        this switch's own counters."""
        where = self.downstream.get(port)
        if where is None:
            return self.completions(port, delta), self.handshakes(port, delta)
        assert self.board is not None
        now = self.board.totals(where)
        if now is None:  # the neighbour not read yet
            counts = (0, 0)
        else:
            counts = downstream_step(self.downstream_prev[port], now)
            self.downstream_prev[port] = now
        if self.completions_from.get(port) == "servers":
            return self.completions(port, delta), counts[1]
        return counts

    def completions(self, port: int, delta: Snapshot) -> int:
        """Flows completed through gated `port` in this period, counted as first FINs
        (``FG_EVENT_FIN``: the switch's FIN filter counts a retransmitted copy as
        ``FG_EVENT_FIN_REPEAT``).

        "same": FINs leaving `port` itself (the clients' FINs when clients send
        through it). Under overload a client's FIN can leave the client before the
        data the queue dropped arrives, so it counts flows not yet complete (seen in
        the session-control lab, counting every copy: 250-300 FIN/s for 25 flows/s
        completed). "servers" (the default) and "reverse": FINs leaving the switch's
        other ports: the servers' FINs, sent once a flow's data has all arrived, on
        the uncongested reverse path; their retransmissions (the client's ACK of
        them dropped in the gated queue) are repeats. This assumes the other ports
        carry the reverse path of the gated port's flows and little else.
        ("downstream" counts at the next switch: ``session_counts``.)
        """
        if self.config.session_completions == "same":
            return event_count(delta, port, g.FG_EVENT_FIN)
        return sum(event_count(delta, p.port, g.FG_EVENT_FIN) for p in self.ports if p.port != port)

    def handshakes(self, port: int, delta: Snapshot) -> int:
        """Flows admitted into the network through gated `port` in this period: the SYN-ACKs
        leaving the switch's other ports (servers accepting handshakes, on the reverse path
        as the "reverse" completions). A SYN the gate admitted and the congested queue
        behind it dropped admits no flow, and its retry passes the gate again: in the
        lab-scale simulator a meter at 60 SYNs/s let 46 flows/s in. Strategy 2 compares
        these with the completions."""
        return sum(
            event_count(delta, p.port, g.FG_EVENT_SYNACK) for p in self.ports if p.port != port
        )

    def _session_step(
        self,
        port: int,
        m: Any,
        counts: tuple[int, int],
        period: float,
        record: dict[str, Any],
    ) -> Any:
        window = self.windows.get(port)
        sctl = self.session_ctl.get(port)
        if window is None or sctl is None:
            return None
        window.seconds += period
        window.admitted += m.syn_admitted + m.syn_ungated
        window.offered += m.syn_admitted + m.syn_ungated + m.syn_dropped
        completions, handshakes = counts
        window.fins += completions
        window.handshakes += handshakes
        record["completions"] = completions
        record["handshakes"] = handshakes
        record["completions_from"] = self.completions_from.get(port)
        record["admit_fps"] = self.admit.get(port)
        if window.seconds < self.config.session_window_s:
            return None
        admit = sctl.update(
            window.admitted, window.fins, window.seconds, window.offered, window.handshakes
        )
        record.update(
            window_completions_fps=window.fins / window.seconds,
            window_admitted_fps=window.admitted / window.seconds,
            window_connected_fps=window.handshakes / window.seconds,
            # the search's state: a restart (change detected, or periodic) counts up here
            # whether or not it opens the gate (a warm restart does not)
            session_phase=sctl.phase.value,
            session_restarts=sctl.restarts,
        )
        self.windows[port] = _SessionWindow()
        if port in self.admit and _same_rate(self.admit[port], admit):
            return None
        self.admit[port] = admit
        record["admit_fps"] = admit
        return ent.meter_entry(port, admit, self.config.meter_burst)

    def xcp_tick_s(self) -> float:
        """XCP: how often the loop must read so every XCP port runs within half a
        tick of its own d (half the shortest port interval, at least period_min)."""
        assert self.xcp is not None
        tick = self.xcp.min_interval_s() / 2
        if self.config.period_s is not None:
            tick = min(tick, self.config.period_s)
        tick = max(self.config.period_min_s, tick)
        self.xcp.tick_s = self.period_s = tick
        return tick


def _same_rate(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(round(a), round(b))
