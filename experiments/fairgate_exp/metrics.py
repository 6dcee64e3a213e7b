"""From raw engine output to series, window means and expectation verdicts (pure)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fairgate_exp import units
from fairgate_exp.oracle import ack_frame_of, bottlenecks, maxmin_pps
from fairgate_exp.plan import FlowPlan, Plan
from fairgate_exp.schema import TCP_METRICS, Expect
from fairgate_hosts.traffic.records import FlowRecord, summarize


def flow_rates(samples: list[tuple[float, int]]) -> list[tuple[float, float]]:
    """(t, packets/s over the interval ending at t) from cumulative counts."""
    out = []
    for (t0, n0), (t1, n1) in zip(samples, samples[1:], strict=False):
        if t1 > t0 and n1 >= n0:
            out.append((round(t1, 4), (n1 - n0) / (t1 - t0)))
    return out


def mean_in(series: list[tuple[float, float]], t0: float, t1: float) -> float | None:
    vals = [v for t, v in series if t0 < t <= t1]
    return sum(vals) / len(vals) if vals else None


def port_rows(plan: Plan, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per controller period and measured port."""
    measured = set(plan.measured)
    rows = []
    for r in records:
        key = (r["switch"], r["port"])
        if key not in measured:
            continue
        cap = r["capacity_Bps"] or 1.0
        exact = r.get("queue_exact_pkts")  # measure.queue = "exact" (simulator)
        queue_bytes = exact * plan.frame if exact is not None else r["queue_mean_bytes"]
        rows.append(
            {
                "t": round(r["t"], 4),
                "port": plan.ports[key].label,
                "period_s": r["period_s"],
                "util": round(r["departure_Bps"] / cap, 4),
                "y_util": round(r["y_Bps"] / cap, 4),
                "queue_pkts": round(queue_bytes / plan.frame, 3),
                "queue_bytes": round(queue_bytes, 1),
                "drops": r["drop_pkts"],
                # the queue's own drops where the engine knows them (the simulator)
                "queue_drops": r.get("queue_drop_pkts") if r.get("queue_drops_exact") else None,
                # the controller's running estimate from BMv2's counters (QueueDropEstimator)
                "drop_est": r.get("queue_drop_est_pkts"),
                "arrival_pkts": r["arrival_pkts"],
                "departure_pkts": r["departure_pkts"],
                "rate_kbps": r.get("rate_kbps"),
                # the controller's equivalent number of flows (QFCP's N, Lestas's N-hat)
                "n": r.get("N", r.get("N_hat")),
            }
        )
    return rows


def window_drops(rs: list[dict[str, Any]]) -> int:
    """Packets lost at a port over consecutive periods: arrivals - departures - the growth
    of the queue. (The controller's per-period ``drop_pkts`` is max(0, arrivals -
    departures), which also counts every packet that merely waits in the queue at the end
    of a period; summed over many periods it over-counts.) The queue at the window's ends
    is the mean of its first and last period (the histogram's), so this is exact to
    about a packet where the buckets are one packet wide (a few packets where they are
    wider), off by as much as the queue moves within the first and last period. Where the
    records carry the controller's running estimate (``drop_est``, telemetry's
    QueueDropEstimator, which counts a packet only once the queue histogram cannot hold
    it), the smaller of the two: each over-counts in its own way (this one at the window's
    ends, that one when the queue grew in a period's last sojourn), and in
    ``two-bottleneck`` on BMv2 this one alone read 4 where the senders lost nothing and
    the running estimate 0. Where the records carry the queue's exact drops (the
    simulator's), their sum."""
    if not rs:
        return 0
    if all(r.get("queue_drops") is not None for r in rs):  # exact (simulator)
        return round(sum(r["queue_drops"] for r in rs))
    net = sum(r["arrival_pkts"] - r["departure_pkts"] for r in rs)
    growth = rs[-1]["queue_pkts"] - rs[0]["queue_pkts"]
    drops = max(0, round(net - growth))
    if all(r.get("drop_est") is not None for r in rs):
        drops = min(drops, round(sum(r["drop_est"] for r in rs)))
    return drops


