"""The controller in the simulator: the real agent's ``SwitchAgent.compute`` per switch.

Whenever one of a switch's ports is due (every port has its own timer: the fixed
``ControlConfig.period_s``, or the mean RTT its packets carried in its last interval
when that is None) the adapter reads the switch's counters as a ``Snapshot`` and hands
it to ``SwitchAgent.tick`` -- the same per-port deltas -> measure_port -> algorithm ->
record path as on BMv2 -- then applies what the agent would write: every port's
``port_feedback`` entry (from ``agent.feedback``) and the SYN meters it returned.
The snapshot also carries the queues' exact drops (``SIM_QUEUE_DROPS``), which the
agent uses instead of its estimate from arrivals and departures. Only the I/O is
replaced; P4Runtime latency is taken as zero. With ``ControlConfig.ficcrd`` the
switches get the controller's FICCRD table entries and clone sessions
(``ficcrd.table_entries`` / ``clone_sessions``, what ``install()`` writes).

With ``algo = "xcp"`` every switch port also gets its own XCP timer (``_xcp_period``):
at each expiry the deltas of the port's counters since the last one (arrivals,
departures, queue-depth, RTT and xcp_ratio histograms, what BMv2 gives) make an
``XcpSample`` through ``telemetry.xcp_sample``, ``XcpController`` computes xi_p and
xi_n, their Q8.8 encoding (``xcp_math.encode_factor``) goes into the switch's
``xcp_factors``, and the next expiry is one average RTT d later (d from the sample, as
the paper's control interval). Before the first expiry a port holds an idle port's factors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_controller import ficcrd as fc
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.algorithms import XcpController, XcpSample
from fairgate_controller.records import Recorder
from fairgate_controller.telemetry import Snapshot, counter_deltas, xcp_sample
from fairgate_p4.xcp_math import encode_factor
from fairgate_sim.ficcrd import SimFiccrd
from fairgate_sim.network import Network
from fairgate_sim.switch import SimSwitch


class MemoryRecorder(Recorder):
    """The agent's recorder, also keeping every record in memory."""

    def __init__(self, path: Path | None = None) -> None:
        super().__init__(path)
        self.records: list[dict[str, Any]] = []

    def write(self, record: dict[str, Any]) -> None:
        super().write(record)
        self.records.append(record)


@dataclass
class SimController:
    net: Network
    config: ControlConfig
    recorder: MemoryRecorder = field(default_factory=MemoryRecorder)
    start_s: float = 0.0
    agents: dict[str, SwitchAgent] = field(default_factory=dict)
    xcp: dict[tuple[str, int], XcpController] = field(default_factory=dict)
    xcp_records: list[dict[str, Any]] = field(default_factory=list)
    _xcp_prev: dict[tuple[str, int], tuple[float, Snapshot]] = field(default_factory=dict)
    # per switch: port -> its last XCP update since the switch's last period, added to
    # that port's period record as the BMv2 agent does (xcp_ports.XcpPorts.step's keys)
    _xcp_info: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    # per switch: its FICCRD state, whose registers the agent's records read
    ficcrd: dict[str, SimFiccrd] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clock = self.net.clock
        topo = self.net.spec.topo
        for name, spec in topo.switches.items():
            agent = SwitchAgent(
                spec,
                topo,
                self.config,
                self.recorder,
                clock=lambda: clock.now,
                wall=lambda: clock.now,
            )
            sw = self.net.switches[name]
            # What install() writes: buckets (the switch uses the agent's), admission
            # ports, the initial rates and meters.
            sw.qbuckets, sw.rbuckets = agent.qbuckets, agent.rbuckets
            sw.__post_init__()
            agent.ensure_controllers()
            sw.admission = set(agent.windows)
            if self.config.algo != "none":
                for port, (kbps, congested) in agent.feedback.items():
                    sw.set_feedback(port, kbps, congested)
            for port in agent.windows:
                sw.set_meter(port, agent.admit.get(port), self.config.meter_burst)
            if self.config.ficcrd is not None:
                ficcrd = SimFiccrd()
                ficcrd.install(
                    fc.table_entries(topo, name, self.config.ficcrd), fc.clone_sessions(topo, name)
                )
                sw.enable_ficcrd(ficcrd)
                self.ficcrd[name] = ficcrd
            self.agents[name] = agent
            clock.at(self.start_s, self._period, name)
            if self.config.algo == "xcp":
                for port in agent.ports:
                    ctl = self.xcp[(name, port.port)] = XcpController(port.capacity_Bps)
                    # an idle port's factors until the first interval ends
                    idle = ctl.update(XcpSample(0.0, 0.0, 0.0, None, 0.0, ctl.interval_s))
                    sw.set_xcp_factors(
                        port.port, encode_factor(idle.xi_p), encode_factor(idle.xi_n)
                    )
                    clock.at(self.start_s, self._xcp_period, name, port.port)

    def _xcp_period(self, name: str, port: int) -> None:
        """One XCP control interval of one port; the next one is d later."""
        clock, sw = self.net.clock, self.net.switches[name]
        agent, ctl = self.agents[name], self.xcp[(name, port)]
        snap, now = sw.port_snapshot(port), clock.now
        prev = self._xcp_prev.get((name, port))
        self._xcp_prev[(name, port)] = (now, snap)
        if prev is not None and now > prev[0]:
            delta, _reset = counter_deltas(prev[1], snap)
            sample = xcp_sample(
                delta, port, now - prev[0], agent.qbuckets, agent.rbuckets, sw.xbuckets
            )
            d = ctl.update(sample)
            lg_p, lg_n = encode_factor(d.xi_p), encode_factor(d.xi_n)
            sw.set_xcp_factors(port, lg_p, lg_n)
            self._xcp_info.setdefault(name, {})[port] = {
                "xcp_interval_s": sample.interval_s,
                "xcp_sum_s_bytes": sample.sum_s_bytes,
                "xcp_sum_rtt_s_over_cwnd": sample.sum_rtt_s_over_cwnd,
                "xcp_lg_xi_p": lg_p,
                "xcp_lg_xi_n": lg_n,
                **{f"xcp_{k}": v for k, v in d.diagnostics.items()},
            }
            self.xcp_records.append(
                {
                    "t": round(now, 4),
                    "switch": name,
                    "port": port,
                    "lg_xi_p": lg_p,
                    "lg_xi_n": lg_n,
                    "interval_s": sample.interval_s,
                    **d.diagnostics,
                }
            )
        clock.after(ctl.interval_s, self._xcp_period, name, port)

    def _period(self, name: str) -> None:
        clock = self.net.clock
        agent, sw = self.agents[name], self.net.switches[name]
        now = clock.now
        agent.xcp_pending.update(self._xcp_info.pop(name, {}))
        fic = self.ficcrd.get(name)
        if fic is not None:  # what the BMv2 agent reads over Thrift
            agent.ficcrd_regs = {
                "ficcrd_mapr": list(fic.mapr),
                "ficcrd_queue_seen": list(fic.queue_seen),
            }
        _writes, meters = agent.tick(sw.read(), now)
        self._apply(agent, sw, meters)
        clock.at(max(agent.next_wakeup(now), now + 1e-6), self._period, name)

    def _apply(self, agent: SwitchAgent, sw: SimSwitch, meters: list[Any]) -> None:
        if self.config.algo != "none":
            for port, (kbps, congested) in agent.feedback.items():
                sw.set_feedback(port, kbps, congested)
        for entry in meters:
            cfg = entry.config
            if cfg is None:
                sw.set_meter(entry.index, None)
            else:
                sw.set_meter(entry.index, float(cfg.pir), int(cfg.pburst))
