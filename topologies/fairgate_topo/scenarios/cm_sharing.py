"""CM paper Figs. 9-10 (scaled), behind a FairGate bottleneck: four flows from
one host to one receiver as four independent senders, then as four flows of
one Congestion Manager macroflow (bulk app), each next to one competing flow
from another host; then layered audio plus a bulk flow in one macroflow
(audio app) next to the competing flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabTopology, pps_to_kbps
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import (
    LAB_PERIOD,
    PY,
    SENDER_MODE,
    LabContext,
    UdpFlow,
    jain,
    port_series,
    read_jsonl,
    sender_cmd,
    start_receivers,
    window_mean,
)
from fairgate_topo.scenarios.schedule import Job, run_jobs
from fairgate_topo.scenarios.series import peer_series, stack
from fairgate_topo.topos import dumbbell

LINK_PPS = 400  # 3.97 Mbit/s: paper Fig. 9 1 Mbit/s x 4, Fig. 10 0.5 Mbit/s x 8
RTT_MS = 120.0  # paper: 120 ms in both
FLOWS = 4
AUDIO_SCALE = 8  # layers 10..320 kbit/s x 8 (the bottleneck is 8 x the paper's 0.5 Mbit/s)
LAYERS_KBPS = [10 * AUDIO_SCALE * 2**i for i in range(6)]
PHASES = ("independent", "cm", "audio")


def _pps(kbps: float) -> float:
    return kbps * 1000 / 8 / 1242


class CmSharing(Scenario):
    name = "cm-sharing"
    algos = ("qfcp",)
    paper = "Balakrishnan et al., Congestion Manager, Figs. 9-10"

    def phase_s(self, smoke: bool) -> float:
        return 5.0 if smoke else 15.0

    def topology(self, smoke: bool) -> LabTopology:
        return dumbbell(2, LINK_PPS)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "bottleneck_pps": LINK_PPS,
            "bottleneck_mbps": round(pps_to_kbps(LINK_PPS) / 1000, 2),
            "rtt_ms": RTT_MS,
            "fig9": "1 Mbit/s -> 3.97 Mbit/s (x4); the paper's TCP and CBR cross traffic "
            "-> one competing FairGate (qfcp) flow from another host",
            "fig10": f"0.5 Mbit/s -> 3.97 Mbit/s (x8); layers x{AUDIO_SCALE}: {LAYERS_KBPS} kbit/s;"
            " the TCP/CM transfer -> a bulk flow in the audio's macroflow; TCP NewReno -> "
            "the competing qfcp flow",
            "phase_s": self.phase_s(smoke),
            "paper": "Fig. 9: 1 Mbit/s, 120 ms, 4 TCP NewReno 120-213 kbit/s vs 4 TCP/CM "
            "120 kbit/s each; Fig. 10: 0.5 Mbit/s, 120 ms, audio 50 + TCP/CM 85 vs TCP 150",
        }

    def jobs(self, ctx: LabContext) -> tuple[list[Job], float]:
        d = self.phase_s(ctx.smoke)
        mode = SENDER_MODE[ctx.algo]
        r1 = ctx.ip("r1")
        jobs = [
            Job(
                "tx-competitor",
                "h2",
                0.0,
                sender_cmd(ctx, UdpFlow("competitor", "h2", "r2", 0, 3 * d), mode),
            )
        ]
        for i in range(1, FLOWS + 1):
            flow = UdpFlow(f"indep{i}", "h1", "r1", 0.1 * i, d - 0.5)
            jobs.append(Job(f"tx-indep{i}", "h1", flow.start_s, sender_cmd(ctx, flow, mode)))
        bulk = [PY, "-m", "fairgate_hosts.apps.bulk", "--dst", r1, "--flows", str(FLOWS)]
        bulk += ["--duration", f"{d - 0.5}", "--interval", "0.2", "--max-rate", "100000"]
        bulk += ["--log", str(ctx.log_path("cm-bulk"))]
        jobs.append(Job("cm-bulk", "h1", d, bulk))
        audio = [PY, "-m", "fairgate_hosts.apps.audio", "--dst", r1, "--bulk", "1"]
        audio += ["--bulk-join", "0", "--duration", f"{d - 0.5}", "--interval", "0.2"]
        audio += ["--layers", ",".join(str(x) for x in LAYERS_KBPS), "--frame-ms", "40"]
        audio += ["--max-rate", "100000", "--log", str(ctx.log_path("cm-audio"))]
        jobs.append(Job("cm-audio", "h1", 2 * d, audio))
        return jobs, 3 * d + 1.0

    def run(self, ctx: LabContext) -> dict[str, Any]:
        ctx.start_controller(ctx.algo, LAB_PERIOD)
        start_receivers(ctx, {"r1": RTT_MS, "r2": RTT_MS})
        port = ctx.topology.link("s1", "s2").a_port
        jobs, end = self.jobs(ctx)
        run_jobs(ctx, jobs, end, ("s1", port))
        d = self.phase_s(ctx.smoke)
        peers = peer_series(ctx.run_dir, ctx.t0)
        h1 = ctx.ip("h1")
        phase_flows: dict[str, dict[str, list[list[float]]]] = {p: {} for p in PHASES}
        competitor: list[list[float]] = []
        for peer, s in peers.items():
            if not s:
                continue
            if not peer.startswith(h1 + ":"):
                competitor += s
                continue
            k = min(2, int(s[0][0] // d))
            phase_flows[PHASES[k]][peer] = s
        audio = read_jsonl(ctx.log_path("cm-audio"))
        agent = next((r for r in audio if r.get("type") == "agent"), None)
        base = agent["wall_time"] - ctx.t0 if agent else 2 * d
        audio_series = [
            [
                round(base + r["t_s"], 3),
                _pps(r["sent_kbps"]),
                r["layer_kbps"],
                _pps(r["share_kbps"]),
            ]
            for r in audio
            if r.get("type") == "sample"
        ]
        return {
            "phase_s": d,
            "flows": phase_flows,
            "competitor": sorted(competitor),
            "audio": audio_series,
            "audio_done": next((r for r in audio if r.get("type") == "done"), None),
            "link": port_series(read_jsonl(ctx.records_path), "s1", port, ctx.t0),
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out: dict[str, Any] = {
            "capacity_pps": LINK_PPS,
            "expected_pps": {
                "independent": {"each": LINK_PPS / 5, "competitor": LINK_PPS / 5},
                "cm": {"each": LINK_PPS / 8, "competitor": LINK_PPS / 2},
                "audio": {"audio_plus_bulk": LINK_PPS / 2, "competitor": LINK_PPS / 2},
            },
        }
        for algo, run in runs.items():
            d = run["phase_s"]
            res: dict[str, Any] = {}
            for k, phase in enumerate(PHASES):
                a, b = k * d + d / 2, (k + 1) * d - 0.5
                rates = [window_mean(s, a, b) for s in run["flows"][phase].values()]
                rates = sorted((round(r, 1) for r in rates if r > 0), reverse=True)
                entry: dict[str, Any] = {
                    "window_s": [a, b],
                    "competitor_pps": round(window_mean(run["competitor"], a, b), 1),
                    "host_total_pps": round(sum(rates), 1),
                }
                if phase != "audio":
                    entry |= {
                        "flow_pps": rates,
                        "jain": round(jain(rates), 3),
                        "max_over_min": round(rates[0] / rates[-1], 2) if rates else None,
                    }
                else:
                    samples = [x for x in run["audio"] if a <= x[0] < b]
                    audio_pps = sum(x[1] for x in samples) / len(samples) if samples else 0.0
                    layers: dict[str, int] = {}
                    for x in samples:
                        layers[str(x[2])] = layers.get(str(x[2]), 0) + 1
                    entry |= {
                        "audio_pps": round(audio_pps, 1),
                        "audio_kbps": round(audio_pps * 1242 * 8 / 1000, 1),
                        # receiver side: the bulk flow is the faster peer; the audio's
                        # frames are smaller than 1242 B, so its packet rate is higher
                        "bulk_pps": rates[0] if len(rates) == 2 else None,
                        "audio_rx_pps": rates[-1] if len(rates) == 2 else None,
                        "audio_share_pps": round(sum(x[3] for x in samples) / len(samples), 1)
                        if samples
                        else None,
                        "layer_kbps_samples": layers,
                        "layer_changes": (run["audio_done"] or {}).get("layer_changes"),
                    }
                res[phase] = entry
            ind, cm = res["independent"], res["cm"]
            res["competitor_gain_with_cm"] = (
                round(cm["competitor_pps"] / ind["competitor_pps"], 2)
                if ind["competitor_pps"]
                else None
            )
            out[algo] = res
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        paths = []
        for algo, run in runs.items():
            d = run["phase_s"]
            fig, axes = plots.figure(
                3, f"Four flows without / with the CM, then layered audio ({algo})"
            )
            for phase in PHASES[:2]:
                for i, s in enumerate(run["flows"][phase].values(), start=1):
                    axes[0].plot([p[0] for p in s], [p[1] for p in s], lw=0.8, label=f"{phase} {i}")
            comp = stack({"c": run["competitor"]})
            axes[0].plot([p[0] for p in comp], [p[1] for p in comp], "k", label="competitor")
            axes[0].set_ylabel("rate (pkt/s)")
            axes[0].legend(loc="upper right", fontsize=6, ncol=3)
            au = run["audio"]
            axes[1].plot([x[0] for x in au], [x[1] for x in au], label="audio sent")
            axes[1].step(
                [x[0] for x in au], [_pps(x[2]) for x in au], where="post", label="audio layer"
            )
            axes[1].plot([x[0] for x in au], [x[3] for x in au], ":", label="audio CM share")
            for s in run["flows"]["audio"].values():
                axes[1].plot([p[0] for p in s], [p[1] for p in s], lw=0.6, color="grey")
            axes[1].plot([p[0] for p in comp], [p[1] for p in comp], "k", label="competitor")
            axes[1].set_ylabel("rate (pkt/s)")
            axes[1].legend(loc="upper left", fontsize=6, ncol=2)
            link = run["link"]
            axes[2].plot(link["t"], link["util"], label="utilisation")
            axes[2].plot(link["t"], [q / 64 for q in link["queue_pkts"]], label="queue / 64")
            axes[2].set_ylim(0, 1.3)
            axes[2].legend(loc="lower right", fontsize=7)
            axes[2].set_xlabel("time (s)")
            for ax in axes:
                for t in (d, 2 * d):
                    ax.axvline(t, color="grey", lw=0.6)
            paths.append(plots.save(fig, run_dir / f"cm-sharing-{algo}.png"))
        return paths
