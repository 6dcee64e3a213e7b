"""The experiment driver, written once for every engine: per algorithm it builds the
network, starts the flows at their times, advances time, collects the statistics, judges
the expectations; then it writes the run record and a plot."""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairgate_exp import records, settling
from fairgate_exp.engine import Engine
from fairgate_exp.metrics import (
    Measurement,
    Verdict,
    active_in,
    flow_rates,
    goodput_ratio,
    jain,
    judge,
    judge_versus,
    loss_rate,
    mean_in,
    measured_entries,
    port_rows,
    retrans_in,
    tcp_summaries,
    window_drops,
)
from fairgate_exp.oracle import ack_frame_of, maxmin_pps
from fairgate_exp.plan import CapacityChangePlan, CmPlan, FlowPlan, Plan, TcpPlan

Say = Callable[[str], None]
#: progress(algo, t, end, live line): called after every step of a run
Progress = Callable[[str, float, float, str], None]


class RunError(RuntimeError):
    """An engine failed; the traceback is in ``run_dir/error.txt``."""

    def __init__(self, msg: str, run_dir: Path) -> None:
        super().__init__(msg)
        self.run_dir = run_dir


def _connected_at(r: dict[str, Any]) -> float | None:
    """Seconds since the run began at which a TCP flow record's handshake completed."""
    start, connect = r.get("start_s"), r.get("connect_s")
    return None if start is None or connect is None else round(start + connect, 6)


def run_algo(
    plan: Plan, engine: Engine, algo: str, out: Path, say: Say, progress: Progress | None = None
) -> dict[str, Any]:
    """One run of one algorithm (and of ``plan.variant``, if the file has variants)."""
    label = run_label(plan, algo)
    engine.build(plan, algo, out)
    try:
        events: list[tuple[float, FlowPlan | TcpPlan | CmPlan | CapacityChangePlan]] = sorted(
            [(f.start_s, f) for f in plan.flows]
            + [(g.start_s, g) for g in plan.tcp]
            + [(a.start_s, a) for a in plan.cm]
            + [(c.at_s, c) for c in plan.capacity_changes],
            key=lambda e: e[0],
        )
        end = plan.duration_s
        step = 1.0
        t = 0.0
        last_say = -1.0
        while t < end:
            nxt = min(end, t + step)
            while events and events[0][0] <= t:
                item = events.pop(0)[1]
                if isinstance(item, TcpPlan):
                    engine.start_tcp(item)
                elif isinstance(item, CmPlan):
                    engine.start_cm(item)
                elif isinstance(item, CapacityChangePlan):
                    engine.set_capacity(item.switch, item.port, item.pps, item.bps)
                    # BMv2: in effect once the Thrift CLI has returned (seconds when busy)
                    say(
                        f"{label}: t={t:g} s: {item.label} now serves {item.capacity}"
                        f" (in effect at {engine.now():.1f} s)"
                    )
                else:
                    engine.start_flow(item)
            if events and events[0][0] < nxt:
                nxt = events[0][0]
            engine.advance(nxt)
            t = nxt
            if progress is not None:
                progress(label, t, end, _live_line(plan, label, engine, t))
            elif t - last_say >= 5.0 or t >= end:
                last_say = t
                say(_live_line(plan, label, engine, t))
        tcp = engine.tcp_records() if plan.tcp else []  # open flows: interrupted at the end
        engine.advance(end + 2 * plan.sample_s)
        facts = engine.close()
    except BaseException:
        engine.close()
        raise
    samples = engine.flow_samples()
    # an engine without traces yet records none (the file still runs)
    traces_of = getattr(engine, "flow_traces", None)
    traces = traces_of() if plan.file.measure.traces and traces_of is not None else {}
    retrans = engine.tcp_retransmits() if plan.tcp_flows else {}
    rates = {name: flow_rates(s) for name, s in samples.items()}
    records_ = engine.port_records()
    rows = port_rows(plan, records_)
    tcp_summary = tcp_summaries(plan, tcp)
    cm_facts = (facts or {}).get("cm") if isinstance(facts, dict) else None
    verdicts = judge(plan, algo, rates, rows, tcp_summary, label, cm_facts)
    values = judge(plan, algo, rates, rows, tcp_summary, label, cm_facts, measured_entries(plan))
    measured = [Measurement.of(v) for v in values]  # the same code, no verdict kept
    return {
        "rates": rates,
        "rows": rows,
        "verdicts": verdicts,
        "measured": measured,
        "engine": facts,
        "tcp": tcp,
        "tcp_summary": tcp_summary,
        "admit": admit_series(plan, records_),
        "restarts": restart_times(plan, records_),
        "retrans": retrans,
        "traces": traces,
        "ficcrd": ficcrd_totals(plan, records_) if algo == "ficcrd" else {},
    }


