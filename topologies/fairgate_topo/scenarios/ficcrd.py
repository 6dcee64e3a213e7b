"""FICCRD Figs. 2-6: ten long-lived kernel TCP (Reno) sources to ten receivers
through one bottleneck, plain droptail vs FICCRD (resource discovery, MAPR/DPF
at the core queue, receive-window rewriting at the source edge).

Runs ("algorithms" of this scenario): ``droptail`` (controller ``--algo none``)
and ``ficcrd`` (``--algo none --ficcrd``). Senders are ``tcp_cm`` uploads with
an unreachable pacing cap (plain kernel TCP), sinks ``traffic.server``.

RTT: no netem here, so each source's access link is a delay-line node
(``fairgate_topo.delayline``) with the one-way delay ``access_delays_ms()``:
the paper's 2 + 20 + 2 ms path for every source plus an even spread that makes
the base RTTs differ by about one droptail queueing delay (docs/labs/ficcrd.md).
"""

from __future__ import annotations

import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from fairgate_controller.ficcrd import CORE_EVENTS, EDGE_EVENTS
from fairgate_topo.labnet import LabTopology
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import PY, LabContext, jain, read_jsonl
from fairgate_topo.topos import ficcrd_p2p

FLOWS = 10
QUEUE_PPS, DEPTH, BUR = 500, 200, 0.5
Q0 = BUR * DEPTH
MSS = 1448  # payload of a 1514 B frame with TCP timestamps
FRAME = 1514
RUN_S, WARMUP_S = 60.0, 15.0
SMOKE_RUN_S, SMOKE_WARMUP_S = 24.0, 10.0
SAMPLE_S = 0.5
UNPACED_KBPS = 1_000_000  # pacing cap far above the bottleneck: plain kernel TCP
SYSCTLS = {"net.ipv4.tcp_congestion_control": "reno"}
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


class Ficcrd(Scenario):
    name = "ficcrd"
    algos = ("droptail", "ficcrd")
    allowed = ("droptail", "ficcrd")
    paper = "FICCRD (Fair Intelligent Congestion Control Resource Discovery) Figs. 2-6"

    def timing(self, smoke: bool) -> tuple[float, float]:
        return (SMOKE_RUN_S, SMOKE_WARMUP_S) if smoke else (RUN_S, WARMUP_S)

    def topology(self, smoke: bool) -> LabTopology:
        return ficcrd_p2p(FLOWS, QUEUE_PPS, DEPTH, access_delays_ms())

    def host_sysctls(self) -> dict[str, str]:
        return dict(SYSCTLS)

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

    def run(self, ctx: LabContext) -> dict[str, Any]:
        extra = ["--period", "0.1"] + (["--ficcrd"] if ctx.algo == "ficcrd" else [])
        ctx.start_controller("none", extra)
        base_rtt = measure_base_rtt(ctx)
        for i in range(1, FLOWS + 1):
            cmd = [PY, "-m", "fairgate_hosts.traffic.server"]
            cmd += ["--summary", str(ctx.run_dir / "hosts" / f"server-r{i}.json")]
            ctx.procs.start(f"server-r{i}", cmd, ctx.host(f"r{i}"))
        time.sleep(0.5)
        run_s, warm_s = self.timing(ctx.smoke)
        ctx.t0 = time.time()
        senders = []
        for i in range(1, FLOWS + 1):
            cmd = [PY, "-m", "fairgate_hosts.apps.tcp_cm", "--dst", ctx.ip(f"r{i}")]
            cmd += ["--rate", str(UNPACED_KBPS), "--duration", str(run_s)]
            cmd += ["--skip", str(warm_s), "--interval", str(SAMPLE_S), "--feedback-ms", "50"]
            cmd += ["--log", str(ctx.log_path(f"tx-h{i}"))]
            senders.append(ctx.procs.start(f"tx-h{i}", cmd, ctx.host(f"h{i}")))
        port = ctx.topology.link("s1", "s2").a_port
        start = time.monotonic()
        while any(s.proc.poll() is None for s in senders):
            elapsed = time.monotonic() - start
            if elapsed > run_s + 20:
                break
            ctx.say(f"  t={elapsed:5.1f}/{run_s:.0f} s  {ctx.algo}: {status(ctx, port)}")
            time.sleep(2.0)
        records = read_jsonl(ctx.records_path)
        lines = ctx.net.stop_delay_lines()
        return {
            "run_s": run_s,
            "warmup_s": warm_s,
            "base_rtt_ms": base_rtt,
            "delay_lines": {h: delay_line_summary(c) for h, c in lines.items()},
            "flows": {f"h{i}": sender_log(ctx.log_path(f"tx-h{i}")) for i in range(1, FLOWS + 1)},
            "port": port_columns(records, "s1", port, ctx.t0),
            "ficcrd": ficcrd_totals(records),
        }

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        fair = fair_kbps()
        out: dict[str, Any] = {
            "rtt_emulation": "delay-line",
            "rtt_emulation_detail": "no netem: a userspace delay line (fairgate_topo.delayline) "
            "on each source's access link; base_rtt_ms (base_rtt_mean_ms) is the minimum "
            "(mean) of 10 idle pings per source, measured before the traffic (h1 also "
            "crosses BMv2 switch s0, the paper's router 10)",
            "access_delay_ms": access_delays_ms(),
            "fair_share_kbps": round(fair, 1),
            "q0_pkts": Q0,
            "buffer_pkts": DEPTH,
        }
        for algo, run in runs.items():
            out[algo] = summarize_run(run, fair)
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        return [
            plot_goodput(run_dir / "ficcrd-goodput.png", runs, fair_kbps()),
            plot_queue(run_dir / "ficcrd-queue.png", runs),
            plot_senders(run_dir / "ficcrd-senders.png", runs),
        ]


