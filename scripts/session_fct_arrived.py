"""Mean FCT of the flows that arrived in a run's measurement window (and at least
``--margin`` seconds, at most a quarter of the window, before its end), per variant, from
a run folder's tcp.csv (records written before summaries carried ``fct_arrived_s``): the
steady-state FCT of an operating point, without the flows admitted earlier (during a
search) that complete in the window.

``python scripts/session_fct_arrived.py /work/results/session-control/<run> strategy1 strategy2``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fairgate_exp.records import read_tcp_run
from fairgate_hosts.traffic.records import FlowRecord, Window, arrived_fct


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
            recs = [
                FlowRecord(
                    int(r["flow"]),
                    float(r["scheduled_s"]),
                    int(r["size"]),
                    outcome=r["outcome"],
                    fct_s=float(r["fct_s"]) if r["fct_s"] else None,
                )
                for r in by_algo.get(v, [])
                if r["generator"] == gen
            ]
            a = arrived_fct(recs, Window(*u["window_s"]), args.margin)
            lo, hi = a["window_s"]
            mean = float("nan") if a["mean"] is None else a["mean"]
            print(
                f"{v} {gen}: arrived in [{lo:g}, {hi:g}) s: {a['arrived']}, completed "
                f"{a['completed']}, mean FCT {mean:.2f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
