"""The TCP traffic generator in the simulator: ``fairgate_hosts.traffic.client``'s
workload (the same seeded ``Workload``, or any list of flows) opened as ``TcpFlow``s at
their arrival times, recorded as the client's ``FlowRecord``s so that
``traffic.records.summarize`` gives the lab's client summary."""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from fairgate_hosts.traffic.records import FlowRecord
from fairgate_hosts.traffic.workload import FlowSpec
from fairgate_sim.engine import Clock
from fairgate_sim.network import SimHost
from fairgate_sim.tcp import SERVER_PORT, TcpConfig, TcpFlow


def flow_record(spec: FlowSpec, flow: TcpFlow) -> FlowRecord:
    """The client's record of one flow (times from the run's start, as the lab's)."""
    connected = flow.connect_s is not None
    return FlowRecord(
        flow=spec.index,
        scheduled_s=spec.start_s,
        size=spec.size_bytes,
        start_s=flow.start_s,
        outcome=flow.outcome or "interrupted",
        phase=flow.phase,
        connect_s=flow.connect_s,
        fct_s=flow.fct_s,
        end_s=flow.end_s if flow.end_s is not None else flow.clock.now,
        syn_retrans=flow.syn_attempts - 1 if connected else None,
        retrans=flow.retransmits + max(0, flow.syn_attempts - 1),
        sent=flow.bytes_sent,
    )


@dataclass(eq=False)
class TcpClient:
    """Opens one ``TcpFlow`` per arrival; beyond ``max_open`` concurrent flows an
    arrival is recorded as ``capped`` (the lab's socket cap). ``finish()`` records the
    flows still open as ``interrupted`` (the lab cancels them after its drain)."""

    clock: Clock
    host: SimHost
    dst: str
    flows: Iterable[FlowSpec]
    cfg: TcpConfig = field(default_factory=TcpConfig)
    dport: int = SERVER_PORT
    max_open: int | None = None
    seed: int | str = 1  # for the per-packet jitter (cfg.jitter_s > 0)
    records: list[FlowRecord] = field(default_factory=list)
    open: dict[int, tuple[FlowSpec, TcpFlow]] = field(default_factory=dict)
    peak_open: int = 0
    capped: int = 0
    stopped: bool = False

    def __post_init__(self) -> None:
        self._it: Iterator[FlowSpec] = iter(self.flows)
        self._rng = random.Random(self.seed)
        self._schedule_next()

    def _schedule_next(self) -> None:
        spec = next(self._it, None)
        if spec is not None:
            self.clock.at(spec.start_s, self._arrive, spec)

    def _arrive(self, spec: FlowSpec) -> None:
        if self.stopped:
            return
        self._schedule_next()
        if self.max_open is not None and len(self.open) >= self.max_open:
            self.capped += 1
            self.records.append(
                FlowRecord(spec.index, spec.start_s, spec.size_bytes, outcome="capped")
            )
            return
        flow = TcpFlow(
            self.clock, self.host, self.dst, spec.size_bytes, self.cfg, self.dport, rng=self._rng
        )
        flow.on_end = lambda f, s=spec: self._ended(s, f)
        self.open[spec.index] = (spec, flow)
        self.peak_open = max(self.peak_open, len(self.open))
        flow.start()

    def _ended(self, spec: FlowSpec, flow: TcpFlow) -> None:
        self.open.pop(spec.index, None)
        self.records.append(flow_record(spec, flow))

    def finish(self) -> None:
        """Stop arrivals; record every open flow as interrupted."""
        self.stopped = True
        for spec, flow in self.open.values():
            flow.outcome = "interrupted"
            self.records.append(flow_record(spec, flow))
            flow.timer.cancel()
            flow.state = "done"
        self.open.clear()
        self.records.sort(key=lambda r: r.flow)

    def stats(self) -> dict[str, int]:
        return {"peak_open": self.peak_open, "capped": self.capped}
