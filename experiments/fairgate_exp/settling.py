"""The ``settling`` expectation (Kasera et al. section V): after a change (a phase's start:
the offered load or the bottleneck's capacity changes there), how long a session-control
search takes until it completes flows within ``within`` of the best static gate of that
phase, and stays there to the phase's end.

Judged across variants, so not inside one variant's run: the driver judges it once every
variant of a run has finished, and ``make report`` judges it again on the merged record
(variants run in separate processes with ``--variant`` meet there). Pure functions of the
variants' summaries:

- each variant's ``completions``: flows completed per second of the run (their end:
  arrival + FCT, every TCP generator), written by the driver when the file has a
  ``settling`` expectation;
- the reference B: the best static gate (a variant with ``admit_rate``) of the phase, its
  mean completion rate over the phase after ``STEADY_S`` (its own transient left out);
  with ``feasible``, the best of the gates admitting at most (1 + feasible) x that rate
  (none: FAIL with no value);
- the settle time T: seconds after the phase's start from which every ``SPAN_S`` moving
  mean of ``BIN_S`` bins up to the phase's end completes at least (1 - within) x B; PASS
  when T <= ``max``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from fairgate_exp.metrics import Verdict, admits_within
from fairgate_exp.schema import Expect

BIN_S = 10.0
"""Completion-rate bins (s): a few hundred completions each at the paper's 100 flows/s."""
SPAN_S = 30.0
"""Settled means every moving mean over this many seconds of bins stays in the band."""
STEADY_S = 50.0
"""A static gate's rate in a phase: its mean from this long after the phase's start."""


def completion_counts(records: Iterable[dict[str, Any]], end_s: float) -> list[int]:
    """Flows completed per second of [0, end_s), by end time (arrival + FCT)."""
    counts = [0] * max(0, math.ceil(end_s))
    for r in records:
        if r.get("outcome") != "completed" or r.get("fct_s") is None:
            continue
        t = float(r["scheduled_s"]) + float(r["fct_s"])
        if 0 <= t < end_s:
            counts[int(t)] += 1
    return counts


def bins(counts: list[int], lo: float, hi: float, width: float = BIN_S) -> list[float]:
    """Completed flows/s per whole bin of ``width`` s from ``lo`` up to ``hi`` (a partial
    last bin is left out; ``counts`` per second)."""
    step = max(1, round(width))
    first, last = math.ceil(lo), min(len(counts), math.floor(hi))
    return [sum(counts[i : i + step]) / step for i in range(first, last - step + 1, step)]


def settle_time(
    series: list[float], floor: float, width: float = BIN_S, span: float = SPAN_S
) -> float | None:
    """Seconds from the first bin of ``series`` after which the mean of every ``span`` s of
    consecutive bins to the end is >= ``floor`` (None: never; a series shorter than
    ``span`` is judged as one mean)."""
    k = max(1, min(round(span / width), len(series)))
    settled: int | None = None
    for i in range(len(series) - k, -1, -1):
        if sum(series[i : i + k]) / k < floor:
            break
        settled = i
    return None if settled is None else settled * width


def mean_rate(counts: list[int], lo: float, hi: float) -> float | None:
    sel = counts[math.ceil(lo) : min(len(counts), math.floor(hi))]
    return sum(sel) / len(sel) if sel else None


def restarts(admit: list[list[Any]], lo: float, hi: float) -> list[float]:
    """Seconds after ``lo`` at which the search restarted in [lo, hi) as records without
    the controller's restart count show it: its gate went from a rate to none (the
    baseline of a cold restart; a warm restart keeps the gate and needs the count)."""
    out: list[float] = []
    last: Any = "unset"
    for t, a in admit:
        if a is None and last not in (None, "unset") and lo <= t < hi:
            out.append(round(t - lo, 2))
        last = a
    return out


def _is_static(res: dict[str, Any]) -> bool:
    v = res.get("variant") or {}
    return v.get("admit_fps") is not None and v.get("session", "off") == "off"


def _is_search(res: dict[str, Any]) -> bool:
    return (res.get("variant") or {}).get("session", "off") != "off"