def active_in(plan: Plan, t0: float, t1: float) -> list[FlowPlan]:
    """Flows sending over the whole window (start before it, stop after it): paced flows
    and bulk TCP flows."""
    return [f for f in plan.flows + plan.tcp_flows if f.start_s <= t0 and f.stop_s >= t1]


def jain(values: list[float]) -> float:
    """Jain's fairness index of ``values`` (0 when all are 0)."""
    sq = sum(v * v for v in values)
    return sum(values) ** 2 / (len(values) * sq) if sq > 0 else 0.0


def common_bottleneck(plan: Plan, flows: list[FlowPlan]) -> tuple[str, int] | None:
    """The slowest port every one of ``flows`` crosses with its data (None: none)."""
    if not flows:
        return None
    common = set(flows[0].path)
    for f in flows[1:]:
        common &= set(f.path)
    if not common:
        return None
    return min(common, key=lambda k: plan.ports[k].capacity_Bps(plan.frame))


def goodput_ratio(
    plan: Plan, rates: dict[str, list[tuple[float, float]]], t0: float, t1: float
) -> tuple[float | None, str | None]:
    """The bulk TCP flows' summed goodput (acknowledged data frames/s) over the capacity
    of the port they all cross, and that port's label."""
    flows = [f for f in plan.tcp_flows if f.start_s <= t0 and f.stop_s >= t1]
    key = common_bottleneck(plan, flows)
    if key is None:
        return None, None
    total = sum(mean_in(rates.get(f.name, []), t0, t1) or 0.0 for f in flows)
    cap = plan.ports[key].capacity_Bps(plan.frame) / plan.frame
    return round(total / cap, 4), plan.ports[key].label


def retrans_in(series: list[tuple[float, int]], t0: float, t1: float) -> int:
    """Retransmissions between t0 and t1 from a cumulative series."""
    before = [n for t, n in series if t <= t0]
    inside = [n for t, n in series if t <= t1]
    if not inside:
        return 0
    return inside[-1] - (before[-1] if before else 0)


@dataclass
class Verdict:
    index: int
    metric: str
    algo: str
    window: tuple[float, float]
    passed: bool
    measured: Any
    expected: str
    detail: dict[str, Any]

    def line(self) -> str:
        mark = "PASS" if self.passed else "FAIL"
        return f"{mark} [{self.algo}] {self.metric}: {self.measured} (want {self.expected})"

    def to_json(self) -> dict[str, Any]:
        return {
            "expect": self.index,
            "metric": self.metric,
            "algo": self.algo,
            "window_s": list(self.window),
            "passed": self.passed,
            "measured": self.measured,
            "expected": self.expected,
            "detail": self.detail,
        }


@dataclass
class Measurement:
    """A value recorded without a verdict (``[measure]`` metrics): what the expectation
    of the same selectors measures (``Verdict.measured``), never judged."""

    index: int
    metric: str
    algo: str
    window: tuple[float, float]
    measured: Any
    detail: dict[str, Any]

    @classmethod
    def of(cls, v: Verdict) -> Measurement:
        return cls(v.index, v.metric, v.algo, v.window, v.measured, v.detail)

    def line(self) -> str:
        return f"MEASURED [{self.algo}] {self.metric}: {self.measured}"

    def to_json(self) -> dict[str, Any]:
        return {
            "measure": self.index,
            "metric": self.metric,
            "algo": self.algo,
            "window_s": list(self.window),
            "measured": self.measured,
            "detail": self.detail,
        }


def measured_entries(plan: Plan) -> list[tuple[int, Expect]]:
    """The file's ``[measure]`` metrics as expectations without bounds (their index in
    ``measure.metrics``): the judging code measures them, its verdict is dropped."""
    return [
        (i, Expect.model_validate(m.model_dump(exclude_none=True)))
        for i, m in enumerate(plan.file.measure.metrics)
    ]


