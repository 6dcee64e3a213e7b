"""Simulator speed (issue #8): 50 greedy QFCP users on one 155 Mbit/s bottleneck
(1242 B frames, 40 ms RTT by ack delay), the controller every RTT. Reports simulated
packets (every packet through every output port: data and acks, all hops) per
wall-clock second and simulated seconds per wall second (goal >= 2, docs/performance.md).
Writes results/bench/sim.json. Needs no switch and no root."""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

from benchlib import Headline, write

from fairgate_sim.runner import Flow, RunConfig, start_udp, window_mean
from fairgate_sim.scenarios import dumbbell

TOP = Path(__file__).resolve().parent.parent
FRAME = 1242


def measure(users: int, mbps: float, seconds: float, algo: str) -> dict[str, float]:
    rate = mbps * 1e6 / 8
    hosts = 7
    spec, s, r = dumbbell(hosts, rate)
    flows = [Flow(f"u{i}", s[i % hosts], r[i % hosts], 0.0, seconds) for i in range(users)]
    run = start_udp(spec, flows, RunConfig(algo=algo, ack_delay_s=0.04, start_jitter_s=0.1))  # type: ignore[arg-type]
    t0 = time.perf_counter()
    run.net.run(seconds)
    wall = time.perf_counter() - t0
    ports = [p for sw in run.net.switches.values() for p in sw.ports.values()]
    ports += [h.uplink for h in run.net.hosts.values()]
    packets = sum(p.stats.sent for p in ports)
    fair = rate / FRAME / users
    tail = [window_mean(run.series[f.name], seconds / 2, seconds) / fair for f in flows]
    return {
        "users": users,
        "bottleneck_mbps": mbps,
        "algo": algo,
        "simulated_s": seconds,
        "wall_s": round(wall, 3),
        "sim_s_per_wall_s": round(seconds / wall, 3),
        "packet_hops": packets,
        "packet_hops_per_wall_s": round(packets / wall),
        "events": run.net.clock.events,
        "events_per_wall_s": round(run.net.clock.events / wall),
        "rate_over_fair_min": round(min(tail), 3),
        "rate_over_fair_max": round(max(tail), 3),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "sim.json")
    args = p.parse_args(argv)
    rows = [
        measure(50, 155.0, args.seconds, "qfcp"),
        measure(50, 155.0, args.seconds, "lestas"),
        measure(4, 10.0, args.seconds, "qfcp"),
    ]
    print(f"{'case':28} {'sim s/wall s':>12} {'pkt-hops/s':>11} {'events/s':>9} {'rate/fair':>11}")
    for r in rows:
        case = f"{r['users']} users {r['bottleneck_mbps']:g} Mbit/s {r['algo']}"
        fair = f"{r['rate_over_fair_min']:.2f}-{r['rate_over_fair_max']:.2f}"
        print(
            f"{case:28} {r['sim_s_per_wall_s']:12.2f} {r['packet_hops_per_wall_s']:11,d}"
            f" {r['events_per_wall_s']:9,d} {fair:>11}"
        )
    speed = Headline(
        "simulator, 155 Mbit/s, 50 users (QFCP)",
        rows[0]["sim_s_per_wall_s"],
        "x real time",
        2.0,
        True,
    )
    print(
        f"goal (>= {speed.goal:g} simulated s per wall s at 155 Mbit/s, 50 users): "
        + ("met" if speed.met else "MISSED")
    )
    doc = {
        "engine": "SimPy " + __import__("simpy").__version__,
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "rows": rows,
    }
    out = write("sim", doc, args.out, [speed])
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
