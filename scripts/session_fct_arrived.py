"""Mean FCT of the flows that arrived in a run's measurement window (and at least
``--margin`` seconds before its end), per variant, from a run folder's tcp.csv: the
steady-state FCT of an operating point, without the flows admitted earlier (during a
search) that complete in the window.

``python scripts/session_fct_arrived.py /work/results/session-control/<run> strategy1 strategy2``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairgate_exp.records import read_tcp_run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("variants", nargs="+")
    p.add_argument("--margin", type=float, default=10.0, help="s before the window's end")
    args = p.parse_args(argv)
    try:
        summary, by_algo = read_tcp_run(args.run_dir)
    except (OSError, ValueError, KeyError) as exc:
        print(f"session_fct_arrived: {exc}", file=sys.stderr)
        return 2
    for v in args.variants:
        res = summary["results"].get(v)
        if res is None:
            print(f"session_fct_arrived: no variant {v!r} in {args.run_dir}", file=sys.stderr)
            return 2
        for gen, u in res["tcp"].items():
            lo, hi = u["window_s"]
            hi -= args.margin
            arrived = [
                r
                for r in by_algo.get(v, [])
                if r["generator"] == gen and lo <= float(r["scheduled_s"]) < hi
            ]
            done = [float(r["fct_s"]) for r in arrived if r["outcome"] == "completed"]
            mean = sum(done) / len(done) if done else float("nan")
            print(
                f"{v} {gen}: arrived in [{lo:g}, {hi:g}) s: {len(arrived)}, completed "
                f"{len(done)}, mean FCT {mean:.2f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
