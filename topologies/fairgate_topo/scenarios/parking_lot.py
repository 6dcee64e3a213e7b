"""Lestas et al. Figs. 8-9 (scaled): k links in a row, long flows across all of
them plus one-hop cross flows on every link; one link is narrower, so it is
the long flows' bottleneck and every link is some flow's bottleneck.
Utilisation and queue per link, per-flow rates vs the max-min shares."""

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
from fairgate_topo.scenarios.series import in_window, losses_between, mean, port_drops
from fairgate_topo.topos import parking_lot

# paper: 8 links of 155 Mbit/s, link 4 80 Mbit/s; here 4 links, link 3 narrow (ratio ~0.5)
LINKS_PPS = (400, 400, 200, 400)
NARROW = 3
LINK_DELAY_MS = 15.0  # paper: 15 ms per link, kept; RTT = 2 x hops x 15 ms
Q_REF_1500 = 10
TOLERANCE = 0.15


def max_min(links: tuple[float, ...]) -> dict[str, float]:
    """One long flow over every link, one cross flow per link (equal counts, as
    the paper's 20 + 20 per link): the long flow gets half the narrowest link,
    each cross flow the rest of its link."""
    long_share = min(links) / 2
    out = {"long": long_share}
    for i, c in enumerate(links, start=1):
        out[f"cross{i}"] = c - long_share
    return out


