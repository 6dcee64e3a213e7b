"""QFCP Fig. 2: four flows on one bottleneck start at 0, 2, 4, 6 s and stop at
14, 12, 10, 8 s; per-flow rate and utilisation, for qfcp, rcp and lestas."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabTopology, pps_to_kbps
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import (
    LAB_PERIOD,
    SENDER_MODE,
    LabContext,
    UdpFlow,
    flow_series,
    jain,
    port_series,
    read_jsonl,
    run_udp_schedule,
    start_receivers,
    window_mean,
)
from fairgate_topo.topos import dumbbell

UNIT_PPS = 20  # one paper Mbit/s = 20 pkt/s of 1242 B frames
LINK = 45  # paper Mbit/s
RTT_MS = 40.0
STARTS = (0.0, 2.0, 4.0, 6.0)
STOPS = (14.0, 12.0, 10.0, 8.0)


class Convergence(Scenario):
    name = "qfcp-convergence"
    algos = ("qfcp", "rcp", "lestas")
    paper = "QFCP (Pu, Hamdi) Fig. 2"

    def time_scale(self, smoke: bool) -> float:
        return 0.5 if smoke else 1.0

    def topology(self, smoke: bool) -> LabTopology:
        return dumbbell(4, LINK * UNIT_PPS)

    def flows(self, smoke: bool) -> list[UdpFlow]:
        k = self.time_scale(smoke)
        return [
            UdpFlow(f"flow{i + 1}", f"h{i + 1}", f"r{i + 1}", a * k, b * k)
            for i, (a, b) in enumerate(zip(STARTS, STOPS, strict=True))
        ]

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "unit": f"1 paper Mbit/s = {UNIT_PPS} pkt/s of 1242 B frames "
            f"({pps_to_kbps(UNIT_PPS) / 1000:.3f} Mbit/s)",
            "bottleneck_pps": LINK * UNIT_PPS,
            "rtt_ms": RTT_MS,
            "time_scale": self.time_scale(smoke),
            "paper": "45 Mbit/s, RTPD 40 ms, flows start 0/2/4/6 s, stop 14/12/10/8 s",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, LAB_PERIOD)
        start_receivers(ctx, {f"r{i}": RTT_MS for i in range(1, 5)})
        flows = self.flows(ctx.smoke)
        port = ctx.topology.link("s1", "s2").a_port
        run_udp_schedule(ctx, flows, SENDER_MODE[ctx.algo], [("s1", port)])
        by_ip = flow_series(ctx.run_dir, ctx.t0, ctx.topology.frame_bytes)
        return {
            "flows": {f.name: by_ip.get(ctx.ip(f.src), []) for f in flows},
            "schedule": [[f.name, f.start_s, f.stop_s] for f in flows],
            "link": port_series(read_jsonl(ctx.records_path), "s1", port, ctx.t0),
        }

    def phases(self, smoke: bool) -> list[tuple[float, float, list[str]]]:
        """(from, to, active flows) between consecutive start/stop events."""
        flows = self.flows(smoke)
        events = sorted({f.start_s for f in flows} | {f.stop_s for f in flows})
        out = []
        for a, b in zip(events, events[1:], strict=False):
            active = [f.name for f in flows if f.start_s <= a and f.stop_s >= b]
            out.append((a, b, active))
        return out

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        cap = LINK * UNIT_PPS
        out: dict[str, Any] = {"capacity_pps": cap}
        for algo, run in runs.items():
            phases = []
            for a, b, active in self.phases(smoke):
                mid = (a + b) / 2  # the second half of each phase: after convergence
                rates = {n: round(window_mean(run["flows"][n], mid, b), 1) for n in active}
                link = run["link"]
                util = [u for t, u in zip(link["t"], link["util"], strict=True) if mid <= t < b]
                phases.append(
                    {
                        "window_s": [mid, b],
                        "flows": len(active),
                        "fair_pps": round(cap / len(active), 1),
                        "rates_pps": rates,
                        "jain": round(jain(list(rates.values())), 3),
                        "mean_rate_over_fair": round(
                            sum(rates.values()) / len(rates) / (cap / len(active)), 3
                        ),
                        "utilisation": round(sum(util) / len(util), 3) if util else None,
                    }
                )
            end = max(s[2] for s in run["schedule"])
            link = run["link"]
            util = [u for t, u in zip(link["t"], link["util"], strict=True) if 0.5 <= t < end]
            queue = [q for t, q in zip(link["t"], link["queue_pkts"], strict=True) if t < end]
            out[algo] = {
                "phases": phases,
                "mean_utilisation": round(sum(util) / len(util), 3) if util else None,
                "min_jain": min(p["jain"] for p in phases),
                "mean_queue_pkts": round(sum(queue) / len(queue), 1) if queue else None,
                "max_queue_pkts": round(max(queue), 1) if queue else None,
                "drops_pkts": sum(link["drops"]),
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        return [
            plots.rates_and_port(
                run_dir / f"convergence-{algo}.png",
                f"Four flows joining and leaving ({algo}), bottleneck {LINK * UNIT_PPS} pkt/s",
                run["flows"],
                run["link"],
            )
            for algo, run in runs.items()
        ]
