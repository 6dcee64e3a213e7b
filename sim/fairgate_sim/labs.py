"""The labs' UDP scenarios in the simulator, reusing their definitions.

The topology, flow schedule, RTT, ``summarize`` and ``plot`` come from the BMv2
lab's own scenario classes (``fairgate_topo.scenarios``, importable without
Mininet), so ``summary.json`` has the lab's keys by construction.

Scales: ``lab`` is the lab itself (BMv2 queue rates in packets/s, 1 paper Mbit/s =
20 pkt/s of 1242 B). ``paper`` runs the paper's link rates in Mbit/s (byte-rate
links, same RTT, same schedule); its per-flow rates are reported divided by the
scale factor, i.e. in the lab's packet units, so the same summary keys, tolerances
and plots apply and both scales compare directly (``scaling.flow_rate_unit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairgate_sim.runner import Flow, RunConfig, UdpRun, port_series, start_udp
from fairgate_sim.topo import FAST_BPS, NetBuilder, NetSpec, from_lab

PAPER_BPS_PER_MBIT = 1e6 / 8


@dataclass(frozen=True)
class LabRun:
    spec: NetSpec
    flows: list[Flow]
    watch: dict[str, tuple[str, int]]  # result key -> (switch, port)
    end_s: float
    factor: float  # simulated packets/s per reported unit


def _unit_pps(module: Any) -> float:
    return float(module.UNIT_PPS)


def two_bottleneck(scale: str) -> tuple[Any, LabRun, float]:
    from fairgate_topo.scenarios import two_bottleneck as mod

    sc = mod.TwoBottleneck()
    dur = sc.duration(False)
    flows = [Flow(f"flow{i}", f"h{i}", f"r{i}", 0.0, dur) for i in (1, 2, 3)]
    if scale == "lab":
        lab = sc.topology(False)
        l1, l2 = lab.link("s1", "s2"), lab.link("s2", "s3")
        spec, factor = from_lab(lab), 1.0
        watch = {"link1": ("s1", l1.a_port), "link2": ("s2", l2.a_port)}
    else:
        b = NetBuilder()
        s1, s2, s3 = (b.add_switch(f"s{i}") for i in (1, 2, 3))
        fast = max(FAST_BPS, 4 * mod.LINK2 * PAPER_BPS_PER_MBIT)
        p1, _ = b.add_link(s1, s2, mod.LINK1 * PAPER_BPS_PER_MBIT, reverse_Bps=fast)
        p2, _ = b.add_link(s2, s3, mod.LINK2 * PAPER_BPS_PER_MBIT, reverse_Bps=fast)
        for h, sw in (("h1", s1), ("h2", s1), ("h3", s2), ("r1", s3), ("r2", s3), ("r3", s3)):
            b.add_host(h, sw, fast)
        spec = b.build()
        factor = (PAPER_BPS_PER_MBIT / spec.frame_bytes) / _unit_pps(mod)
        watch = {"link1": ("s1", p1), "link2": ("s2", p2)}
    return sc, LabRun(spec, flows, watch, dur + 1.0, factor), mod.RTT_MS / 1000


def convergence(scale: str) -> tuple[Any, LabRun, float]:
    from fairgate_topo.scenarios import convergence as mod

    sc = mod.Convergence()
    flows = [Flow(f.name, f.src, f.dst, f.start_s, f.stop_s) for f in sc.flows(False)]
    end = max(f.stop_s for f in flows) + 1.0
    if scale == "lab":
        lab = sc.topology(False)
        spec, factor = from_lab(lab), 1.0
        watch = {"link": ("s1", lab.link("s1", "s2").a_port)}
    else:
        b = NetBuilder()
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        fast = max(FAST_BPS, 4 * mod.LINK * PAPER_BPS_PER_MBIT)
        port, _ = b.add_link(s1, s2, mod.LINK * PAPER_BPS_PER_MBIT, reverse_Bps=fast)
        for i in range(1, 5):
            b.add_host(f"h{i}", s1, fast)
        for i in range(1, 5):
            b.add_host(f"r{i}", s2, fast)
        spec = b.build()
        factor = (PAPER_BPS_PER_MBIT / spec.frame_bytes) / _unit_pps(mod)
        watch = {"link": ("s1", port)}
    return sc, LabRun(spec, flows, watch, end, factor), mod.RTT_MS / 1000


def scale_note(scale: str, lr: LabRun) -> dict[str, Any]:
    if scale == "lab":
        return {"simulated": "the lab's BMv2 queue rates (packets/s), same RTT and schedule"}
    return {
        "simulated": "the paper's link rates (Mbit/s, byte-rate links), same RTT and schedule",
        "flow_rate_unit": f"flow rates are reported in lab units: simulated pkt/s / "
        f"{lr.factor:.3f} (1 paper Mbit/s = 1 Mbit/s here)",
    }


def run_lab(
    sc: Any, lr: LabRun, algo: str, rtt_s: float, seed: int, records: Path | None = None
) -> tuple[dict[str, Any], UdpRun]:
    """One algorithm's run in the lab's result format."""
    cfg = RunConfig(algo=algo, ack_delay_s=rtt_s, seed=seed, records=records)  # type: ignore[arg-type]
    run = start_udp(lr.spec, lr.flows, cfg)
    run.net.run(lr.end_s)
    records = run.controller.recorder.records
    flows = {
        name: [[t, round(v / lr.factor, 2)] for t, v in series]
        for name, series in run.series.items()
    }
    result: dict[str, Any] = {"flows": flows}
    for key, (sw, port) in lr.watch.items():
        result[key] = port_series(records, sw, port)
    if sc.name == "two-bottleneck":
        result["duration_s"] = max(f.stop_s for f in lr.flows)
    else:
        result["schedule"] = [[f.name, f.start_s, f.stop_s] for f in lr.flows]
    return result, run


LABS = {"two-bottleneck": two_bottleneck, "qfcp-convergence": convergence}
