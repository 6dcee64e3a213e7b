"""Session control (Kasera et al. Fig. 2, Tables I-II): TCP uploads through one
gated bottleneck; completion rate with no gating, static admit rates (sweep)
and the controller's search (strategy 1 and 2).

Runs ("algorithms" of this scenario): ``none`` (no gating), ``static-<fps>``
(the controller installs routes and is stopped; the lab then writes the SYN
meter itself over P4Runtime), ``strategy1``, ``strategy2``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabTopology
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import PY, LabContext, read_jsonl
from fairgate_topo.topos import single_bottleneck

QUEUE_PPS, DEPTH = 500, 64
ARRIVALS_FPS, SHAPE, MEAN_BYTES = 250.0, 1.5, 10_000
SEARCH_RUN_S, SEARCH_WARMUP_S = 150.0, 90.0  # the search needs ~90 s with 2 s windows
STATIC_RUN_S, STATIC_WARMUP_S = 35.0, 10.0
SMOKE_RUN_S, SMOKE_WARMUP_S = 14.0, 5.0
DRAIN_S = 3.0
SESSION_WINDOW_S = 2.0
# Flows never time out within a run (a timed-out flow's close sends a FIN that the switch
# would count as a completion); SYNs that are never admitted give up after 15 s
# (tcp_syn_retries 3: SYNs at 0, 1, 3 and 7 s, give up at 15 s), which bounds the client's
# sockets. A process here stops near 20000.
MAX_OPEN = 16000
# The hosts' TCP is the one the simulator models (fairgate_sim.tcp) and the paper used:
# Reno congestion control (this kernel's default is BBR, which paces and hardly backs off
# on loss) and SYN retransmissions with exponential back-off (kernels >= 6.5 retry the
# first tcp_syn_linear_timeouts = 4 SYNs every 1 s and give up after 4 s with 3 retries:
# three times the SYN load on the gated queue). All per network namespace.
SYSCTLS = {
    "net.core.somaxconn": "4096",
    "net.ipv4.tcp_max_syn_backlog": "4096",
    "net.ipv4.ip_local_port_range": "1024 65535",
    "net.ipv4.tcp_tw_reuse": "1",
    "net.ipv4.tcp_syn_retries": "3",
    "net.ipv4.tcp_syn_linear_timeouts": "0",
    "net.ipv4.tcp_congestion_control": "reno",
}


class SessionControl(Scenario):
    name = "session-control"
    algos = (
        "none",
        "static-25",
        "static-50",
        "static-75",
        "static-100",
        "static-150",
        "strategy1",
        "strategy2",
    )
    paper = "Search-based session control (Kasera et al.) Fig. 2, Tables I-II"

    @property
    def allowed(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("none", "strategy1", "strategy2", *(f"static-{n}" for n in range(1, 1001)))

    def smoke_algos(self) -> tuple[str, ...]:
        return ("none", "static-60")

    def topology(self, smoke: bool) -> LabTopology:
        return single_bottleneck(QUEUE_PPS, DEPTH, admission=True)

    def host_sysctls(self) -> dict[str, str]:
        return dict(SYSCTLS)

    def timing(self, algo: str, smoke: bool) -> tuple[float, float]:
        if smoke:
            return SMOKE_RUN_S, SMOKE_WARMUP_S
        if algo.startswith("strategy"):
            return SEARCH_RUN_S, SEARCH_WARMUP_S
        return STATIC_RUN_S, STATIC_WARMUP_S

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "bottleneck": f"BMv2 queue {QUEUE_PPS} pkt/s, depth {DEPTH} (about 5 Mbit/s "
            "of 1500 B segments; SYNs/ACKs/FINs cost one packet each)",
            "workload": f"Poisson {ARRIVALS_FPS:g} flows/s, Pareto shape {SHAPE}, "
            f"mean {MEAN_BYTES} B",
            "runs_s": {
                "static_and_none": self.timing("none", smoke),
                "search": self.timing("strategy1", smoke),
            },
            "window": "completions counted from the warm-up to the end of arrivals",
            "paper": "10 Mbit/s, 100 ms, 1000 flows/s offered: 44 flows/s completed with no "
            "control vs 107 at admit rate 250 (Table I)",
        }

    def run(self, ctx: LabContext) -> dict[str, Any]:
        algo = ctx.algo
        session = algo if algo.startswith("strategy") else "off"
        ctl = ctx.start_controller(
            "none", ["--session", session, "--session-window", str(SESSION_WINDOW_S)]
        )
        link = ctx.topology.link("s1", "s2")
        static = int(algo.split("-")[1]) if algo.startswith("static-") else None
        if static is not None:
            ctx.procs.stop(ctl)  # the switch keeps routes and admission; we own the meter
            write_meter(ctx, "s1", link.a_port, static)
        duration, warmup = self.timing(algo, ctx.smoke)
        server = [PY, "-m", "fairgate_hosts.traffic.server", "--backlog", "4096"]
        server += ["--max-open", str(MAX_OPEN)]
        server += ["--records", str(ctx.log_path("server-conns"))]
        server += ["--summary", str(ctx.run_dir / "hosts" / "server-summary.json")]
        ctx.procs.start("server", server, ctx.host("server"))
        time.sleep(0.5)
        summary_path = ctx.run_dir / "hosts" / "client-summary.json"
        client = [PY, "-m", "fairgate_hosts.traffic.client", "--dst", ctx.ip("server")]
        client += ["--rate", str(ARRIVALS_FPS), "--shape", str(SHAPE)]
        client += ["--mean-size", str(MEAN_BYTES), "--seed", "1"]
        client += ["--duration", str(duration), "--warmup", str(warmup)]
        client += ["--timeout", str(duration + DRAIN_S + 10), "--drain", str(DRAIN_S)]
        client += ["--max-open", str(MAX_OPEN)]
        client += ["--records", str(ctx.log_path("client-flows"))]
        client += ["--summary", str(summary_path)]
        ctx.t0 = time.time()
        tracked = ctx.procs.start("client", client, ctx.host("client"))
        start = time.monotonic()
        while tracked.proc.poll() is None:
            elapsed = time.monotonic() - start
            ctx.say(f"  t={elapsed:5.1f}/{duration + DRAIN_S:.0f} s  {algo}: {self.status(ctx)}")
            time.sleep(min(2.0, max(0.2, duration + DRAIN_S + 5 - elapsed)))
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
        return {
            "summary": summary,
            "completions": completion_series(ctx.log_path("client-flows")),
            "admit": admit_series(read_jsonl(ctx.records_path), ctx.t0) if static is None else [],
            "static_fps": static,
            "warmup_s": warmup,
        }

    def status(self, ctx: LabContext) -> str:
        recs = read_jsonl(ctx.records_path)[-20:]
        gated = [r for r in recs if r.get("switch") == "s1" and "admit_fps" in r]
        if not gated:
            return ""
        r = gated[-1]
        return f"admit {r.get('admit_fps')} flows/s, completions {r.get('window_completions_fps')}"

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for algo, run in runs.items():
            s = run["summary"]
            sizes = s.get("sizes_completed", {})
            out[algo] = {
                "completion_rate_per_s": s.get("completion_rate_per_s"),
                "completed_in_window": s.get("completed_in_window"),
                "offered_per_s": s.get("offered_per_s"),
                "fct_s": s.get("fct_s"),
                "frac_completed_above_10kB": sizes.get("frac_above", {}).get("10000"),
                "frac_offered_above_10kB": s.get("sizes_offered", {})
                .get("frac_above", {})
                .get("10000"),
                "outcomes": s.get("outcomes"),
                "final_admit_fps": run["admit"][-1][1] if run["admit"] else run["static_fps"],
                "admit_fps_during_window": admit_during(run["admit"], run["warmup_s"]),
            }
        base = (out.get("none") or {}).get("completion_rate_per_s")
        if base:
            out["ratio_to_no_control"] = {
                a: round(v["completion_rate_per_s"] / base, 2)
                for a, v in out.items()
                if isinstance(v, dict) and v.get("completion_rate_per_s") is not None
            }
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        fig, (ax_sweep, ax_time) = plots.figure(2, "Session control: completion rate", 3.2)
        static = sorted(
            (r["static_fps"], r["summary"].get("completion_rate_per_s") or 0)
            for r in runs.values()
            if r["static_fps"] is not None
        )
        if static:
            ax_sweep.plot([s[0] for s in static], [s[1] for s in static], "o-", label="static")
        for algo in ("none", "strategy1", "strategy2"):
            if algo in runs:
                rate = runs[algo]["summary"].get("completion_rate_per_s") or 0
                ax_sweep.axhline(rate, ls="--", lw=1, label=f"{algo}: {rate:.1f}", color=None)
        ax_sweep.set_xlabel("admit rate (flows/s)")
        ax_sweep.set_ylabel("completed flows/s")
        ax_sweep.legend(fontsize=8)
        ax_sweep.xaxis.set_tick_params(labelbottom=True)
        for algo, run in runs.items():
            if algo in ("none", "strategy1", "strategy2"):
                c = run["completions"]
                ax_time.plot([p[0] for p in c], [p[1] for p in c], label=f"{algo} completions")
                a = [p for p in run["admit"] if p[1] is not None]
                if a:
                    ax_time.plot(
                        [p[0] for p in a], [p[1] for p in a], ls=":", label=f"{algo} admit rate"
                    )
        ax_time.set_xlabel("time (s)")
        ax_time.set_ylabel("flows/s")
        ax_time.legend(fontsize=8)
        return [plots.save(fig, run_dir / "session-control.png")]


def write_meter(ctx: LabContext, switch: str, port: int, admit_fps: float) -> None:
    from fairgate_controller.entities import meter_entry
    from fairgate_controller.sync_client import SyncSwitch
    from fairgate_p4 import artifacts

    spec = json.loads(ctx.net.topo_path.read_text())
    addr = next(s["grpc_addr"] for s in spec["switches"] if s["name"] == switch)
    with SyncSwitch(
        addr,
        artifacts.p4info_path("fairgate"),
        artifacts.bmv2_json_path("fairgate"),
        election_id=20,
        name=switch,
    ) as p4:
        p4.modify(meter_entry(port, admit_fps))


def completion_series(path: Path, bin_s: float = 1.0) -> list[list[float]]:
    """Completions per second over time, from the client's flow records."""
    bins: dict[int, int] = {}
    for r in read_jsonl(path):
        if r.get("type") == "flow" and r.get("outcome") == "completed":
            end = r["start_s"] + r["fct_s"]
            bins[int(end // bin_s)] = bins.get(int(end // bin_s), 0) + 1
    if not bins:
        return []
    return [[(b + 0.5) * bin_s, bins.get(b, 0) / bin_s] for b in range(max(bins) + 1)]


def admit_series(records: list[dict[str, Any]], t0: float) -> list[list[float]]:
    out = []
    for r in records:
        if "admit_fps" in r and r["switch"] == "s1":
            out.append([round(r["t"] - t0, 2), r["admit_fps"]])  # None: no gating
    return out


def admit_during(admit: list[list[Any]], from_s: float) -> dict[str, Any] | None:
    """Time share without gating and the mean gated rate after `from_s`."""
    vals = [a for t, a in admit if t >= from_s]
    if not vals:
        return None
    gated = [a for a in vals if a is not None]
    return {
        "ungated_fraction": round(1 - len(gated) / len(vals), 3),
        "mean_gated_fps": round(sum(gated) / len(gated), 1) if gated else None,
    }