def status(ctx: LabContext, port: int) -> str:
    recs = [r for r in read_jsonl(ctx.records_path)[-40:] if r["switch"] == "s1"]
    r = next((x for x in reversed(recs) if x["port"] == port), None)
    if r is None:
        return ""
    q = r["queue_mean_bytes"] / FRAME
    return f"q {q:4.1f} pkt (Q0 {Q0:g}), drops {r['drop_pkts']}, dep {r['departure_pkts']} pkt"


def measure_base_rtt(ctx: LabContext) -> dict[str, dict[str, float] | None]:
    """Idle RTT of each source to its receiver: BASE_PINGS pings 20 ms apart,
    all sources at once, before any traffic; min and mean (ms) per source."""
    procs = {}
    for i in range(1, FLOWS + 1):
        cmd = ["ping", "-n", "-q", "-c", str(BASE_PINGS), "-i", "0.02", "-W", "2"]
        procs[f"h{i}"] = ctx.host(f"h{i}").popen(
            [*cmd, ctx.ip(f"r{i}")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
    out: dict[str, dict[str, float] | None] = {}
    for host, proc in procs.items():
        text, _ = proc.communicate(timeout=30)
        m = re.search(r"= ([\d.]+)/([\d.]+)/", text.decode(errors="replace"))
        out[host] = {"min": float(m.group(1)), "mean": float(m.group(2))} if m else None
    return out


def delay_line_summary(counts: dict[str, Any]) -> dict[str, Any]:
    """A delay line's exit counts, reduced: frames each way, every loss, timer error."""
    lost = sum(counts[d]["dropped_full"] + counts[d]["tx_errors"] for d in ("ab", "ba"))
    lost += sum(counts["socket_drops"].values()) + counts.get("truncated", 0)
    return {
        "delay_ms": counts["delay_ms"],
        "frames_ab": counts["ab"]["tx"],
        "frames_ba": counts["ba"]["tx"],
        "lost": lost,
        "oversize": counts["oversize"],
        "max_pending": max(counts["ab"]["max_pending"], counts["ba"]["max_pending"]),
        "lateness_us": counts["lateness"],
    }


def sender_log(path: Path) -> dict[str, Any]:
    recs = read_jsonl(path)
    samples = [r for r in recs if r.get("type") == "sample" and r.get("flows")]
    done = next((r for r in recs if r.get("type") == "done"), None)
    flow = (done or {}).get("flows", [{}])[0] if done else {}
    return {
        "t": [r["t_s"] for r in samples],
        "goodput_kbps": [r["flows"][0]["goodput_kbps"] for r in samples],
        "rtt_ms": [r["flows"][0]["rtt_us"] / 1000 for r in samples],
        "retrans": [r["flows"][0]["retrans"] for r in samples],
        "steady_goodput_kbps": flow.get("steady_goodput_kbps"),
        "acked_bytes": flow.get("acked_bytes"),
        "total_retrans": flow.get("retrans"),
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
    fig, (ax_g, ax_d) = plots.figure(2, "FICCRD Figs. 3 and 6: goodput / fair share, drops")
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
    return plots.save(fig, path)


def plot_queue(path: Path, runs: dict[str, dict[str, Any]]) -> Path:
    fig, axes = plots.figure(len(runs), "FICCRD Fig. 5: bottleneck queue (0.1 s means)")
    for ax, (algo, run) in zip(axes, runs.items(), strict=True):
        ax.plot(run["port"]["t"], run["port"]["queue_pkts"], lw=1, label=algo)
        ax.axhline(Q0, color="g", ls="--", lw=1, label=f"Q0 = {Q0:g}")
        ax.axhline(DEPTH, color="r", ls=":", lw=1, label=f"buffer {DEPTH}")
        ax.set_ylim(0, DEPTH * 1.1)
        ax.set_ylabel("queue (pkt)")
        ax.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("time (s)")
    return plots.save(fig, path)


def plot_senders(path: Path, runs: dict[str, dict[str, Any]]) -> Path:
    fig, axes = plots.figure(2 * len(runs), "FICCRD Fig. 4: sender sequence and throughput")
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
    return plots.save(fig, path)
