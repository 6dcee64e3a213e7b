"""QFCP Fig. 4: flows 1-2 share link 1 (20 units), flow 3 joins them on link 2
(50 units): max-min shares 10/10/30."""

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
    port_series,
    read_jsonl,
    run_udp_schedule,
    start_receivers,
    window_mean,
)
from fairgate_topo.topos import two_bottleneck

UNIT_PPS = 20  # one paper Mbit/s = 20 packets/s of 1242 B (0.199 Mbit/s)
LINK1, LINK2 = 20, 50  # paper Mbit/s
RTT_MS = 40.0  # not given for Fig. 4; Fig. 2's RTPD
TOLERANCE = 0.15


class TwoBottleneck(Scenario):
    name = "two-bottleneck"
    paper = "QFCP (Pu, Hamdi) Fig. 4"

    def duration(self, smoke: bool) -> float:
        return 8.0 if smoke else 25.0

    def topology(self, smoke: bool) -> LabTopology:
        return two_bottleneck(LINK1 * UNIT_PPS, LINK2 * UNIT_PPS)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "unit": f"1 paper Mbit/s = {UNIT_PPS} pkt/s of 1242 B frames "
            f"({pps_to_kbps(UNIT_PPS) / 1000:.3f} Mbit/s)",
            "link1_pps": LINK1 * UNIT_PPS,
            "link2_pps": LINK2 * UNIT_PPS,
            "rtt_ms": RTT_MS,
            "duration_s": self.duration(smoke),
            "paper": "20 and 50 Mbit/s links; flows 10/10/30 Mbit/s",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, LAB_PERIOD)
        start_receivers(ctx, {f"r{i}": RTT_MS for i in (1, 2, 3)})
        dur = self.duration(ctx.smoke)
        flows = [UdpFlow(f"flow{i}", f"h{i}", f"r{i}", 0.0, dur) for i in (1, 2, 3)]
        link1, link2 = ctx.topology.link("s1", "s2"), ctx.topology.link("s2", "s3")
        run_udp_schedule(
            ctx, flows, SENDER_MODE[ctx.algo], [("s1", link1.a_port), ("s2", link2.a_port)]
        )
        records = read_jsonl(ctx.records_path)
        by_ip = flow_series(ctx.run_dir, ctx.t0, ctx.topology.frame_bytes)
        series = {f.name: by_ip.get(ctx.ip(f.src), []) for f in flows}
        return {
            "duration_s": dur,
            "flows": series,
            "link1": port_series(records, "s1", link1.a_port, ctx.t0),
            "link2": port_series(records, "s2", link2.a_port, ctx.t0),
        }

    def expected_pps(self) -> dict[str, float]:
        return {
            "flow1": LINK1 * UNIT_PPS / 2,
            "flow2": LINK1 * UNIT_PPS / 2,
            "flow3": (LINK2 - LINK1) * UNIT_PPS,
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"expected_pps": self.expected_pps(), "tolerance": TOLERANCE}
        window = 2.0 if smoke else 5.0
        for algo, run in runs.items():
            dur = run["duration_s"]
            final = {
                name: round(window_mean(s, dur - window, dur), 1)
                for name, s in run["flows"].items()
            }
            errors = {
                name: round(abs(final[name] - exp) / exp, 3)
                for name, exp in self.expected_pps().items()
            }
            paper_units = {name: round(v / UNIT_PPS, 1) for name, v in final.items()}
            link2 = run["link2"]
            tail = [
                u for t, u in zip(link2["t"], link2["util"], strict=True) if dur - window <= t < dur
            ]
            queues = link2["queue_pkts"] + run["link1"]["queue_pkts"]
            out[algo] = {
                "final_window_s": [dur - window, dur],
                "final_pps": final,
                "final_paper_mbps": paper_units,
                "relative_error": errors,
                "max_relative_error": max(errors.values()),
                "within_tolerance": max(errors.values()) <= TOLERANCE,
                "link2_utilisation_final": round(sum(tail) / len(tail), 3) if tail else None,
                "max_queue_pkts": round(max(queues), 1) if queues else None,
                "drops_pkts": sum(link2["drops"]) + sum(run["link1"]["drops"]),
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        paths = []
        for algo, run in runs.items():
            paths.append(
                plots.rates_and_port(
                    run_dir / f"two-bottleneck-{algo}.png",
                    f"Two bottlenecks ({algo}): expected 10/10/30 units "
                    f"= {'/'.join(str(int(v)) for v in self.expected_pps().values())} pkt/s",
                    run["flows"],
                    run["link2"],
                    self.expected_pps(),
                )
            )
        return paths