def trace_table(
    algo: str, traces: dict[str, list[tuple[float, int, int, float | None]]]
) -> list[dict[str, Any]]:
    """traces.csv's rows: per flow and sample, its sequence number (packets delivered so
    far), its rate over the sample (packets/s), its loss events so far and the CM's rate."""
    rows: list[dict[str, Any]] = []
    for name, series in traces.items():
        prev: tuple[float, int] | None = None
        for t, seq, losses, cm_kbps in series:
            rate = None
            if prev is not None and t > prev[0]:
                rate = round((seq - prev[1]) / (t - prev[0]), 3)
            prev = (t, seq)
            rows.append(
                {
                    "algo": algo,
                    "t": round(t, 4),
                    "flow": name,
                    "seq_pkts": seq,
                    "rate_pps": rate,
                    "losses": losses,
                    "cm_rate_kbps": None if cm_kbps is None else round(cm_kbps, 2),
                }
            )
    return rows


def ficcrd_totals(plan: Plan, records_: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """FICCRD's event counters summed over the run, per port label (non-zero only)."""
    from fairgate_controller.ficcrd import CORE_EVENTS, EDGE_EVENTS

    out: dict[str, dict[str, int]] = {}
    for r in records_:
        key = (r["switch"], r["port"])
        for name in (*EDGE_EVENTS, *CORE_EVENTS):
            if r.get(name) and key in plan.ports:
                slot = out.setdefault(plan.ports[key].label, {})
                slot[name] = slot.get(name, 0) + int(r[name])
    return out


def run_label(plan: Plan, algo: str) -> str:
    """``algo``, or with variants the variant's name (``algo+variant`` when the file
    compares several algorithms)."""
    if plan.variant is None:
        return algo
    if len(plan.algorithms) == 1:
        return plan.variant.name
    return f"{algo}+{plan.variant.name}"


def _label_of(plan: Plan, algo: str, variant: str) -> str:
    """The record's name of ``variant`` run with ``algo`` (as :func:`run_label`)."""
    return variant if len(plan.algorithms) == 1 else f"{algo}+{variant}"


def admit_series(plan: Plan, records_: list[dict[str, Any]]) -> list[list[Any]]:
    """(t, admit rate in flows/s or None: not gating) of session control, per period of
    the first gated port."""
    if not plan.gated:
        return []
    sw, port = plan.gated[0]
    return [
        [round(r["t"], 2), r["admit_fps"]]
        for r in records_
        if (r["switch"], r["port"]) == (sw, port) and "admit_fps" in r
    ]


def restart_times(plan: Plan, records_: list[dict[str, Any]]) -> list[float]:
    """When session control restarted its search on the first gated port (a change
    detected, or the periodic re-search): the windows whose restart count went up."""
    if not plan.gated:
        return []
    sw, port = plan.gated[0]
    out: list[float] = []
    last = 0
    for r in records_:
        n = r.get("session_restarts")
        if (r["switch"], r["port"]) != (sw, port) or n is None:
            continue
        if n > last:
            out.append(round(r["t"], 2))
        last = n
    return out


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
    measured: list[Measurement] = []
    per_algo: dict[str, Any] = {}
    t0 = time.monotonic()
    tcp_rows: list[dict[str, Any]] = []
    variant_tcp: dict[str, dict[str, Any]] = {}  # algo -> variant -> its TCP summary
    trace_rows: list[dict[str, Any]] = []
    runs = [
        (algo, plan.with_variant(v) if v is not None else plan)
        for algo in algos
        for v in (plan.variants or [None])
    ]
    for algo, p in runs:
        label = run_label(p, algo)
        try:
            res = run_algo(p, make_engine(), algo, run_dir / label, say, progress)
        except Exception as exc:
            (run_dir / "error.txt").write_text(traceback.format_exc())
            raise RunError(f"{label}: {type(exc).__name__}: {exc}", run_dir) from exc
        tcp_rows += [
            {
                "algo": label,
                "generator": r["generator"],
                "flow": r["flow"],
                "scheduled_s": round(r["scheduled_s"], 6),
                "size": r["size"],
                "outcome": r["outcome"],
                "fct_s": None if r["fct_s"] is None else round(r["fct_s"], 6),
                # when the handshake completed (start + connect time): flows connected
                # per window, the admissions strategy 2 compares with completions
                "connected_s": _connected_at(r),
                # SYNs sent again before the handshake completed, and every segment
                # (SYNs included) sent again: the engines' TCPs compared flow by flow
                "syn_retrans": r.get("syn_retrans"),
                "retrans": r.get("retrans"),
            }
            for r in res["tcp"]
        ]
        if p.variant is not None:
            variant_tcp.setdefault(algo, {})[p.variant.name] = res["tcp_summary"]
        algo = label
        trace_rows += trace_table(algo, res["traces"])
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
        measured += res["measured"]
        per_algo[algo] = _algo_summary(p, res, algo)
        if progress is None:
            for v in [*res["verdicts"], *res["measured"]]:
                say("  " + v.line())
    for algo, tcp_of in variant_tcp.items():  # expectations against other variants
        across = judge_versus(plan, algo, tcp_of, lambda n, a=algo: _label_of(plan, a, n))
        verdicts += across
        for v in across:
            say("  " + v.line())
        values = judge_versus(
            plan, algo, tcp_of, lambda n, a=algo: _label_of(plan, a, n), measured_entries(plan)
        )
        for m in map(Measurement.of, values):
            measured.append(m)
            say("  " + m.line())
    cross = settling.judge_settling(enumerate(plan.file.expect), per_algo)
    if any(e.metric == "settling" for e in plan.file.expect) and not cross:
        say(
            "  settling: not judged here (it needs a static gate and a search in one run):"
            " make report judges it over the newest variants of this engine and scale"
        )
    for v in cross:
        say("  " + v.line())
    verdicts += cross
    records.write_csv(run_dir / "flows.csv", flow_rows)
    records.write_csv(run_dir / "ports.csv", port_rows_all)
    if tcp_rows:
        records.write_csv(run_dir / "tcp.csv", tcp_rows)
    if trace_rows:
        records.write_csv(run_dir / "traces.csv", trace_rows)
    summary = {
        "experiment": plan.name,
        "title": plan.file.experiment.title,
        "paper": plan.file.experiment.paper,
        "run_id": run_dir.name,
        "engine": engine_name,
        "scale": plan.scale,
        "factor": plan.factor,
        "seed": plan.seed,
        "algos": list(per_algo),
        "elapsed_s": round(time.monotonic() - t0, 1),
        "passed": all(v.passed for v in verdicts),
        "verdicts": [v.to_json() for v in verdicts],
        # [measure] metrics: values without a verdict (the sweep table's, the report's)
        "measured": [m.to_json() for m in measured],
        "results": per_algo,
        "paper_numbers": dict(plan.file.paper),
    }
    records.write_json(run_dir / "summary.json", summary)
    records.write_json(run_dir / "verdicts.json", [v.to_json() for v in verdicts])
    try:
        from fairgate_exp.plot import plot_bulk, plot_run, plot_tcp

        plots = plot_run(run_dir, plan, flow_rows, port_rows_all)
        if any(r["outcome"] == "completed" for r in tcp_rows):
            plots += plot_tcp(run_dir, plan, tcp_rows)
        plots += plot_bulk(run_dir, plan, per_algo)
        if trace_rows:
            from fairgate_exp.plot import plot_losses, plot_traces

            plots += plot_traces(run_dir, plan, trace_rows, port_rows_all)
            plots += plot_losses(run_dir, plan, per_algo)
        summary["plots"] = [p.name for p in plots]
        records.write_json(run_dir / "summary.json", summary)
    except ImportError as exc:  # matplotlib is pinned; say so rather than fail the run
        say(f"  no plot: {exc}")
    records.link_latest(run_dir)
    return run_dir, summary


def _bulk_summary(plan: Plan, res: dict[str, Any]) -> dict[str, Any]:
    """Bulk TCP flows after warm-up: Jain of their goodputs, goodput over the capacity of
    the port they share, and retransmissions (per flow: the whole run and after warm-up)."""
    t0, t1 = plan.warmup_s, plan.duration_s
    flows = [f for f in plan.tcp_flows if f.start_s <= t0 and f.stop_s >= t1]
    goodput = {f.name: mean_in(res["rates"].get(f.name, []), t0, t1) or 0.0 for f in flows}
    ratio, port = goodput_ratio(plan, res["rates"], t0, t1)
    series = res["retrans"]
    after = {f.name: retrans_in(series.get(f.name, []), t0, t1) for f in flows}
    return {
        "window_s": [t0, t1],
        "base_rtt_ms": {f.name: round(plan.base_rtt_s(f) * 1000, 3) for f in flows},
        "jain": round(jain(list(goodput.values())), 4),
        "goodput_over_capacity": ratio,
        "port": port,
        "retrans_after_warmup": sum(after.values()),
        "retrans_per_flow": {
            f.name: {
                "total": series[f.name][-1][1] if series.get(f.name) else 0,
                "after_warmup": after[f.name],
            }
            for f in flows
        },
    }


def _algo_summary(plan: Plan, res: dict[str, Any], algo: str) -> dict[str, Any]:
    """Per window (after warm-up, then each phase): the mean rate of every flow active
    over the whole window beside its max-min share, and each measured port's figures."""
    windows = [("run", plan.warmup_s, plan.duration_s), *plan.phases]
    out: dict[str, Any] = {"windows": {}}
    for label, t0, t1 in windows:
        active = active_in(plan, t0, t1)
        oracle = maxmin_pps(plan, active, ack_frame_of(algo))
        flows = {}
        for f in active:
            got = mean_in(res["rates"].get(f.name, []), t0, t1)
            flows[f.name] = {
                "mean_pps": round(got, 2) if got is not None else None,
                "mean_kbps": round(got * plan.frame * 8 / 1000, 1) if got is not None else None,
                "maxmin_pps": round(oracle[f.name], 2),
            }
        for a in plan.cm:  # CM flows: measured only (the oracle knows paced flows)
            if a.start_s <= t0 and a.stop_s >= t1:
                for name in sorted(n for n in res["rates"] if n.startswith(f"{a.name}-")):
                    got = mean_in(res["rates"][name], t0, t1)
                    flows[name] = {
                        "mean_pps": round(got, 2) if got is not None else None,
                        "mean_kbps": round(got * plan.frame * 8 / 1000, 1)
                        if got is not None
                        else None,
                        "maxmin_pps": None,
                    }
        ports = {}
        for lab in sorted({r["port"] for r in res["rows"]}):
            rs = [r for r in res["rows"] if r["port"] == lab and t0 < r["t"] <= t1]
            if rs:
                q = [r["queue_pkts"] for r in rs]
                mean_q = sum(q) / len(q)
                ports[lab] = {
                    "util": round(sum(r["util"] for r in rs) / len(rs), 4),
                    "queue_pkts": round(mean_q, 2),
                    "queue_sd_pkts": round((sum((x - mean_q) ** 2 for x in q) / len(q)) ** 0.5, 2),
                    "drops": window_drops(rs),
                    "loss_rate": None if (lr := loss_rate(rs)) is None else round(lr, 5),
                }
                # the controller's equivalent number of flows (QFCP's N, Lestas's N-hat)
                ns = [r["n"] for r in rs if r.get("n") is not None]
                if ns:
                    ports[lab]["flow_number"] = round(sum(ns) / len(ns), 3)
        out["windows"][label] = {"window_s": [t0, t1], "flows": flows, "ports": ports}
    run = out["windows"]["run"]
    out.update(flows=run["flows"], ports=run["ports"], engine=res["engine"])
    if res["tcp_summary"]:
        out["tcp"] = res["tcp_summary"]
    if plan.tcp and any(e.metric == "settling" for e in plan.file.expect):
        end = max(g.stop_s for g in plan.tcp)
        out["completions"] = {
            "bin_s": 1.0,
            "end_s": end,
            "counts": settling.completion_counts(res["tcp"], end),
        }
    if plan.tcp_flows:
        out["tcp_flows"] = _bulk_summary(plan, res)
    if res["ficcrd"]:
        out["ficcrd_counters"] = res["ficcrd"]
    if plan.variant is not None:
        v = plan.variant
        out["variant"] = {
            "name": v.name,
            "session": v.session,
            "admit_fps": v.admit_fps,
            "duration_s": v.duration_s,
            "warmup_s": v.warmup_s,
        }
        out["admit"] = res["admit"] if v.session != "off" else []
        if v.session != "off":
            out["restarts_s"] = res["restarts"]
    return out
