"""The experiment driver, written once for every engine: per algorithm it builds the
network, starts the flows at their times, advances time, collects the statistics, judges
the expectations; then it writes the run record and a plot."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairgate_exp import records
from fairgate_exp.engine import Engine
from fairgate_exp.metrics import Verdict, flow_rates, judge, mean_in, port_rows, window_drops
from fairgate_exp.oracle import maxmin_pps
from fairgate_exp.plan import Plan

Say = Callable[[str], None]
#: progress(algo, t, end, live line): called after every step of a run
Progress = Callable[[str, float, float, str], None]


class RunError(RuntimeError):
    """An engine failed; the traceback is in ``run_dir/error.txt``."""

    def __init__(self, msg: str, run_dir: Path) -> None:
        super().__init__(msg)
        self.run_dir = run_dir


def run_algo(
    plan: Plan, engine: Engine, algo: str, out: Path, say: Say, progress: Progress | None = None
) -> dict[str, Any]:
    engine.build(plan, algo, out)
    try:
        events = sorted(plan.flows, key=lambda f: f.start_s)
        end = plan.duration_s
        step = 1.0
        t = 0.0
        last_say = -1.0
        while t < end:
            nxt = min(end, t + step)
            while events and events[0].start_s <= t:
                engine.start_flow(events.pop(0))
            if events and events[0].start_s < nxt:
                nxt = events[0].start_s
            engine.advance(nxt)
            t = nxt
            if progress is not None:
                progress(algo, t, end, _live_line(plan, algo, engine, t))
            elif t - last_say >= 5.0 or t >= end:
                last_say = t
                say(_live_line(plan, algo, engine, t))
        engine.advance(end + 2 * plan.sample_s)
        facts = engine.close()
    except BaseException:
        engine.close()
        raise
    samples = engine.flow_samples()
    rates = {name: flow_rates(s) for name, s in samples.items()}
    rows = port_rows(plan, engine.port_records())
    verdicts = judge(plan, algo, rates, rows)
    return {"rates": rates, "rows": rows, "verdicts": verdicts, "engine": facts}


def _live_line(plan: Plan, algo: str, engine: Engine, t: float) -> str:
    rows = port_rows(plan, [r for r in engine.port_records() if r["t"] > t - 1.0])
    latest: dict[str, dict[str, Any]] = {}
    for r in rows:
        latest[r["port"]] = r
    parts = [
        f"{lab} u{r['util']:4.0%} q{r['queue_pkts']:5.1f} R{r['rate_kbps'] or '-'}"
        for lab, r in latest.items()
    ]
    return f"  [{algo}] t={t:5.1f}/{plan.duration_s:g} s  " + " | ".join(sorted(parts)[:4])


def run(
    plan: Plan,
    make_engine: Callable[[], Engine],
    engine_name: str,
    results: Path = Path("results"),
    algos: list[str] | None = None,
    say: Say = print,
    progress: Progress | None = None,
) -> tuple[Path, dict[str, Any]]:
    algos = algos or plan.algorithms
    run_dir = records.new_run_dir(results, plan.name, engine_name, plan.scale)
    records.write_json(run_dir / "experiment.json", plan.resolved())
    records.write_json(run_dir / "versions.json", records.versions(engine_name))
    say(
        f"{plan.name}: {engine_name}, scale {plan.scale} (x{plan.factor:g}), "
        f"{', '.join(algos)} -> {run_dir}"
    )
    flow_rows: list[dict[str, Any]] = []
    port_rows_all: list[dict[str, Any]] = []
    verdicts: list[Verdict] = []
    per_algo: dict[str, Any] = {}
    t0 = time.monotonic()
    for algo in algos:
        try:
            res = run_algo(plan, make_engine(), algo, run_dir / algo, say, progress)
        except Exception as exc:
            (run_dir / "error.txt").write_text(traceback.format_exc())
            raise RunError(f"{algo}: {type(exc).__name__}: {exc}", run_dir) from exc
        for name, series in res["rates"].items():
            flow_rows += [
                {
                    "algo": algo,
                    "t": t,
                    "flow": name,
                    "rate_pps": round(v, 3),
                    "rate_kbps": round(v * plan.frame * 8 / 1000, 2),
                }
                for t, v in series
            ]
        port_rows_all += [{"algo": algo, **r} for r in res["rows"]]
        verdicts += res["verdicts"]
        per_algo[algo] = _algo_summary(plan, res)
        if progress is None:
            for v in res["verdicts"]:
                say("  " + v.line())
    records.write_csv(run_dir / "flows.csv", flow_rows)
    records.write_csv(run_dir / "ports.csv", port_rows_all)
    summary = {
        "experiment": plan.name,
        "title": plan.file.experiment.title,
        "paper": plan.file.experiment.paper,
        "run_id": run_dir.name,
        "engine": engine_name,
        "scale": plan.scale,
        "factor": plan.factor,
        "seed": plan.seed,
        "algos": algos,
        "elapsed_s": round(time.monotonic() - t0, 1),
        "passed": all(v.passed for v in verdicts),
        "verdicts": [v.to_json() for v in verdicts],
        "results": per_algo,
        "paper_numbers": dict(plan.file.paper),
    }
    records.write_json(run_dir / "summary.json", summary)
    records.write_json(run_dir / "verdicts.json", [v.to_json() for v in verdicts])
    try:
        from fairgate_exp.plot import plot_run

        summary["plots"] = [p.name for p in plot_run(run_dir, plan, flow_rows, port_rows_all)]
        records.write_json(run_dir / "summary.json", summary)
    except ImportError as exc:  # matplotlib is pinned; say so rather than fail the run
        say(f"  no plot: {exc}")
    records.link_latest(run_dir)
    return run_dir, summary


def _algo_summary(plan: Plan, res: dict[str, Any]) -> dict[str, Any]:
    """Per window (after warm-up, then each phase): the mean rate of every flow active
    over the whole window beside its max-min share, and each measured port's figures."""
    windows = [("run", plan.warmup_s, plan.duration_s), *plan.phases]
    out: dict[str, Any] = {"windows": {}}
    for label, t0, t1 in windows:
        active = [f for f in plan.flows if f.start_s <= t0 and f.stop_s >= t1]
        oracle = maxmin_pps(plan, active)
        flows = {}
        for f in active:
            got = mean_in(res["rates"].get(f.name, []), t0, t1)
            flows[f.name] = {
                "mean_pps": round(got, 2) if got is not None else None,
                "mean_kbps": round(got * plan.frame * 8 / 1000, 1) if got is not None else None,
                "maxmin_pps": round(oracle[f.name], 2),
            }
        ports = {}
        for lab in sorted({r["port"] for r in res["rows"]}):
            rs = [r for r in res["rows"] if r["port"] == lab and t0 < r["t"] <= t1]
            if rs:
                ports[lab] = {
                    "util": round(sum(r["util"] for r in rs) / len(rs), 4),
                    "queue_pkts": round(sum(r["queue_pkts"] for r in rs) / len(rs), 2),
                    "drops": window_drops(rs),
                }
        out["windows"][label] = {"window_s": [t0, t1], "flows": flows, "ports": ports}
    run = out["windows"]["run"]
    out.update(flows=run["flows"], ports=run["ports"], engine=res["engine"])
    return out
