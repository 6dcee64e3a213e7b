"""The flows a TCP generator offers, the same for both engines."""

from __future__ import annotations

from fairgate_exp.plan import TcpPlan
from fairgate_hosts.traffic.workload import FlowSpec, Workload

#: The hosts' sender mode under each algorithm, both engines (RCP hosts are QFCP hosts).
SENDER_MODE = {"qfcp": "qfcp", "rcp": "qfcp", "lestas": "lestas", "xcp": "xcp", "none": "qfcp"}


def tcp_specs(gen: TcpPlan, seed: int) -> list[FlowSpec]:
    """The generator's flows (arrival time since time 0, bytes): ``count`` bulk flows at
    its start, or the hosts' seeded Poisson/Pareto ``Workload`` (the traffic client's)
    shifted to its start; with ``whole_segments`` every size is rounded up to segments."""
    if gen.kind == "bulk":
        return [FlowSpec(i, gen.start_s, gen.size) for i in range(gen.count)]
    assert gen.arrival_rate is not None
    wl = Workload(gen.arrival_rate, gen.pareto_shape, gen.mean_size, seed, gen.max_size)
    m = gen.mss if gen.whole_segments else 1
    return [
        FlowSpec(f.index, gen.start_s + f.start_s, -(-f.size_bytes // m) * m)
        for f in wl.flows(gen.stop_s - gen.start_s)
    ]
