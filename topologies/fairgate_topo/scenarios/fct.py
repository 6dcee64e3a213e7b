"""QFCP Fig. 1 (scaled): Poisson arrivals of Pareto-sized flows at load ~1 on
one bottleneck; mean flow completion time vs flow size for qfcp and rcp (UDP
host agents, one sender process per flow) and kernel TCP (the traffic
generator, no rate control in the switch)."""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabTopology, pps_to_kbps
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import LAB_PERIOD, PY, LabContext, read_jsonl
from fairgate_topo.scenarios.schedule import Job, run_jobs
from fairgate_topo.topos import fan_in

LINK_PPS = 120  # paper: 150 Mbit/s of 1000 B packets = 18750 pkt/s
RTT_MS = 100.0  # paper: RTPD 100 ms
PAYLOAD = 1200  # bytes per packet (the paper's packet: 1000 B)
SHAPE = 1.2  # paper
MEAN_PKTS = 30  # paper: mean 30 packets (before truncation)
MAX_PKTS = 1000  # truncation (a short run cannot finish the Pareto tail)
SENDER_HOSTS = 4
SEED = 1


def truncated_mean_pkts() -> float:
    xm = MEAN_PKTS * (SHAPE - 1) / SHAPE
    return MEAN_PKTS - xm**SHAPE * MAX_PKTS ** (1 - SHAPE) / (SHAPE - 1)


def arrival_rate() -> float:
    """Flows/s for load 1 with the truncated mean."""
    return LINK_PPS / truncated_mean_pkts()


def workload(duration_s: float, seed: int = SEED) -> list[tuple[float, int]]:
    """(arrival s, size in bytes): Poisson arrivals, Pareto sizes (truncated)."""
    rng = random.Random(seed)
    xm = MEAN_PKTS * (SHAPE - 1) / SHAPE
    out = []
    t = rng.expovariate(arrival_rate())
    while t < duration_s:
        pkts = min(MAX_PKTS, xm / (1.0 - rng.random()) ** (1 / SHAPE))
        out.append((round(t, 3), max(1, math.ceil(pkts)) * PAYLOAD))
        t += rng.expovariate(arrival_rate())
    return out


def size_bin(pkts: float) -> int:
    """Power-of-two bins: 0 = 1 packet, 1 = 2-3, 2 = 4-7, ..."""
    return max(0, int(math.log2(max(1.0, pkts))))


