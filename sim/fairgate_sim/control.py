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

With ``algo = "xcp"`` the agent's own ``XcpPorts`` (xcp_ports.py) runs inside
``SwitchAgent.tick``, as on BMv2: every XCP port whose d has elapsed gets xi_p and xi_n
from the deltas of its own counters, and the loop wakes as ``next_wakeup`` says (XCP's
tick included). The adapter writes the factors it changed into the switch's
``xcp_factors``; before the first update a port holds an idle port's factors (what
``install()`` writes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_controller import ficcrd as fc
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.session_counts import SessionBoard
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
    # per switch: its FICCRD state, whose registers the agent's records read
    ficcrd: dict[str, SimFiccrd] = field(default_factory=dict)

    def __post_init__(self) -> None:
        clock = self.net.clock
        topo = self.net.spec.topo
        board = SessionBoard()  # as app.build_agents: "downstream" session counts
        for name, spec in topo.switches.items():
            agent = SwitchAgent(
                spec,
                topo,
                self.config,
                self.recorder,
                clock=lambda: clock.now,
                wall=lambda: clock.now,
                board=board,
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
            if agent.xcp is not None:  # install(): bucket bounds and idle factors
                sw.xbuckets = agent.xcp.xbuckets
                for port, xp in agent.xcp.ports.items():
                    sw.set_xcp_factors(port, *xp.factors)

    def _period(self, name: str) -> None:
        clock = self.net.clock
        agent, sw = self.agents[name], self.net.switches[name]
        now = clock.now
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
        if agent.xcp is not None:  # the xcp_factors entries tick() wrote
            for port, xp in agent.xcp.ports.items():
                if sw.xcp_factors.get(port) != xp.factors:
                    sw.set_xcp_factors(port, *xp.factors)
        for entry in meters:
            cfg = entry.config
            if cfg is None:
                sw.set_meter(entry.index, None)
            else:
                sw.set_meter(entry.index, float(cfg.pir), int(cfg.pburst))