def tcp_summaries(plan: Plan, records: list[dict[str, Any]]) -> dict[str, Any]:
    """Per TCP generator, the hosts' client summary (``traffic.records.summarize``):
    completions per second whose end falls in [warm-up, the generator's stop), FCT
    quantiles, outcomes, size mixes. ``all``: every generator's flows together."""
    if not plan.tcp:
        return {}
    fields = set(FlowRecord.__dataclass_fields__)
    recs: dict[str, list[FlowRecord]] = {g.name: [] for g in plan.tcp}
    for r in records:
        recs[r["generator"]].append(FlowRecord(**{k: v for k, v in r.items() if k in fields}))
    out: dict[str, Any] = {}
    for g in plan.tcp:
        if g.bulk and not any(r.outcome == "completed" for r in recs[g.name]):
            continue  # long-lived flows: measured per flow (goodput), not by FCT
        out[g.name] = summarize(
            recs[g.name],
            duration_s=g.stop_s - g.start_s,
            warmup_s=max(plan.warmup_s, g.start_s),
            window_end_s=g.stop_s,
        )
        out[g.name]["every_flow"] = fct_by_size(recs[g.name], g.mss)
    if len(out) > 1:
        start = min(g.start_s for g in plan.tcp)
        stop = max(g.stop_s for g in plan.tcp)
        out["all"] = summarize(
            [r for rs in recs.values() for r in rs],
            duration_s=stop - start,
            warmup_s=max(plan.warmup_s, start),
            window_end_s=stop,
        )
    return out