class Fct(Scenario):
    name = "fct"
    algos = ("qfcp", "rcp", "tcp")
    allowed = ("qfcp", "rcp", "tcp")
    paper = "QFCP (Pu, Hamdi) Fig. 1"
    initial_kbps = 400  # a new flow's rate before its first feedback (as the other labs)

    def smoke_algos(self) -> tuple[str, ...]:
        return ("qfcp",)

    def times(self, smoke: bool) -> tuple[float, float]:
        """(arrivals for, drain)."""
        return (8.0, 4.0) if smoke else (60.0, 20.0)

    def topology(self, smoke: bool) -> LabTopology:
        return fan_in(SENDER_HOSTS, LINK_PPS)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        arrivals, drain = self.times(smoke)
        return {
            "bottleneck_pps": LINK_PPS,
            "bottleneck_mbps": round(pps_to_kbps(LINK_PPS) / 1000, 2),
            "rtt_ms": RTT_MS,
            "rtt_note": "UDP agents: ack delay 100 ms; kernel TCP: queueing delay only (no netem)",
            "sizes": f"Pareto shape {SHAPE}, mean {MEAN_PKTS} packets of {PAYLOAD} B, truncated "
            f"at {MAX_PKTS} (mean {truncated_mean_pkts():.1f})",
            "arrivals_per_s": round(arrival_rate(), 2),
            "load": 1.0,
            "arrivals_for_s": arrivals,
            "drain_s": drain,
            "paper": "150 Mbit/s, RTPD 100 ms, 625 flows/s, Pareto 1.2 mean 30 x 1000 B, "
            "60000 flows",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        arrivals, drain = self.times(ctx.smoke)
        port = ctx.topology.link("s1", "s2").a_port
        if ctx.algo == "tcp":
            return self._run_tcp(ctx, arrivals, drain, port)
        ctx.start_controller(ctx.algo, LAB_PERIOD)
        rx = [PY, "-m", "fairgate_hosts.receiver", "--ack-delay-ms", str(RTT_MS)]
        rx += ["--log", str(ctx.log_path("rx-r1")), "--log-interval", "1"]
        ctx.procs.start("rx-r1", rx, ctx.host("r1"))
        jobs = []
        for i, (t, size) in enumerate(workload(arrivals)):
            cmd = [PY, "-m", "fairgate_hosts.sender", "--dst", ctx.ip("r1"), "--mode", "qfcp"]
            cmd += ["--size", str(size), "--flow-id", f"f{i}"]
            cmd += ["--initial-rate", str(self.initial_kbps)]
            cmd += ["--log", str(ctx.log_path(f"tx-f{i}")), "--log-interval", "1"]
            cmd += ["--give-up", "30"]
            jobs.append(Job(f"tx-f{i}", f"h{i % SENDER_HOSTS + 1}", t, cmd))
        run_jobs(ctx, jobs, arrivals + drain, ("s1", port))
        flows = []
        for i, (t, size) in enumerate(workload(arrivals)):
            done = next(
                (r for r in read_jsonl(ctx.log_path(f"tx-f{i}")) if r.get("type") == "done"),
                None,
            )
            ok = done is not None and done.get("outcome") == "completed"
            fct = done["fct_us"] / 1e6 if ok and done.get("fct_us") is not None else None
            flows.append({"t": t, "bytes": size, "fct_s": fct})
        return {"flows": flows}

    def _run_tcp(self, ctx: LabContext, arrivals: float, drain: float, port: int) -> dict[str, Any]:
        ctx.start_controller("none", LAB_PERIOD)
        server = [PY, "-m", "fairgate_hosts.traffic.server", "--backlog", "1024"]
        server += ["--records", str(ctx.log_path("server-conns"))]
        ctx.procs.start("server", server, ctx.host("r1"))
        client = [PY, "-m", "fairgate_hosts.traffic.client", "--dst", ctx.ip("r1")]
        client += ["--rate", f"{arrival_rate():.3f}", "--shape", str(SHAPE)]
        client += ["--mean-size", str(MEAN_PKTS * PAYLOAD), "--max-size", str(MAX_PKTS * PAYLOAD)]
        client += ["--seed", str(SEED), "--duration", str(arrivals), "--timeout", "60"]
        client += ["--drain", str(drain), "--records", str(ctx.log_path("client-flows"))]
        client += ["--summary", str(ctx.run_dir / "hosts" / "client-summary.json")]
        run_jobs(ctx, [Job("client", "h1", 0.0, client)], arrivals + drain + 1.0, ("s1", port))
        flows = [
            {"t": r["scheduled_s"], "bytes": r["size"], "fct_s": r.get("fct_s")}
            for r in read_jsonl(ctx.log_path("client-flows"))
            if r.get("type") == "flow"
        ]
        return {"flows": flows}

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"arrivals_per_s": round(arrival_rate(), 2)}
        for algo, run in runs.items():
            flows = run["flows"]
            done = [f for f in flows if f["fct_s"] is not None]
            bins: dict[int, list[float]] = {}
            for f in done:
                bins.setdefault(size_bin(f["bytes"] / PAYLOAD), []).append(f["fct_s"])
            short = [f["fct_s"] for f in done if f["bytes"] <= 10 * PAYLOAD]
            arrivals = self.times(smoke)[0]
            offered = sum(f["bytes"] for f in flows if f["t"] < arrivals) / PAYLOAD
            out[algo] = {
                "flows": len(flows),
                "offered_load": round(offered / arrivals / LINK_PPS, 2),
                "completed": len(done),
                "completed_fraction": round(len(done) / len(flows), 3) if flows else 0,
                "mean_fct_s": round(sum(f["fct_s"] for f in done) / len(done), 3) if done else None,
                "mean_fct_short_s": round(sum(short) / len(short), 3) if short else None,
                "short_flows": len(short),
                "mean_fct_by_size_pkts": {
                    f"{2**b}-{2 ** (b + 1) - 1}": [len(v), round(sum(v) / len(v), 3)]
                    for b, v in sorted(bins.items())
                },
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        fig, axes = plots.figure(1, "Mean FCT vs flow size, load ~1 (QFCP Fig. 1)", height=4)
        ax = axes[0]
        for algo, run in runs.items():
            bins: dict[int, list[float]] = {}
            for f in run["flows"]:
                if f["fct_s"] is not None:
                    bins.setdefault(size_bin(f["bytes"] / PAYLOAD), []).append(f["fct_s"])
            xs = [2**b * 1.5 for b in sorted(bins)]
            ys = [sum(bins[b]) / len(bins[b]) for b in sorted(bins)]
            ax.plot(xs, ys, "o-", label=algo)
        sizes = [2**b * 1.5 for b in range(size_bin(MAX_PKTS) + 1)]
        ideal = [RTT_MS / 1000 + s / LINK_PPS for s in sizes]
        ax.plot(sizes, ideal, "k:", label="1 RTT + size / C")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (packets, bin centre)")
        ax.set_ylabel("mean FCT (s)")
        ax.legend()
        return [plots.save(fig, run_dir / "fct.png")]
