"""The BMv2 lab's FICCRD scenario as the simulator needs it, without importing the lab:
its constants, timing, scaling note, the per-run summary and the plots, copied from the
lab's scenario module (topologies/, which the interactive lab reads and this project does
not edit from here). ``tests/unit/sim/test_labdata.py`` checks that the constants and the
functions' results still match the lab's."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from fairgate_controller.ficcrd import CORE_EVENTS, EDGE_EVENTS

FLOWS = 10
QUEUE_PPS, DEPTH, BUR = 500, 200, 0.5
Q0 = BUR * DEPTH
MSS = 1448  # payload of a 1514 B frame with TCP timestamps
FRAME = 1514
RUN_S, WARMUP_S = 60.0, 15.0
SMOKE_RUN_S, SMOKE_WARMUP_S = 24.0, 10.0
SAMPLE_S = 0.5
# One-way delays (ms): the paper's path, 2 ms access + 20 ms bottleneck + 2 ms
# access, for every source, plus SPREAD_MS per step so that h10 has the paper's
# 48 ms RTT and h1 (the paper's source 0, the long path) 48 + 2 x 9 x 16 = 336 ms.
PAPER_ONE_WAY_MS = 2 + 20 + 2
SPREAD_MS = 16
BASE_PINGS = 10
FICCRD_KEYS = (*EDGE_EVENTS, *CORE_EVENTS)  # the controller's record fields


def access_delays_ms() -> dict[str, float]:
    """One-way delay of each source's access link (both directions)."""
    return {f"h{i}": float(PAPER_ONE_WAY_MS + SPREAD_MS * (FLOWS - i)) for i in range(1, FLOWS + 1)}


def fair_kbps() -> float:
    """The fair share of goodput: the bottleneck's payload rate over the flows."""
    return QUEUE_PPS * MSS * 8 / 1000 / FLOWS


class Ficcrd:
    """What the simulator's FICCRD runs share with the lab's scenario: names, timing,
    the lab's scaling note."""

    name = "ficcrd"

    algos = ("droptail", "ficcrd")

    allowed = ("droptail", "ficcrd")

    paper = "FICCRD (Fair Intelligent Congestion Control Resource Discovery) Figs. 2-6"

    def timing(self, smoke: bool) -> tuple[float, float]:
        return (SMOKE_RUN_S, SMOKE_WARMUP_S) if smoke else (RUN_S, WARMUP_S)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        run, warm = self.timing(smoke)
        return {
            "bottleneck": f"BMv2 queue s1->s2 {QUEUE_PPS} pkt/s (about "
            f"{QUEUE_PPS * FRAME * 8 / 1e6:.1f} Mbit/s of 1514 B frames), depth {DEPTH} pkt, "
            f"Q0 = BUR x depth = {Q0:g} pkt",
            "flows": f"{FLOWS} kernel TCP Reno uploads h<i> -> r<i>, one receiver each",
            "fair_share_kbps": round(fair_kbps(), 1),
            "run_s": run,
            "goodput_window_s": [warm, run],
            "ficcrd": "k = 8 (one RD per 8 packets of a flow), BUR 0.5, alpha 1.15, "
            "beta 1/16, rtt_min 20 ms (controller defaults)",
            "paper": "10 Mbit/s bottleneck, 200 pkt buffer, 20 ms; access links 2 ms "
            "(source 0: 10 ms), 4 kB packets, Reno, 200 s, goodput over 50-200 s",
            "rtt": f"delay-line node on each source's access link, one-way "
            f"{PAPER_ONE_WAY_MS} ms (paper: 2 + 20 + 2) + {SPREAD_MS} ms x (10 - i) for h<i>: "
            "base RTT 48 ms (h10) to 336 ms (h1, the paper's source 0), evenly spread",
            "access_delay_ms": access_delays_ms(),
        }


def port_columns(records: list[dict[str, Any]], switch: str, port: int, t0: float) -> dict:
    rs = [r for r in records if r["switch"] == switch and r["port"] == port]
    return {
        "t": [round(r["t"] - t0, 3) for r in rs],
        "queue_pkts": [r["queue_mean_bytes"] / FRAME for r in rs],
        "drops": [r["drop_pkts"] for r in rs],
        "arrival_pkts": [r["arrival_pkts"] for r in rs],
        "departure_pkts": [r["departure_pkts"] for r in rs],
        "period_s": [r["period_s"] for r in rs],
    }