def judge_settling(
    expects: Iterable[tuple[int, Expect]], results: dict[str, dict[str, Any]]
) -> list[Verdict]:
    """One verdict per ``settling`` expectation and judged variant (default: every search
    variant) that has completions recorded; none when no static gate with completions is
    among ``results`` (no reference)."""
    out: list[Verdict] = []
    statics = {a: r for a, r in results.items() if _is_static(r) and "completions" in r}
    for i, e in expects:
        if e.metric != "settling" or e.phase is None:
            continue
        names = [
            a
            for a, r in results.items()
            if "completions" in r
            and (
                (r.get("variant") or {}).get("name") in e.variants
                if e.variants is not None
                else _is_search(r)
            )
        ]
        ref_name, ref = None, None
        measured = False  # a static gate had completions in the phase
        for a, r in statics.items():
            win = r["windows"].get(e.phase, {}).get("window_s")
            if not win:
                continue
            lo, hi = win[0], min(win[1], r["completions"]["end_s"])
            got = mean_rate(r["completions"]["counts"], lo + min(STEADY_S, (hi - lo) / 2), hi)
            if got is None:
                continue
            measured = True
            admit = (r.get("variant") or {}).get("admit_fps")
            if e.feasible is not None and not admits_within(admit, got, float(e.feasible)):
                continue  # strategy 2's reference: only the gates obeying its bound
            if ref is None or got > ref:
                ref_name, ref = a, got
        if not measured:
            continue
        within = float(e.within if e.within is not None else 0.1)
        which = f" to >= {1 - within:.0%} of the best static gate"
        if e.feasible is not None:
            which += f" admitting <= {1.0 + float(e.feasible):g} x its completions"
        expected = (f"<= {e.max:g} s" if e.max is not None else "settles") + which
        if ref is None:  # no gate obeys the bound: nothing to reach
            out.extend(_unjudged(i, e.phase, results, names, expected))
            continue
        floor = (1 - within) * ref
        for a in names:
            r = results[a]
            win = r["windows"].get(e.phase, {}).get("window_s")
            if not win:
                continue
            lo, hi = win[0], min(win[1], r["completions"]["end_s"])
            series = bins(r["completions"]["counts"], lo, hi)
            t = settle_time(series, floor)
            after = None if t is None else mean_rate(r["completions"]["counts"], lo + t, hi)
            out.append(
                Verdict(
                    i,
                    "settling",
                    a,
                    (float(lo), float(hi)),
                    t is not None and (e.max is None or t <= e.max),
                    t,
                    expected,
                    {
                        "reference": ref_name,
                        "reference_fps": round(ref, 2),
                        "floor_fps": round(floor, 2),
                        "after_fps": None if after is None else round(after, 2),
                        "after_of_reference": None if after is None else round(after / ref, 3),
                        "phase_fps": (
                            None
                            if (m := mean_rate(r["completions"]["counts"], lo, hi)) is None
                            else round(m, 2)
                        ),
                        "bins_fps": [round(x, 1) for x in series],
                        "restarts_s": (
                            [round(t - lo, 2) for t in r["restarts_s"] if lo <= t < hi]
                            if "restarts_s" in r
                            else restarts(r.get("admit") or [], lo, hi)
                        ),
                    },
                )
            )
    return out


def _unjudged(
    i: int, phase: str, results: dict[str, dict[str, Any]], names: list[str], expected: str
) -> list[Verdict]:
    """FAIL verdicts with no value for ``names``: no reference gate in ``phase``."""
    out: list[Verdict] = []
    for a in names:
        win = results[a]["windows"].get(phase, {}).get("window_s")
        if win:
            window = (float(win[0]), float(win[1]))
            out.append(Verdict(i, "settling", a, window, False, None, expected, {}))
    return out


def rejudge(doc: dict[str, Any], expects: list[dict[str, Any]]) -> dict[str, Any]:
    """``doc`` (a run's summary, possibly merged from several records) with its settling
    verdicts judged again over every variant it holds (``expects``: the file's
    expectations as experiment.json has them)."""
    # only the settling ones are parsed: an older record's other expectations may not
    # fit today's schema
    parsed = [
        (i, Expect.model_validate(e))
        for i, e in enumerate(expects)
        if isinstance(e, dict) and e.get("metric") == "settling"
    ]
    if not parsed:
        return doc
    kept = [v for v in doc["verdicts"] if v.get("metric") != "settling"]
    fresh = [v.to_json() for v in judge_settling(parsed, doc["results"])]
    verdicts = kept + fresh
    return doc | {"verdicts": verdicts, "passed": all(v["passed"] for v in verdicts)}
