"""Lestas et al. Figs. 3-5: scalability of the queue-length controller in capacity
(10 Mbit/s - 1 Gbit/s), round-trip propagation delay (10 ms - 1 s) and users (1 - 1000).

The paper's single-bottleneck network (Fig. 2): 1000 B packets, q_ref = 100 packets,
buffer one bandwidth-delay product (at the longest RTT), base point 155 Mbit/s, 20 ms
links, 50 users; user i's RTT is the minimum RTT + i ms (access links 0.5 ms apart).
Users enter one per minimum RTT, but within at most
``enter_max_s`` (the paper's rule would take 50 s at 1 s RTT and 80 s for 1000 users).
Each point runs ``settle_s = max(settle_min_s, settle_rtts x RTT)`` after the last user
entered; the equilibrium is the last 40 % of that. Per point: utilisation (departures /
C), the exact mean queue and the controller's histogram reading, drops, Jain's index of
the users' rates, settle time (from the last entry until the utilisation, in 0.2 s
bins, stays >= 0.95) and the wall time.

``python -m fairgate_sim --exp lestas-sweep --scale paper`` runs every point;
``--smoke`` is the documented reduced variant (``REDUCED``: shorter runs, fewer points).
``python -m fairgate_sim.sweep --sweep capacity --points 10,1000 [--reduced]`` runs
a subset and prints one JSON line per point.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairgate_sim.network import Network
from fairgate_sim.runner import Flow
from fairgate_sim.simlab import FlowLab, SimLab, start_flows
from fairgate_sim.topo import NetBuilder

FRAME = 1000
Q_REF = 100
PAPER_BPS_PER_MBIT = 1e6 / 8
BASE = {"capacity": 155.0, "delay": 80.0, "users": 50.0}  # Mbit/s, min RTT ms, users
UNITS = {"capacity": "Mbit/s", "delay": "ms (min RTT)", "users": "users"}
GRID = {
    "capacity": [10, 20, 50, 100, 155, 300, 600, 1000],
    "delay": [10, 20, 50, 80, 200, 500, 1000],
    "users": [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
}
REDUCED_GRID = {
    "capacity": [10, 155, 1000],
    "delay": [10, 80, 1000],
    "users": [1, 50, 1000],
}


@dataclass(frozen=True)
class Timing:
    enter_max_s: float = 10.0
    settle_min_s: float = 15.0
    settle_rtts: float = 30.0


FULL = Timing()
REDUCED = Timing(enter_max_s=3.0, settle_min_s=5.0, settle_rtts=10.0)


@dataclass(frozen=True)
class Point:
    sweep: str
    value: float
    capacity_mbps: float
    rtt_min_s: float
    users: int

    @staticmethod
    def of(sweep: str, value: float) -> Point:
        p = dict(BASE) | {sweep: value}
        return Point(sweep, value, p["capacity"], p["delay"] / 1000, int(p["users"]))


def _network(pt: Point) -> tuple[Any, list[tuple[str, str]], tuple[str, int], int]:
    rate = pt.capacity_mbps * PAPER_BPS_PER_MBIT
    link_delay = pt.rtt_min_s / 4  # bottleneck and first access link: RTT = 4 d
    k_max = min(pt.users, 14)
    j_max = min(14, -(-pt.users // k_max))
    rtt_max = pt.rtt_min_s + 0.001 * (min(pt.users, k_max * j_max) - 1)
    buffer = max(2 * Q_REF, round(rate / FRAME * rtt_max))
    b = NetBuilder(frame_bytes=FRAME)
    s1, s2 = b.add_switch("s1"), b.add_switch("s2")
    fast = max(12.5e6, 4 * rate)
    port, _ = b.add_link(s1, s2, rate, delay_s=link_delay, depth=buffer, reverse_Bps=fast)
    for k in range(k_max):
        b.add_host(f"h{k + 1}", s1, fast, delay_s=link_delay + 0.0005 * k)
    for j in range(j_max):
        b.add_host(f"r{j + 1}", s2, fast, delay_s=0.007 * j)
    pairs = [(f"h{i % k_max + 1}", f"r{(i // k_max) % j_max + 1}") for i in range(pt.users)]
    return b.build(), pairs, (s1, port), buffer


def run_point(pt: Point, timing: Timing = FULL, seed: int = 1) -> tuple[dict[str, Any], Network]:
    wall0 = time.perf_counter()
    spec, pairs, key, buffer = _network(pt)
    stagger = min(pt.rtt_min_s, timing.enter_max_s / pt.users)
    last_entry = stagger * (pt.users - 1)
    settle = max(timing.settle_min_s, timing.settle_rtts * pt.rtt_min_s)
    end = last_entry + settle
    flows = [Flow(f"u{i + 1}", s, d, i * stagger, end) for i, (s, d) in enumerate(pairs)]
    lab = FlowLab(spec, flows, {}, end, Q_REF * FRAME / 1500, FRAME - 42, exact_queue=True)
    run = start_flows(lab, "lestas", seed, None, [key])
    net = run.net
    out_port = net.switches[key[0]].ports[key[1]]
    cap_Bps = pt.capacity_mbps * PAPER_BPS_PER_MBIT
    util_bins: list[tuple[float, float]] = []
    last = [0.0, 0]

    def bin_util() -> None:
        now, sent = net.clock.now, out_port.stats.sent_bytes
        util_bins.append((now, (sent - last[1]) / (now - last[0]) / cap_Bps))
        last[:] = [now, sent]
        net.clock.after(0.2, bin_util)

    net.clock.after(0.2, bin_util)
    t_a = end - 0.4 * settle
    at_a: dict[str, Any] = {}

    def mark() -> None:
        at_a["sent"] = out_port.stats.sent_bytes
        at_a["drops"] = out_port.stats.dropped
        at_a["rx"] = _rx_counts(run)

    net.clock.at(t_a, mark)
    net.run(end)
    rx_end = _rx_counts(run)
    rates = [(rx_end[k] - at_a["rx"].get(k, 0)) / (end - t_a) for k in rx_end]
    rates = [r for r in rates if r > 0]
    util = (out_port.stats.sent_bytes - at_a["sent"]) / (end - t_a) / cap_Bps
    q_exact = [q for t, q in run.queues.samples[key] if t >= t_a] if run.queues else []
    recs = [r for r in run.records if (r["switch"], r["port"]) == key and r["t"] >= t_a]
    hist = [r["queue_mean_bytes"] / FRAME for r in recs]
    settle_s = None
    for i, (t, _u) in enumerate(util_bins):
        if t >= last_entry and all(u >= 0.95 for _t, u in util_bins[i:]):
            settle_s = round(t - last_entry, 2)
            break
    return {
        "sweep": pt.sweep,
        "value": pt.value,
        "capacity_mbps": pt.capacity_mbps,
        "rtt_min_ms": round(pt.rtt_min_s * 1000, 1),
        "users": pt.users,
        "buffer_pkts": buffer,
        "simulated_s": round(end, 2),
        "last_entry_s": round(last_entry, 2),
        "window_s": [round(t_a, 2), round(end, 2)],
        "utilisation": round(util, 4),
        "queue_pkts": round(sum(q_exact) / len(q_exact), 1) if q_exact else None,
        "queue_max_pkts": max(q_exact) if q_exact else None,
        "queue_histogram_pkts": round(sum(hist) / len(hist), 1) if hist else None,
        "drops_window": out_port.stats.dropped - at_a["drops"],
        "drops_total": out_port.stats.dropped,
        "jain": round(sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates)), 4)
        if rates
        else None,
        "users_seen": len(rates),
        "settle_s": settle_s,
        "events": net.clock.events,
        "wall_s": round(time.perf_counter() - wall0, 1),
    }, net


def _rx_counts(run: Any) -> dict[str, int]:
    return {
        f"{host}:{peer}": st.packets
        for host, rx in run.receivers.items()
        for peer, st in rx.core.flows.items()
    }


class LestasSweep:
    """The sweep as a lab-like scenario (``summarize``/``plot``) for the CLI."""

    name = "lestas-sweep"
    paper = "Lestas et al. (queue length based), Figs. 3-5"
    algos = ("lestas",)
    allowed = ("lestas",)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        t = REDUCED if smoke else FULL
        return {
            "grid": REDUCED_GRID if smoke else GRID,
            "base": {"capacity_mbps": 155, "rtt_min_ms": 80, "users": 50},
            "packet_bytes": FRAME,
            "q_ref_pkts": Q_REF,
            "buffer": "one BDP at the longest RTT (at least 2 q_ref)",
            "entry": f"one user per min RTT, within at most {t.enter_max_s} s",
            "settle": f"max({t.settle_min_s} s, {t.settle_rtts} x min RTT) after the last "
            "entry; equilibrium = its last 40 %",
            "variant": "reduced (--smoke)" if smoke else "full",
            "paper": "single bottleneck, 155 Mbit/s, 20 ms links, 50 users; sweeps of "
            "capacity 10M-1G, RTT 10 ms-1 s, users 1-1000",
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"q_ref_pkts": Q_REF}
        for algo, run in runs.items():
            pts = run["points"]
            out[algo] = {
                sweep: [
                    {
                        k: p[k]
                        for k in (
                            "value",
                            "utilisation",
                            "queue_pkts",
                            "queue_histogram_pkts",
                            "drops_total",
                            "jain",
                            "settle_s",
                            "simulated_s",
                            "wall_s",
                        )
                    }
                    for p in pts
                    if p["sweep"] == sweep
                ]
                for sweep in GRID
            }
            out[algo]["min_utilisation"] = min(p["utilisation"] for p in pts)
            out[algo]["drops_total"] = sum(p["drops_total"] for p in pts)
            out[algo]["wall_s"] = round(sum(p["wall_s"] for p in pts), 1)
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        paths = []
        for algo, run in runs.items():
            fig, grid = plt.subplots(6, 1, figsize=(8, 2.6 * 6), sharex=True, squeeze=False)
            fig.suptitle(f"Lestas scalability ({algo}): Figs. 3-5")
            axes = list(grid[:, 0])
            for row, sweep in enumerate(GRID):
                pts = [p for p in run["points"] if p["sweep"] == sweep]
                xs = [p["value"] for p in pts]
                ax_u, ax_q = axes[2 * row], axes[2 * row + 1]
                ax_u.plot(xs, [p["utilisation"] for p in pts], "o-")
                ax_u.set_ylim(0, 1.1)
                ax_u.set_ylabel("utilisation")
                ax_q.plot(xs, [p["queue_pkts"] or 0 for p in pts], "o-", label="queue (exact)")
                ax_q.plot(
                    xs, [p["queue_histogram_pkts"] or 0 for p in pts], "x:", label="histogram"
                )
                ax_q.axhline(Q_REF, color="k", ls=":", lw=0.8, label="q_ref")
                ax_q.set_ylabel("queue (pkt)")
                ax_q.set_xlabel(f"{sweep} ({UNITS[sweep]})")
                ax_q.legend(loc="upper left", fontsize=6)
                for ax in (ax_u, ax_q):
                    ax.set_xscale("log")
            fig.tight_layout()
            fig.savefig(run_dir / f"lestas-sweep-{algo}.png", dpi=110)
            plt.close(fig)
            paths.append(run_dir / f"lestas-sweep-{algo}.png")
        return paths


def sweep_lab(scale: str, smoke: bool) -> SimLab:
    """The CLI's ``--exp lestas-sweep`` (paper scale only: the sweep is the paper's)."""
    grid, timing = (REDUCED_GRID, REDUCED) if smoke else (GRID, FULL)
    points = [Point.of(s, v) for s, vals in grid.items() for v in vals]

    def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        results, net = [], None
        for pt in points:
            res, net = run_point(pt, timing, seed)
            print(json.dumps(res), flush=True)
            results.append(res)
        assert net is not None
        return {"points": results}, net  # (events: the last point's; each point has its own)

    end = sum(
        max(timing.settle_min_s, timing.settle_rtts * p.rtt_min_s)
        + min(p.rtt_min_s, timing.enter_max_s / p.users) * (p.users - 1)
        for p in points
    )
    note = {"simulated": "the paper's network at every point (no scaling)"}
    return SimLab(LestasSweep(), end, note, run, "propagation", smoke)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fairgate_sim.sweep", description=__doc__)
    p.add_argument("--sweep", choices=sorted(GRID), required=True)
    p.add_argument("--points", default=None, help="comma-separated values (default: the grid)")
    p.add_argument("--reduced", action="store_true", help="shorter runs (REDUCED)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    values = [float(v) for v in args.points.split(",")] if args.points else list(GRID[args.sweep])
    for v in values:
        res, _net = run_point(Point.of(args.sweep, v), REDUCED if args.reduced else FULL, args.seed)
        print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
