"""Section V of Kasera et al. from run folders: per regime (the file's phases: a load or
capacity change starts each), the best static gate's completion rate and, per search
variant, when it detected the change, when it settled and how close it stayed.

Completions: the flows whose end (arrival + FCT) falls in each ``--bin`` seconds (tcp.csv,
every generator). A static gate's rate in a regime is its mean over the regime after
``--steady`` seconds (its own transient excluded); the best of them is the reference B. A
search variant has **settled** ``T`` seconds after the change when every bin from then to
the regime's end completes at least (1 - ``--within``) x B; **detected**: the first
restart of its search after the change (the gate opens: ``admit_fps`` None in
controller.jsonl, s1's gated port). Several run folders of the same file (variants run in
separate processes) are read together; a variant in several of them is taken from the
last one given.

The bins, means and settle time are the ``settling`` expectation's (``fairgate_exp.settling``),
which judges the same in every run record; this script prints the whole table.

``python scripts/session_settling.py /work/results/session-control-capacity/<run> [...]``
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from fairgate_exp.records import read_t0, read_tcp_rows
from fairgate_exp.settling import bins, completion_counts, mean_rate, restarts, settle_time
from fairgate_exp.units import parse_time


def detections(run: Path, variant: str, port: tuple[str, int]) -> list[float]:
    """Times the search restarted, in s of the run: the controller's restart count went
    up (records since the warm restart), else its gate went from a rate to none (a cold
    restart). BMv2's controller.jsonl carries wall time, and its t0.json the run's time 0
    (the simulator's records start at 0 and have no t0.json)."""
    path = run / variant / "controller.jsonl"
    if not path.exists():
        return []
    t0 = read_t0(run / variant) or 0.0
    recs = [
        r
        for r in map(json.loads, path.open())
        if (r.get("switch"), r.get("port")) == port and "admit_fps" in r
    ]
    counted = [[r["t"] - t0, r["session_restarts"]] for r in recs if "session_restarts" in r]
    if counted:
        return [float(t) for (t, n), (_, m) in zip(counted[1:], counted, strict=False) if n > m]
    gate = [[r["t"] - t0, r["admit_fps"]] for r in recs]
    return [t + 0.0 for t in restarts(gate, 0.0, math.inf)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", type=Path, nargs="+")
    p.add_argument("--bin", type=float, default=10.0, help="s per completion-rate bin")
    p.add_argument("--steady", type=float, default=50.0, help="s of a static's transient")
    p.add_argument("--within", type=float, default=0.10, help="settled: >= (1 - this) x best")
    p.add_argument("--span", type=float, default=30.0, help="s averaged for settling")
    args = p.parse_args(argv)
    rows: dict[str, list[dict[str, str]]] = defaultdict(list)
    where: dict[str, Path] = {}
    exp: dict[str, Any] = {}
    try:
        for run in args.runs:  # a variant in several runs: the last run given wins
            exp = json.loads((run / "experiment.json").read_text())
            for v, rs in read_tcp_rows(run).items():
                rows[v], where[v] = rs, run
    except (OSError, ValueError, KeyError) as exc:
        print(f"session_settling: {exc}", file=sys.stderr)
        return 2
    if not exp.get("phases"):
        print(
            "session_settling: the file has no phases; this reads how the search settles "
            "after each change of a phased file (session-control-capacity, "
            "session-control-varying)",
            file=sys.stderr,
        )
        return 2
    duration = parse_time(exp["experiment"]["duration"])
    end = max(parse_time(g["stop"]) if g.get("stop") else duration for g in exp["tcp"])
    starts = sorted(parse_time(ph["start"]) for ph in exp["phases"])
    regimes = list(zip(starts, [*starts[1:], end], strict=True))
    gated = next(v for v in exp["resolved"]["ports"].values() if v["gate_syn"])
    port = (gated["switch"], gated["port"])
    statics = {v["name"] for v in exp["variants"] if v.get("admit_rate") is not None}
    w = args.bin
    counts = {
        v: completion_counts(({**r, "fct_s": r["fct_s"] or None} for r in rs), end)
        for v, rs in rows.items()
    }
    for lo, hi in regimes:
        rates = {
            v: mean_rate(counts[v], lo + args.steady, hi) or 0.0 for v in statics & set(counts)
        }
        if not rates:
            print("session_settling: no static gate among the runs", file=sys.stderr)
            return 2
        best = max(rates, key=lambda v: rates[v])
        ref = rates[best]
        table = ", ".join(f"{v} {rates[v]:.1f}" for v in sorted(rates, key=lambda v: rates[v]))
        print(f"[{lo:g}, {hi:g}) s: best static {best} {ref:.1f} flows/s ({table})")
        for v in sorted(set(counts) - statics):
            series = bins(counts[v], lo, hi, w)
            t = settle_time(series, (1 - args.within) * ref, w, args.span)
            det = [d - lo for d in detections(where[v], v, port) if lo <= d < hi]
            det_s = f"{det[0]:.1f} s" if det else "no restart"
            if t is None:
                print(f"  {v}: detected {det_s}; never settled within {args.within:.0%}")
                continue
            after = mean_rate(counts[v], lo + t, hi) or 0.0
            print(
                f"  {v}: detected {det_s}; settled {t:g} s after the change: "
                f"{after:.1f} flows/s from then ({after / ref:.0%} of the best static), "
                f"whole regime {mean_rate(counts[v], lo, hi) or 0.0:.1f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