def fct_by_size(recs: list[FlowRecord], mss: int) -> dict[str, Any]:
    """Over every flow of the run (not only the window's, QFCP Fig. 1's way): how many
    completed, their mean FCT, that of short flows (<= 10 segments) and the mean FCT per
    power-of-two size bin in segments ("4-7": [flows, mean s])."""
    done = [r for r in recs if r.outcome == "completed" and r.fct_s is not None]
    fcts = [r.fct_s for r in done if r.fct_s is not None]
    short = [r.fct_s for r in done if r.fct_s is not None and -(-r.size // mss) <= 10]
    bins: dict[int, list[float]] = {}
    for r in done:
        pkts = -(-r.size // mss)
        bins.setdefault(max(0, int(math.log2(max(1, pkts)))), []).append(r.fct_s or 0.0)
    return {
        "flows": len(recs),
        "completed": len(done),
        "mean_fct_s": round(sum(fcts) / len(fcts), 4) if fcts else None,
        "mean_fct_short_s": round(sum(short) / len(short), 4) if short else None,
        "short_flows": len(short),
        "mean_fct_by_size_segments": {
            f"{2**b}-{2 ** (b + 1) - 1}": [len(v), round(sum(v) / len(v), 4)]
            for b, v in sorted(bins.items())
        },
    }


def judge(
    plan: Plan,
    algo: str,
    rates: dict[str, list[tuple[float, float]]],
    rows: list[dict[str, Any]],
    tcp: dict[str, Any] | None = None,
    label: str | None = None,
    cm: dict[str, Any] | None = None,
    entries: list[tuple[int, Expect]] | None = None,
) -> list[Verdict]:
    """Every expectation that applies to this run; ``label`` names the run in the
    verdicts (the algorithm, or the variant); ``cm``: the engine's facts per CM app;
    ``entries``: (index, expectation) to judge instead of the file's ``[[expect]]``."""
    out = []
    variant = plan.variant.name if plan.variant is not None else None
    for i, e in entries if entries is not None else enumerate(plan.file.expect):
        if e.algorithms is not None and algo not in e.algorithms:
            continue
        if e.variants is not None and variant not in e.variants:
            continue
        if e.metric == "queue" and e.target is None and algo != "lestas":
            continue
        if e.metric == "settling":
            continue  # across variants: fairgate_exp.settling, once every variant ran
        if e.metric in TCP_METRICS:
            if e.versus is not None:
                continue  # against other variants: judge_versus, once they all ran
            out.append(_judge_tcp(plan, label or algo, i, e, tcp or {}))
        else:
            out.append(_judge_one(plan, label or algo, i, e, rates, rows, cm or {}))
    return out


def in_bounds(value: float | None, e: Expect) -> bool:
    """Whether ``value`` is known and within the expectation's min and max."""
    if value is None:
        return False
    return (e.min is None or value >= e.min) and (e.max is None or value <= e.max)


def bounds_text(e: Expect) -> str:
    """The expectation's min and max as a verdict shows them (">= 1 and <= 2")."""
    bounds = [
        f">= {e.min:g}" if e.min is not None else "",
        f"<= {e.max:g}" if e.max is not None else "",
    ]
    return " and ".join(b for b in bounds if b)


def _tcp_window(plan: Plan, tcp: dict[str, Any]) -> tuple[float, float]:
    """The window a variant's TCP summary was measured over (all generators)."""
    s = tcp.get("all") or next(iter(tcp.values()), {})
    win = s.get("window_s", (plan.warmup_s, plan.duration_s))
    return (float(win[0]), float(win[1]))


def _tcp_value(metric: str, tcp: dict[str, Any]) -> float | None:
    """A variant's completion rate (flows/s), mean FCT (s) or mean FCT of the flows
    arriving in the window (s), all generators."""
    s = tcp.get("all") or next(iter(tcp.values()), {})
    if metric == "completion_rate":
        return s.get("completion_rate_per_s")
    if metric == "fct_arrived":
        return (s.get("fct_arrived_s") or {}).get("mean")
    return (s.get("fct_s") or {}).get("mean")


def judge_versus(
    plan: Plan,
    algo: str,
    tcp: dict[str, dict[str, Any]],
    label: Callable[[str], str],
    entries: list[tuple[int, Expect]] | None = None,
) -> list[Verdict]:
    """The completion_rate / fct expectations with ``versus``: each judged variant's value
    over the best of the ``versus`` variants' (the largest completion rate, the smallest
    mean FCT), measured in the same run set, against min / max. ``tcp``: the TCP summary
    of each variant that ran, by variant name; an expectation whose variants did not all
    run (``--variant``) gets no verdict. ``entries`` as for ``judge``."""
    out = []
    for i, e in entries if entries is not None else enumerate(plan.file.expect):
        if e.metric not in TCP_METRICS or e.versus is None:
            continue
        if e.algorithms is not None and algo not in e.algorithms:
            continue
        refs = {v: _tcp_value(e.metric, tcp[v]) for v in e.versus if v in tcp}
        if len(refs) < len(e.versus) or any(x is None for x in refs.values()):
            continue
        which = "best of " + ", ".join(e.versus) if len(e.versus) > 1 else e.versus[0]
        if e.feasible is not None:
            refs = feasible_refs(plan, refs, float(e.feasible))  # type: ignore[arg-type]
            which += f" admitting <= {1.0 + float(e.feasible):g} x its completions"
        ref: float | None = None
        best = None
        if refs:
            pick = max if e.metric == "completion_rate" else min
            best = pick(refs, key=lambda v: refs[v])  # type: ignore[arg-type,return-value]
            ref = refs[best]
        judged = e.variants or [v.name for v in plan.variants if v.name not in e.versus]
        for name in judged:
            if name not in tcp:
                continue
            got = _tcp_value(e.metric, tcp[name])
            ratio = got / ref if got is not None and ref is not None and ref > 0 else None
            out.append(
                Verdict(
                    i,
                    e.metric,
                    label(name),
                    _tcp_window(plan, tcp[name]),
                    in_bounds(ratio, e),
                    round(ratio, 3) if ratio is not None else None,
                    bounds_text(e) + f" x {which}",
                    {"value": got, "reference": ref, "reference_variant": best},
                )
            )
    return out


def feasible_refs(
    plan: Plan, refs: dict[str, float | None], feasible: float
) -> dict[str, float | None]:
    """The static gates among ``refs`` (completion rates by variant) that admit no faster
    than (1 + ``feasible``) x the flows they complete: paper 000's strategy 2 maximises the
    completion rate under that constraint, so its best static is the best of these."""
    rates = {v.name: v.admit_fps for v in plan.variants}
    return {n: done for n, done in refs.items() if admits_within(rates.get(n), done, feasible)}


def admits_within(admit: float | None, done: float | None, feasible: float) -> bool:
    """Whether a static gate admitting ``admit`` flows/s and completing ``done`` obeys
    strategy 2's bound, admit <= (1 + ``feasible``) x done (False when either is unknown)."""
    return admit is not None and done is not None and admit <= (1.0 + feasible) * done


def _judge_tcp(plan: Plan, label: str, i: int, e: Expect, tcp: dict[str, Any]) -> Verdict:
    """completion_rate: completed flows/s (all generators); fct: their mean FCT (s);
    fct_arrived: the mean FCT of the flows that arrived in the window (s)."""
    s = tcp.get("all") or next(iter(tcp.values()), {})
    got = _tcp_value(e.metric, tcp)
    unit = "flows/s" if e.metric == "completion_rate" else "s"
    return Verdict(
        i,
        e.metric,
        label,
        _tcp_window(plan, tcp),
        in_bounds(got, e),
        round(got, 3) if got is not None else None,
        bounds_text(e) + f" {unit}",
        {"outcomes": s.get("outcomes"), "completed_in_window": s.get("completed_in_window")},
    )


CONVERGENCE_SMOOTH_S = 1.0
"""The convergence metric judges flow rates averaged over this trailing window."""


def convergence_time(
    rates: dict[str, list[tuple[float, float]]],
    shares: dict[str, float],
    start: float,
    end: float,
    within: float,
    smooth_s: float = CONVERGENCE_SMOOTH_S,
) -> float | None:
    """Seconds from ``start`` to the end of the first flow-rate sample from which every
    sample of every flow in ``shares`` up to ``end`` stays within ``within`` of its share
    (relative to the share, never to less than 1 pkt/s); None if that never happens.
    Each sample is first averaged with those of the ``smooth_s`` before it (after
    ``start``): one 0.2 s sample on BMv2 jitters by about 5 %."""
    last_out = start
    seen = False
    for name, share in shares.items():
        raw = [(t, v) for t, v in rates.get(name, []) if start < t <= end]
        series = [
            (t, sum(vs) / len(vs))
            for t, _v in raw
            for vs in [[v2 for t2, v2 in raw if t - smooth_s + 1e-9 < t2 <= t] or [_v]]
        ]
        if not series:
            return None
        first = series[0][0]
        out = [t for t, v in series if abs(v - share) > within * max(share, 1.0)]
        if out and out[-1] >= series[-1][0]:
            return None  # still outside at the end
        last_out = max(last_out, out[-1] if out else first)
        seen = True
    if not seen:
        return None
    return round(last_out - start, 3)


def _judge_convergence(
    plan: Plan,
    algo: str,
    i: int,
    e: Expect,
    rates: dict[str, list[tuple[float, float]]],
    active: list[FlowPlan],
    names: set[str],
    t1: float,
) -> Verdict:
    """convergence: seconds from the last join of the flows active over the window until
    every one stays within ``within`` of its max-min share to the window's end (rates
    averaged over the trailing ``CONVERGENCE_SMOOTH_S``)."""
    oracle = maxmin_pps(plan, active, ack_frame_of(algo))
    judged = [f for f in active if f.name in names]
    start = max((f.start_s for f in judged), default=0.0)
    shares = {f.name: oracle[f.name] for f in judged}
    tol = float(e.within or 0.0)
    got = convergence_time(rates, shares, start, t1, tol)
    ok = got is not None and (e.max is None or got <= e.max)
    want = f"within {tol:g} of max-min" + (f", <= {e.max:g} s" if e.max is not None else "")
    return Verdict(
        i,
        "convergence",
        algo,
        (start, t1),
        ok,
        got,
        want,
        {"since_s": start, "maxmin_pps": {k: round(v, 2) for k, v in shares.items()}},
    )


def _judge_one(
    plan: Plan,
    algo: str,
    i: int,
    e: Expect,
    rates: dict[str, list[tuple[float, float]]],
    rows: list[dict[str, Any]],
    cm: dict[str, Any] | None = None,
) -> Verdict:
    t0, t1 = plan.window(e.phase)
    win = (t0, t1)
    active = active_in(plan, t0, t1)
    names = set(e.flows) if e.flows else {f.name for f in active}
    if e.metric == "convergence":
        return _judge_convergence(plan, algo, i, e, rates, active, names, t1)
    if e.metric in ("maxmin", "jain"):
        oracle = maxmin_pps(plan, active, ack_frame_of(algo))
        errs, ratios = {}, {}
        for f in active:
            if f.name not in names:
                continue
            got = mean_in(rates.get(f.name, []), t0, t1) or 0.0
            want = oracle[f.name]
            ratios[f.name] = got / want if want > 0 else 0.0
            errs[f.name] = {
                "measured_pps": round(got, 2),
                "maxmin_pps": round(want, 2),
                # relative to the share, but never to less than 1 pkt/s
                "error": round(abs(got - want) / max(want, 1.0), 4),
            }
        if e.metric == "maxmin":
            worst = max((d["error"] for d in errs.values()), default=0.0)
            tol = float(e.within or 0.0)
            return Verdict(
                i,
                "maxmin",
                algo,
                win,
                worst <= tol,
                round(worst, 4),
                f"<= {tol:g}",
                {"flows": errs},
            )
        index = jain(list(ratios.values()))
        return Verdict(
            i,
            "jain",
            algo,
            win,
            index >= (e.min or 0),
            round(index, 4),
            bounds_text(e),
            {"normalised_by": "max-min share", "flows": errs},
        )
    if e.metric == "flow_rate":
        assert e.value is not None
        want = units.parse_rate(e.value).scaled(plan.factor).pps(plan.frame)
        tol = float(e.within or 0.0)
        detail, worst = {}, 0.0
        for n in sorted(names):
            got = mean_in(rates.get(n, []), t0, t1) or 0.0
            err = abs(got - want) / want
            worst = max(worst, err)
            detail[n] = {"measured_pps": round(got, 2), "error": round(err, 4)}
        return Verdict(
            i,
            "flow_rate",
            algo,
            win,
            worst <= tol,
            round(worst, 4),
            f"<= {tol:g} of {want:.1f} pkt/s",
            detail,
        )
    if e.metric == "ratio":
        return _judge_ratio(i, e, algo, win, rates, rows, cm or {})
    if e.metric == "goodput":
        ratio, port = goodput_ratio(plan, rates, t0, t1)
        return Verdict(
            i,
            "goodput",
            algo,
            win,
            ratio is not None and ratio >= (e.min or 0),
            ratio,
            f"{bounds_text(e)} of {port}'s capacity",
            {"port": port, "flows": sorted(f.name for f in plan.tcp_flows)},
        )
    # port metrics
    if e.ports:
        labels = list(e.ports)
    elif e.metric in ("queue", "utilisation"):
        labels = [plan.ports[k].label for k in bottlenecks(plan, active)]
    else:
        labels = [plan.ports[k].label for k in plan.measured]
    per: dict[str, Any] = {}
    for lab in labels:
        rs = [r for r in rows if r["port"] == lab and t0 < r["t"] <= t1]
        if e.metric == "drops":
            per[lab] = window_drops(rs)
        elif e.metric == "utilisation":
            per[lab] = round(sum(r["util"] for r in rs) / len(rs), 4) if rs else None
        elif e.metric == "flow_number":
            ns = [r["n"] for r in rs if r.get("n") is not None]
            per[lab] = round(sum(ns) / len(ns), 3) if ns else None
        elif e.target is not None:  # queue, in data frames
            q = sum(r["queue_pkts"] for r in rs) / len(rs) if rs else None
            per[lab] = round(q, 2) if q is not None else None
        else:  # queue, in q_ref's packets (1500 B)
            q = sum(r["queue_bytes"] for r in rs) / len(rs) / 1500 if rs else None
            per[lab] = round(q, 2) if q is not None else None
    if e.metric == "drops":
        total = sum(per.values())
        return Verdict(
            i, "drops", algo, win, in_bounds(total, e), total, bounds_text(e), {"ports": per}
        )
    if e.metric == "utilisation":
        vals = [v for v in per.values() if v is not None]
        worst = min(vals) if vals else 0.0
        return Verdict(
            i,
            "utilisation",
            algo,
            win,
            bool(vals) and worst >= (e.min or 0),
            worst,
            bounds_text(e),
            {"ports": per},
        )
    if e.metric == "flow_number":
        vals = [v for v in per.values() if v is not None]
        lo = -math.inf if e.min is None else e.min
        hi = math.inf if e.max is None else e.max
        mean = round(sum(vals) / len(vals), 3) if vals else None
        ok = bool(vals) and all(lo <= v <= hi for v in vals)
        return Verdict(i, "flow_number", algo, win, ok, mean, bounds_text(e), {"ports": per})
    tol = float(e.within or 0.0)
    q_ref = plan.q_ref_pkts if e.target is None else float(units.parse_packets(e.target))
    what = "q_ref" if e.target is None else "the target"
    errs = {k: (abs(v - q_ref) / q_ref if v is not None else None) for k, v in per.items()}
    vals = [v for v in errs.values() if v is not None]
    worst = max(vals) if vals else 1.0
    return Verdict(
        i,
        "queue",
        algo,
        win,
        bool(vals) and worst <= tol,
        round(worst, 4),
        f"<= {tol:g} from {what} {q_ref:g} pkt",
        {"queue_pkts_1500B" if e.target is None else "queue_pkts": per},
    )


def loss_rate(rs: list[dict[str, Any]]) -> float | None:
    """Packets lost at a port over its rows (``window_drops``) over the packets that
    arrived; None when nothing arrived."""
    arrived = sum(r["arrival_pkts"] for r in rs)
    return window_drops(rs) / arrived if arrived > 0 else None


def cm_loss(cm: dict[str, Any], apps: list[str], detail: dict[str, Any]) -> float | None:
    """The CM apps' own loss rate together: bytes their answered probes covered that the
    receiver did not count, over the bytes covered (None: no probe answered); each app's
    counts go into ``detail``."""
    sent = lost = 0
    for a in apps:
        f = cm.get(a) or {}
        s, n = int(f.get("probed_bytes") or 0), int(f.get("probe_lost_bytes") or 0)
        detail[a] = {"probed_bytes": s, "lost_bytes": n, "loss_rate": s and round(n / s, 5)}
        sent, lost = sent + s, lost + n
    return lost / sent if sent > 0 else None


def _judge_ratio(
    i: int,
    e: Expect,
    algo: str,
    win: tuple[float, float],
    rates: dict[str, list[tuple[float, float]]],
    rows: list[dict[str, Any]],
    cm: dict[str, Any] | None = None,
) -> Verdict:
    """ratio: the mean rates of ``flows`` summed over those of ``versus`` (of =
    flow_rate), the loss rate of ``ports`` together over that of ``versus`` (of =
    loss_rate), or the CM apps' own loss rate, ``flows`` together over ``versus`` (of =
    cm_loss, from ``cm``: the engine's facts per CM app); judged against min/max. A zero
    denominator fails (no ratio)."""
    t0, t1 = win
    if e.of == "cm_loss":
        win = (0.0, t1)  # the CM's own counts cover its whole run, not the window
    detail: dict[str, Any] = {}

    def side(names: list[str]) -> float | None:
        if e.of == "cm_loss":
            return cm_loss(cm or {}, names, detail)
        if e.of == "flow_rate":
            vals = [mean_in(rates.get(n, []), t0, t1) or 0.0 for n in names]
            for n, v in zip(names, vals, strict=True):
                detail[n] = round(v, 3)
            return sum(vals)
        rs = [r for r in rows if r["port"] in names and t0 < r["t"] <= t1]
        for n in names:
            mine = [r for r in rs if r["port"] == n]
            lr = loss_rate(mine)
            detail[n] = {"drops": window_drops(mine), "loss_rate": lr and round(lr, 5)}
        # several ports: drops and arrivals summed over them
        arrived = sum(r["arrival_pkts"] for r in rs)
        drops = sum(window_drops([r for r in rs if r["port"] == n]) for n in names)
        return drops / arrived if arrived > 0 else None

    top = side(list(e.ports or []) if e.of == "loss_rate" else list(e.flows or []))
    bottom = side(list(e.versus or []))
    got = None if top is None or not bottom else top / bottom
    ok = in_bounds(got, e)
    want = bounds_text(e)
    detail |= {"numerator": top, "denominator": bottom}
    return Verdict(
        i,
        "ratio",
        algo,
        win,
        ok,
        round(got, 4) if got is not None else None,
        f"{want} ({e.of})",
        detail,
    )