def ficcrd_totals(records: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """FICCRD event counters summed over the run, per switch:port (non-zero only)."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        for key in FICCRD_KEYS:
            if r.get(key):
                slot = out.setdefault(f"{r['switch']}:{r['port']}", {})
                slot[key] = slot.get(key, 0) + int(r[key])
    return out


def summarize_run(run: dict[str, Any], fair: float) -> dict[str, Any]:
    warm, end = run["warmup_s"], run["run_s"]
    flows = run["flows"]
    goodput = {h: f["steady_goodput_kbps"] or 0.0 for h, f in flows.items()}
    norm = {h: round(g / fair, 3) for h, g in goodput.items()}
    port = run["port"]
    idx = [i for i, t in enumerate(port["t"]) if warm <= t < end]
    queue = [port["queue_pkts"][i] for i in idx]
    dep = sum(port["departure_pkts"][i] for i in idx)
    secs = sum(port["period_s"][i] for i in idx)
    rtts = {h: median_after(f["t"], f["rtt_ms"], warm) for h, f in flows.items()}
    base_rtt = {h: (v or {}).get("min") for h, v in run["base_rtt_ms"].items()}
    return {
        "normalised_goodput": norm,
        "goodput_kbps": goodput,
        "jain": round(jain(list(goodput.values())), 4),
        "total_goodput_kbps": round(sum(goodput.values()), 1),
        "drops_total": net_drops(port, range(len(port["t"]))),
        "drops_after_warmup": net_drops(port, idx),
        "retrans_per_flow": {h: f["total_retrans"] for h, f in flows.items()},
        "retrans_after_warmup": sum(retrans_after(f, warm) for f in flows.values()),
        "queue_pkts": {
            "mean": round(statistics.fmean(queue), 1) if queue else None,
            "stdev": round(statistics.pstdev(queue), 1) if queue else None,
            "p10": round(quantile(queue, 0.1), 1) if queue else None,
            "p90": round(quantile(queue, 0.9), 1) if queue else None,
            "max_period_mean": round(max(queue), 1) if queue else None,
            "q0": Q0,
            "frac_periods_within_q0_pm_8": round(
                sum(1 for q in queue if abs(q - Q0) <= 8) / len(queue), 3
            )
            if queue
            else None,
        },
        "utilisation_pkts": round(dep / (QUEUE_PPS * secs), 3) if secs else None,
        "srtt_ms_median": rtts,
        "base_rtt_ms": base_rtt,
        "base_rtt_mean_ms": {h: (v or {}).get("mean") for h, v in run["base_rtt_ms"].items()},
        "rtt_unfairness": rtt_unfairness(base_rtt, norm),
        "delay_lines": run.get("delay_lines", {}),
        "ficcrd_counters": run["ficcrd"],
    }


def rtt_unfairness(base: dict[str, float | None], norm: dict[str, float]) -> dict[str, Any]:
    """How goodput follows the base RTT: Pearson correlation over the flows, and
    the mean goodput of the shorter-RTT half over the longer-RTT half (1 = none)."""
    hosts = sorted((h for h in norm if base.get(h) is not None), key=lambda h: base[h] or 0.0)
    half = len(hosts) // 2
    if half < 1:
        return {}
    short = statistics.fmean(norm[h] for h in hosts[:half])
    long = statistics.fmean(norm[h] for h in hosts[-half:])
    xs = [base[h] or 0.0 for h in hosts]
    ys = [norm[h] for h in hosts]
    corr = statistics.correlation(xs, ys) if len(set(xs)) > 1 and len(set(ys)) > 1 else None
    return {
        "corr_base_rtt_goodput": None if corr is None else round(corr, 3),
        "short_half_over_long_half": round(short / long, 3) if long else None,
    }


def net_drops(port: dict[str, Any], idx: Any) -> int:
    """Arrivals - departures - queue growth over the periods `idx` (packets the
    queue dropped; the records' per-period drop_pkts also count queue growth)."""
    ids = list(idx)
    if not ids:
        return 0
    net = sum(port["arrival_pkts"][i] - port["departure_pkts"][i] for i in ids)
    grown = port["queue_pkts"][ids[-1]] - (port["queue_pkts"][ids[0] - 1] if ids[0] else 0)
    return max(0, round(net - grown))


def retrans_after(flow: dict[str, Any], t_from: float) -> int:
    later = [r for t, r in zip(flow["t"], flow["retrans"], strict=True) if t >= t_from]
    return later[-1] - later[0] if later else 0


def median_after(ts: list[float], values: list[float], t_from: float) -> float | None:
    vals = [v for t, v in zip(ts, values, strict=True) if t >= t_from]
    return round(statistics.median(vals), 1) if vals else None


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def plot_goodput(path: Path, runs: dict[str, dict[str, Any]], fair: float) -> Path:
    fig, (ax_g, ax_d) = _figure(2, "FICCRD Figs. 3 and 6: goodput / fair share, drops")
    width = 0.8 / max(1, len(runs))
    for k, (algo, run) in enumerate(runs.items()):
        hosts = list(run["flows"])
        xs = [i + k * width for i in range(len(hosts))]
        g = [(run["flows"][h]["steady_goodput_kbps"] or 0) / fair for h in hosts]
        ax_g.bar(xs, g, width, label=f"{algo} (Jain {jain(g):.3f})")
        r = [run["flows"][h]["total_retrans"] or 0 for h in hosts]
        drops = net_drops(run["port"], range(len(run["port"]["t"])))
        ax_d.bar(
            xs,
            r,
            width,
            label=f"{algo} (bottleneck drops {drops})",
        )
        base = {h: (v or {}).get("min") for h, v in run.get("base_rtt_ms", {}).items()}
        labels = [f"{h}\n{base[h]:.0f} ms" if base.get(h) else h for h in hosts]
        ax_d.set_xticks(range(len(hosts)), labels)
    ax_g.axhline(1.0, color="k", ls=":", lw=1)
    ax_g.set_ylabel("goodput / fair share")
    ax_g.legend(fontsize=8)
    ax_d.set_ylabel("retransmissions")
    ax_d.set_xlabel("source (idle RTT)")
    ax_d.xaxis.set_tick_params(labelbottom=True)
    ax_d.legend(fontsize=8)
    return _save(fig, path)


def plot_queue(path: Path, runs: dict[str, dict[str, Any]]) -> Path:
    fig, axes = _figure(len(runs), "FICCRD Fig. 5: bottleneck queue (0.1 s means)")
    for ax, (algo, run) in zip(axes, runs.items(), strict=True):
        ax.plot(run["port"]["t"], run["port"]["queue_pkts"], lw=1, label=algo)
        ax.axhline(Q0, color="g", ls="--", lw=1, label=f"Q0 = {Q0:g}")
        ax.axhline(DEPTH, color="r", ls=":", lw=1, label=f"buffer {DEPTH}")
        ax.set_ylim(0, DEPTH * 1.1)
        ax.set_ylabel("queue (pkt)")
        ax.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    return _save(fig, path)


def plot_senders(path: Path, runs: dict[str, dict[str, Any]]) -> Path:
    fig, axes = _figure(2 * len(runs), "FICCRD Fig. 4: sender sequence and throughput")
    for k, (algo, run) in enumerate(runs.items()):
        ax_s, ax_t = axes[2 * k], axes[2 * k + 1]
        for host, f in run["flows"].items():
            seq, total = [], 0.0
            for g in f["goodput_kbps"]:
                total += g * SAMPLE_S / 8 / MSS  # kbit/s x s -> segments (x1000/1000)
                seq.append(total * 1000)
            ax_s.plot(f["t"], seq, lw=1, label=host)
            ax_t.plot(f["t"], f["goodput_kbps"], lw=0.8)
        ax_s.set_ylabel(f"{algo}: segments")
        ax_t.set_ylabel(f"{algo}: kbit/s")
        ax_s.legend(fontsize=6, ncol=5, loc="upper left")
    axes[-1].set_xlabel("time (s)")
    return _save(fig, path)


def jain(values: list[float]) -> float:
    if not values or not any(values):
        return 0.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def _figure(rows: int, title: str, height: float = 2.6) -> tuple[Any, list[Any]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(rows, 1, figsize=(8, height * rows), sharex=True, squeeze=False)
    fig.suptitle(title)
    return fig, [a for a in axes[:, 0]]


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
