"""The parking lot (Lestas Figs. 8-9) as fixed simulator runs, for the golden digests
(``tests/unit/sim/golden_runs.py``) and ``benchmarks/bench_sim.py``.

Experiments run from ``experiments/parking-lot.toml`` (``make sim EXP=parking-lot``);
this module only keeps the two networks those checks were recorded on: the BMv2 lab's
(read from ``labdata/parking-lot.json``: 4 links of 400 / 400 / 200 / 400 pkt/s, one
long and one cross flow per link) and the paper's (8 links of 155 Mbit/s, link 4 80,
15 ms each, 20 long + 20 one-hop users per link, buffer one BDP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_sim import labdata
from fairgate_sim.network import Network
from fairgate_sim.runner import Flow
from fairgate_sim.simlab import FlowLab, FlowRun, start_flows
from fairgate_sim.topo import FAST_BPS, NetBuilder, NetSpec

LAB_LINK_DELAY_S = 0.015  # each link, one way (the lab emulates it with ack delays)
LAB_Q_REF_1500 = 10  # q_ref in 1500 B packets
PAPER_FRAME = 1000  # Lestas: 1000 B packets (958 B UDP payload + 42 B headers)
PAPER_Q_REF = 100  # packets
PAPER_BPS_PER_MBIT = 1e6 / 8
PAPER_LINKS_MBPS = (155, 155, 155, 80, 155, 155, 155, 155)
PAPER_USERS = 20  # per group
PAPER_HOSTS = 5  # per group: access delays 0, 0.5, .. 2 ms

Runner = Callable[[FlowLab, str, int, Path | None, list[tuple[str, int]]], FlowRun]


def lab_spec() -> tuple[NetSpec, list[tuple[str, int]]]:
    """The lab's network (as ``topo.from_lab`` builds it) and its link ports s<i> -> s<i+1>."""
    spec, _ = labdata.load("parking-lot")
    k = len(spec.topo.switches) - 1
    return spec, [(f"s{i}", labdata.link_port(spec, f"s{i}", f"s{i + 1}")) for i in range(1, k + 1)]


def port_drops(records: list[dict[str, Any]], switch: str, port: int, t_from: float) -> int:
    """Packets one port's queue dropped from ``t_from`` to the end of the run: arrivals
    - departures over the periods plus what was queued at ``t_from`` (the lab's
    ``series.port_drops`` with t0 = 0)."""
    rs = [r for r in records if r["switch"] == switch and r["port"] == port]
    after = [r for r in rs if r["t"] >= t_from]
    before = [r for r in rs if r["t"] < t_from]
    total = max(0, sum(r["arrival_pkts"] - r["departure_pkts"] for r in rs))
    if not before:
        return total
    queued = before[-1]["queue_mean_bytes"] / 1242
    net = sum(r["arrival_pkts"] - r["departure_pkts"] for r in after)
    return min(total, max(0, round(net + queued)))


def _sum_series(series: list[list[list[float]]]) -> list[list[float]]:
    """Sum of series sampled at the same instants (the sampler's grid)."""
    acc: dict[float, float] = {}
    for s in series:
        for t, v in s:
            acc[t] = acc.get(t, 0.0) + v
    return [[t, round(v, 2)] for t, v in sorted(acc.items())]


def _run(lab: FlowLab, algo: str, seed: int, records: Path | None, watch: list[Any]) -> FlowRun:
    r = start_flows(lab, algo, seed, records, watch)
    r.net.run(lab.end_s)
    return r


@dataclass
class ParkingLotRun:
    """One network, its flows (grouped) and the ports it reports."""

    lab: FlowLab
    ports: list[tuple[str, int]]
    groups: dict[str, list[str]]
    duration_s: float
    runner: Runner = field(default=_run)

    def run(self, algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        r = self.runner(self.lab, algo, seed, records, self.ports)
        recs = r.records
        ports = self.ports
        flows = [n for names in self.groups.values() for n in names]
        return {
            "duration_s": self.duration_s,
            "flows": {
                g: _sum_series([r.flow_series(n) for n in names])
                for g, names in self.groups.items()
            },
            "links": {f"link{i}": r.port_series(sw, p) for i, (sw, p) in enumerate(ports, start=1)},
            "drops_after_2s": sum(port_drops(recs, sw, p, 2.0) for sw, p in ports),
            "sender_losses": r.losses(flows),
            "sim_port_drops": sum(r.net.switches[sw].ports[p].stats.dropped for sw, p in ports),
        }, r.net


def lab(smoke: bool) -> ParkingLotRun:
    """The BMv2 lab's network: one long flow h0 -> r0, cross flows h<i> -> r<i>."""
    spec, ports = lab_spec()
    k = len(ports)
    dur = 9.0 if smoke else 30.0
    flows = [Flow("long", "h0", "r0", 0.0, dur)]
    flows += [Flow(f"cross{i}", f"h{i}", f"r{i}", 0.1 * i, dur) for i in range(1, k + 1)]
    delays = {"r0": 2 * k * LAB_LINK_DELAY_S}
    delays |= {f"r{i}": 2 * LAB_LINK_DELAY_S for i in range(1, k + 1)}
    flow_lab = FlowLab(spec, flows, delays, dur + 1.0, LAB_Q_REF_1500)
    return ParkingLotRun(flow_lab, ports, {f.name: [f.name] for f in flows}, dur)


def paper(smoke: bool, runner: Runner = _run) -> ParkingLotRun:
    """Lestas Figs. 8-9 as published (byte-rate links, propagation delays)."""
    dur = 9.0 if smoke else 30.0
    b = NetBuilder(frame_bytes=PAPER_FRAME)
    k = len(PAPER_LINKS_MBPS)
    sws = [b.add_switch(f"s{i}") for i in range(1, k + 2)]
    long_rtt_s = 2 * k * LAB_LINK_DELAY_S
    buffer = round(max(c * PAPER_BPS_PER_MBIT / PAPER_FRAME for c in PAPER_LINKS_MBPS) * long_rtt_s)
    fast = max(FAST_BPS, 4 * 155 * PAPER_BPS_PER_MBIT)
    ports = []
    for i, c in enumerate(PAPER_LINKS_MBPS):
        p, _ = b.add_link(
            sws[i], sws[i + 1], c * PAPER_BPS_PER_MBIT, delay_s=LAB_LINK_DELAY_S, depth=buffer
        )
        ports.append((sws[i], p))
    flows: list[Flow] = []
    groups: dict[str, list[str]] = {}
    for g, (a, z) in enumerate([(0, k), *[(i, i + 1) for i in range(k)]]):
        name = "long" if g == 0 else f"cross{g}"
        for h in range(PAPER_HOSTS):
            b.add_host(f"h{g}_{h}", sws[a], fast, delay_s=0.0005 * h)
            b.add_host(f"r{g}_{h}", sws[z], fast)
        groups[name] = []
        for u in range(PAPER_USERS):
            fname = f"{name}-{u + 1}"
            start = 0.1 * g + 0.01 * u  # users enter a few ms apart
            flows.append(
                Flow(fname, f"h{g}_{u % PAPER_HOSTS}", f"r{g}_{u % PAPER_HOSTS}", start, dur)
            )
            groups[name].append(fname)
    spec = b.build()
    q_ref = PAPER_Q_REF * PAPER_FRAME / 1500
    flow_lab = FlowLab(spec, flows, {}, dur + 1.0, q_ref, PAPER_FRAME - 42, exact_queue=True)
    return ParkingLotRun(flow_lab, ports, groups, dur, runner)