class ParkingLot(Scenario):
    name = "parking-lot"
    algos = ("lestas",)
    paper = "Lestas et al. (queue length based), Figs. 8-9"
    # what summarize() and plot() read (a subclass may change them, e.g. the
    # simulator's paper scale)
    links_pps: tuple[float, ...] = LINKS_PPS
    q_ref_frames: float = Q_REF_1500 * 1500 / 1242

    def duration(self, smoke: bool) -> float:
        return 9.0 if smoke else 30.0

    def topology(self, smoke: bool) -> LabTopology:
        return parking_lot(list(LINKS_PPS))

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "links_pps": list(LINKS_PPS),
            "links_mbps": [round(pps_to_kbps(r) / 1000, 2) for r in LINKS_PPS],
            "links": f"{len(LINKS_PPS)} (paper 8); link {NARROW} narrow at "
            f"{LINKS_PPS[NARROW - 1] / max(LINKS_PPS):.2f} of the others (paper 80/155 = 0.52)",
            "users": "1 long flow + 1 cross flow per link (paper 20 + 20: same ratio)",
            "rtt_ms": {"long": 2 * len(LINKS_PPS) * LINK_DELAY_MS, "cross": 2 * LINK_DELAY_MS},
            "q_ref": f"--q-ref {Q_REF_1500} (x 1500 B) = {Q_REF_1500 * 1500 / 1242:.1f} frames",
            "buffer_pkts": 64,
            "duration_s": self.duration(smoke),
            "paper": "8 x 155 Mbit/s links (link 4: 80), 15 ms each, 20 long + 20 cross "
            "users per link, q_ref 100 packets",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, [*LAB_PERIOD, "--q-ref", str(Q_REF_1500)])
        k = len(LINKS_PPS)
        delays = {"r0": 2 * k * LINK_DELAY_MS}
        delays |= {f"r{i}": 2 * LINK_DELAY_MS for i in range(1, k + 1)}
        start_receivers(ctx, delays)
        dur = self.duration(ctx.smoke)
        flows = [UdpFlow("long", "h0", "r0", 0.0, dur)]
        flows += [UdpFlow(f"cross{i}", f"h{i}", f"r{i}", 0.1 * i, dur) for i in range(1, k + 1)]
        ports = [(f"s{i}", ctx.topology.link(f"s{i}", f"s{i + 1}").a_port) for i in range(1, k + 1)]
        run_udp_schedule(ctx, flows, SENDER_MODE[ctx.algo], ports)
        records = read_jsonl(ctx.records_path)
        by_ip = flow_series(ctx.run_dir, ctx.t0, ctx.topology.frame_bytes)
        return {
            "duration_s": dur,
            "flows": {f.name: by_ip.get(ctx.ip(f.src), []) for f in flows},
            "links": {
                f"link{i}": port_series(records, sw, p, ctx.t0)
                for i, (sw, p) in enumerate(ports, start=1)
            },
            "drops_after_2s": sum(port_drops(records, sw, p, ctx.t0, 2.0) for sw, p in ports),
            "sender_losses": losses_between(ctx.run_dir, ctx.t0, [f.name for f in flows], 0, 1e9),
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        expected = max_min(self.links_pps)
        out: dict[str, Any] = {"expected_pps": expected, "tolerance": TOLERANCE}
        for algo, run in runs.items():
            dur = run["duration_s"]
            a = dur / 2  # the second half: after convergence
            final = {n: round(window_mean(s, a, dur), 1) for n, s in run["flows"].items()}
            errors = {n: round(abs(final[n] - e) / e, 3) for n, e in expected.items()}
            links = {
                name: {
                    "capacity_pps": self.links_pps[i],
                    "utilisation": mean(in_window(port, "util", a, dur)),
                    "mean_queue_pkts": mean(in_window(port, "queue_pkts", a, dur)),
                    "max_queue_pkts": round(max(in_window(port, "queue_pkts", 1.0, dur)), 1),
                }
                for i, (name, port) in enumerate(run["links"].items())
            }
            out[algo] = {
                "window_s": [a, dur],
                "final_pps": final,
                "relative_error": errors,
                "max_relative_error": max(errors.values()),
                "links": links,
                "min_utilisation": min(v["utilisation"] or 0 for v in links.values()),
                "drops_after_2s_pkts": run["drops_after_2s"],
                "sender_detected_losses": run["sender_losses"],
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        paths = []
        expected = max_min(self.links_pps)
        q_ref = self.q_ref_frames
        for algo, run in runs.items():
            fig, axes = plots.figure(3, f"Parking lot, {len(self.links_pps)} links ({algo})")
            for name, s in run["flows"].items():
                if s:
                    line = axes[0].plot([p[0] for p in s], [p[1] for p in s], label=name)[0]
                    axes[0].axhline(expected[name], color=line.get_color(), ls=":", lw=1)
            axes[0].set_ylabel("rate (pkt/s)")
            axes[0].legend(loc="upper right", fontsize=7, ncol=3)
            for name, port in run["links"].items():
                axes[1].plot(port["t"], port["util"], lw=0.8, label=name)
                axes[2].plot(port["t"], port["queue_pkts"], lw=0.8, label=name)
            axes[1].set_ylabel("utilisation")
            axes[1].set_ylim(0, 1.3)
            axes[1].legend(loc="lower right", fontsize=7, ncol=4)
            axes[2].axhline(q_ref, color="k", ls=":", label="q_ref")
            axes[2].set_ylabel("queue (pkt)")
            axes[2].set_xlabel("time (s)")
            paths.append(plots.save(fig, run_dir / f"parking-lot-{algo}.png"))
            # Fig. 9: equilibrium utilisation and queue per link
            s = self.summarize({algo: run}, False)[algo]["links"]
            fig, axes = plots.figure(2, f"Parking lot per link ({algo}): second half of the run")
            names = list(s)
            xs = list(range(1, len(names) + 1))
            axes[0].bar(xs, [s[n]["utilisation"] or 0 for n in names])
            axes[0].set_ylabel("utilisation")
            axes[0].set_ylim(0, 1.2)
            axes[1].bar(xs, [s[n]["mean_queue_pkts"] or 0 for n in names])
            axes[1].axhline(q_ref, color="k", ls=":", label="q_ref")
            axes[1].set_ylabel("mean queue (pkt)")
            axes[1].set_xlabel("link")
            axes[1].set_xticks(xs)
            paths.append(plots.save(fig, run_dir / f"parking-lot-links-{algo}.png"))
        return paths
