"""Lestas et al. Figs. 6-7 (scaled): users leave, then join in bulk (30 -> 10 ->
50 users becomes 6 -> 2 -> 10); queue vs q_ref, utilisation, drops and the
window of three representative users."""

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
    jain,
    port_series,
    read_jsonl,
    run_udp_schedule,
    start_receivers,
    window_mean,
)
from fairgate_topo.scenarios.series import (
    by_host,
    in_window,
    losses_between,
    mean,
    merge,
    peer_series,
    port_drops,
    sender_series,
)
from fairgate_topo.topos import fan_in

LINK_PPS = 600  # bottleneck (paper: 155 Mbit/s)
DEPTH = 256  # buffer (paper: the bandwidth-delay product; see docs: 2 x BDP is not enough here)
RTT_MS = 100.0  # paper: 40 ms bottleneck + 20.5-45 ms access, round trip ~80-130 ms
Q_REF_1500 = 10  # controller --q-ref (packets of 1500 B; paper: 100 packets)
USERS = (6, 2, 10)  # paper: 30 -> 10 -> 50 (scaled by 1/5)
STAGGER_S = 0.1  # the first users enter one per ~RTT, as in the paper
TRANSIENT_S = 2.0  # the initial transient excluded from the drop count


class LestasDynamics(Scenario):
    name = "lestas-dynamics"
    algos = ("lestas",)
    paper = "Lestas et al. (queue length based), Figs. 6-7"
    # what summarize() and plot() read (a subclass may change them, e.g. the
    # simulator's paper scale)
    link_pps: float = LINK_PPS
    users: tuple[int, int, int] = USERS
    depth: int = DEPTH
    q_ref_1500: float = Q_REF_1500
    frame_bytes: int = 1242

    def times(self, smoke: bool) -> tuple[float, float, float]:
        """(users leave, users join, end); paper: 30 s, 45 s, 60 s."""
        return (6.0, 9.0, 15.0) if smoke else (15.0, 22.5, 32.0)

    def topology(self, smoke: bool) -> LabTopology:
        return fan_in(max(USERS), LINK_PPS, DEPTH)

    def q_ref_pkts(self, frame_bytes: int | None = None) -> float:
        return self.q_ref_1500 * 1500 / (frame_bytes or self.frame_bytes)

    def flows(self, smoke: bool) -> list[UdpFlow]:
        leave, join, end = self.times(smoke)
        first, stay, last = self.users
        out = []
        for i in range(1, first + 1):
            stop = end if i <= stay else leave
            out.append(UdpFlow(f"user{i}", f"h{i}", "r1", (i - 1) * STAGGER_S, stop))
        for i in range(stay + 1, last + 1):
            # users 3-6 come back as new flows, 7-10 are new: all at once
            out.append(UdpFlow(f"user{i}-join", f"h{i}", "r1", join, end))
        return out

    def scaling(self, smoke: bool) -> dict[str, Any]:
        leave, join, end = self.times(smoke)
        return {
            "bottleneck_pps": LINK_PPS,
            "bottleneck_mbps": round(pps_to_kbps(LINK_PPS) / 1000, 2),
            "users": list(USERS),
            "users_scale": "1/5 of the paper's 30 -> 10 -> 50",
            "leave_join_end_s": [leave, join, end],
            "time_scale": "paper 30 / 45 / 60 s -> " + f"{leave} / {join} / {end} s",
            "rtt_ms": RTT_MS,
            "q_ref": f"--q-ref {Q_REF_1500} (x 1500 B) = {self.q_ref_pkts():.1f} frames "
            "of 1242 B (paper: 100 packets at 155 Mbit/s)",
            "buffer_pkts": DEPTH,
            "paper": "155 Mbit/s, 20 ms links, 30 users, 20 leave at 30 s, 40 join at 45 s",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, [*LAB_PERIOD, "--q-ref", str(Q_REF_1500)])
        start_receivers(ctx, {"r1": RTT_MS})
        flows = self.flows(ctx.smoke)
        port = ctx.topology.link("s1", "s2").a_port
        run_udp_schedule(ctx, flows, SENDER_MODE[ctx.algo], [("s1", port)])
        records = read_jsonl(ctx.records_path)
        names = [f.name for f in flows]
        peers = peer_series(ctx.run_dir, ctx.t0)
        users = {
            f"user{i}": merge(by_host(peers, ctx.ip(f"h{i}"))) for i in range(1, max(USERS) + 1)
        }
        return {
            "users": users,
            "user_flows": {
                f"user{i}": by_host(peers, ctx.ip(f"h{i}")) for i in range(1, max(USERS) + 1)
            },
            "schedule": [[f.name, f.start_s, f.stop_s] for f in flows],
            "leave_join_end_s": list(self.times(ctx.smoke)),
            "windows": {f.name: sender_series(ctx.run_dir, ctx.t0, f.name, "cwnd") for f in flows},
            "drops": {
                "after_transient": port_drops(records, "s1", port, ctx.t0, TRANSIENT_S),
                "total": port_drops(records, "s1", port, ctx.t0, -1e9),
            },
            "sender_losses": losses_between(ctx.run_dir, ctx.t0, names, -1e9, 1e9),
            "link": port_series(records, "s1", port, ctx.t0),
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        leave, join, end = self.times(smoke)
        q_ref = self.q_ref_pkts()
        out: dict[str, Any] = {"capacity_pps": self.link_pps, "q_ref_pkts": round(q_ref, 1)}
        bounds = [
            (0.0, leave, self.users[0]),
            (leave, join, self.users[1]),
            (join, end, self.users[2]),
        ]
        for algo, run in runs.items():
            link = run["link"]
            phases = []
            for a, b, n in bounds:
                mid = (a + b) / 2  # the second half: after the transient
                active = [
                    u
                    for u, s in run["users"].items()
                    if window_mean(s, mid, b) > 0.5 * self.link_pps / max(self.users)
                ]
                rates = [window_mean(run["users"][u], mid, b) for u in active]
                phases.append(
                    {
                        "window_s": [mid, b],
                        "users": n,
                        "users_seen": len(active),
                        "fair_pps": round(self.link_pps / n, 1),
                        "mean_rate_pps": round(sum(rates) / len(rates), 1) if rates else 0,
                        "jain": round(jain(rates), 3),
                        "utilisation": mean(in_window(link, "util", mid, b)),
                        "mean_queue_pkts": mean(in_window(link, "queue_pkts", mid, b)),
                    }
                )
            queues = in_window(link, "queue_pkts", 0, end)
            settled = [p["mean_queue_pkts"] for p in phases if p["mean_queue_pkts"] is not None]
            out[algo] = {
                "phases": phases,
                "settled_queue_pkts": mean(settled),
                "settled_queue_over_q_ref": round(mean(settled) / q_ref, 2) if settled else None,
                "max_queue_pkts": round(max(queues), 1) if queues else None,
                "buffer_pkts": self.depth,
                "drops_after_transient_pkts": run["drops"]["after_transient"],
                "drops_total_pkts": run["drops"]["total"],
                "sender_detected_losses": run["sender_losses"],
                "transient_s": TRANSIENT_S,
                "mean_utilisation": mean(in_window(link, "util", TRANSIENT_S, end)),
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        paths = []
        q_ref = self.q_ref_pkts()
        for algo, run in runs.items():
            leave, join, _ = run["leave_join_end_s"]
            fig, axes = plots.figure(
                4, f"Users leave and join in bulk ({algo}): " + " -> ".join(map(str, self.users))
            )
            for name in ("user1", f"user{self.users[0]}", f"user{self.users[2]}-join"):
                s = run["windows"].get(name, [])
                if s:
                    axes[0].plot([p[0] for p in s], [p[1] for p in s], label=name)
            axes[0].set_ylabel("cwnd (pkt)")
            axes[0].legend(loc="upper right", fontsize=8)
            for k, (name, flows) in enumerate(run["user_flows"].items()):
                for j, s in enumerate(flows):
                    axes[1].plot(
                        [p[0] for p in s],
                        [p[1] for p in s],
                        lw=0.8,
                        color=f"C{k}",
                        label=name if j == 0 else None,
                    )
            axes[1].set_ylabel("rate (pkt/s)")
            axes[1].legend(loc="upper right", fontsize=6, ncol=5)
            link = run["link"]
            axes[2].plot(link["t"], link["util"])
            axes[2].set_ylabel("utilisation")
            axes[2].set_ylim(0, 1.3)
            axes[3].plot(link["t"], link["queue_pkts"], label="queue (mean per period)")
            axes[3].axhline(q_ref, color="k", ls=":", label=f"q_ref {q_ref:.0f}")
            axes[3].axhline(self.depth, color="r", ls="--", lw=0.8, label=f"buffer {self.depth}")
            axes[3].set_ylabel("queue (pkt)")
            axes[3].legend(loc="upper right", fontsize=8)
            axes[3].set_xlabel("time (s)")
            for ax in axes:
                for t in (leave, join):
                    ax.axvline(t, color="grey", lw=0.6)
            paths.append(plots.save(fig, run_dir / f"lestas-dynamics-{algo}.png"))
        return paths
