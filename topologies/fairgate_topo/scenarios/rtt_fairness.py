"""QFCP Fig. 3: two long flows with round-trip propagation delays of 20 ms and
200 ms share one bottleneck: how long until both hold the fair share."""

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
from fairgate_topo.topos import dumbbell

UNIT_PPS = 20
LINK = 45
RTTS_MS = (20.0, 200.0)
BAND = 0.1  # "at the fair share": within 10 %
HOLD_S = 1.0  # ... for at least this long


def time_to_fair(series: list[list[float]], fair: float, hold_s: float = HOLD_S) -> float | None:
    """First time from which the flow stays within BAND of `fair` for `hold_s`."""
    start = None
    for t, v in series:
        if abs(v - fair) <= BAND * fair:
            if start is None:
                start = t
            if t - start >= hold_s:
                return round(start, 2)
        else:
            start = None
    return None


class RttFairness(Scenario):
    name = "rtt-fairness"
    algos = ("qfcp", "rcp", "lestas")
    paper = "QFCP (Pu, Hamdi) Fig. 3"

    def duration(self, smoke: bool) -> float:
        return 6.0 if smoke else 20.0

    def topology(self, smoke: bool) -> LabTopology:
        return dumbbell(2, LINK * UNIT_PPS)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "unit": f"1 paper Mbit/s = {UNIT_PPS} pkt/s of 1242 B frames "
            f"({pps_to_kbps(UNIT_PPS) / 1000:.3f} Mbit/s)",
            "bottleneck_pps": LINK * UNIT_PPS,
            "rtt_ms": list(RTTS_MS),
            "duration_s": self.duration(smoke),
            "paper": "45 Mbit/s, RTPD 20 ms and 200 ms; QFCP ~1.5 s to the fair rate, XCP 10 s",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, LAB_PERIOD)
        start_receivers(ctx, {"r1": RTTS_MS[0], "r2": RTTS_MS[1]})
        dur = self.duration(ctx.smoke)
        flows = [
            UdpFlow(f"rtt{int(r)}ms", f"h{i}", f"r{i}", 0.0, dur) for i, r in ((1, 20), (2, 200))
        ]
        port = ctx.topology.link("s1", "s2").a_port
        run_udp_schedule(ctx, flows, SENDER_MODE[ctx.algo], [("s1", port)])
        by_ip = flow_series(ctx.run_dir, ctx.t0, ctx.topology.frame_bytes)
        return {
            "duration_s": dur,
            "flows": {f.name: by_ip.get(ctx.ip(f.src), []) for f in flows},
            "link": port_series(read_jsonl(ctx.records_path), "s1", port, ctx.t0),
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        fair = LINK * UNIT_PPS / 2
        out: dict[str, Any] = {"fair_pps": fair, "band": BAND, "hold_s": HOLD_S}
        for algo, run in runs.items():
            dur = run["duration_s"]
            times = {n: time_to_fair(s, fair) for n, s in run["flows"].items()}
            link = run["link"]
            util = [u for t, u in zip(link["t"], link["util"], strict=True) if 1 <= t < dur]
            out[algo] = {
                "time_to_fair_s": times,
                "converged_s": None if None in times.values() else max(times.values()),
                "final_pps": {
                    n: round(window_mean(s, dur / 2, dur), 1) for n, s in run["flows"].items()
                },
                "mean_utilisation": round(sum(util) / len(util), 3) if util else None,
                "max_queue_pkts": round(max(link["queue_pkts"]), 1) if link["t"] else None,
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        fair = LINK * UNIT_PPS / 2
        return [
            plots.rates_and_port(
                run_dir / f"rtt-fairness-{algo}.png",
                f"RTT 20 ms vs 200 ms ({algo}), fair share {fair:.0f} pkt/s",
                run["flows"],
                run["link"],
                dict.fromkeys(run["flows"], fair),
            )
            for algo, run in runs.items()
        ]
