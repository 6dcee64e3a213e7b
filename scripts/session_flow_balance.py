"""Flows connected vs flows completed in a run's measurement window, per variant, from a run
folder's tcp.csv (``connected_s``: when the handshake completed; a flow's end: arrival +
FCT): the admission rate strategy 2 must keep at or below the completion rate, measured at
the hosts, and the flows open (connected, not yet completed) at the window's edges.

``python scripts/session_flow_balance.py /work/results/session-control/<run> [variants...]``
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from fairgate_exp.records import read_tcp_run


@dataclass(frozen=True, slots=True)
class Balance:
    connected_per_s: float
    completed_per_s: float
    open_at_start: int
    open_at_end: int

    @property
    def ratio(self) -> float:
        return self.connected_per_s / max(self.completed_per_s, 1e-9)


def balance(rows: list[dict[str, str]], lo: float, hi: float) -> Balance:
    """Connected and completed flows per second in [lo, hi), open flows at lo and hi."""
    connected = completed = open_lo = open_hi = 0
    for r in rows:
        c = float(r["connected_s"]) if r.get("connected_s") else None
        end = float(r["scheduled_s"]) + float(r["fct_s"]) if r.get("fct_s") else None
        connected += c is not None and lo <= c < hi
        completed += end is not None and lo <= end < hi
        if c is not None:
            open_lo += c < lo and (end is None or end >= lo)
            open_hi += c < hi and (end is None or end >= hi)
    return Balance(connected / (hi - lo), completed / (hi - lo), open_lo, open_hi)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("variants", nargs="*", help="default: every variant of the run")
    args = p.parse_args(argv)
    try:
        summary, by_algo = read_tcp_run(args.run_dir)
    except (OSError, ValueError, KeyError) as exc:
        print(f"session_flow_balance: {exc}", file=sys.stderr)
        return 2
    if any("connected_s" not in rows[0] for rows in by_algo.values()):
        print("session_flow_balance: tcp.csv has no connected_s (an older run)", file=sys.stderr)
        return 2
    for v in args.variants or list(summary["results"]):
        res = summary["results"].get(v)
        if res is None:
            print(f"session_flow_balance: no variant {v!r} in {args.run_dir}", file=sys.stderr)
            return 2
        for gen, u in res["tcp"].items():
            lo, hi = u["window_s"]
            b = balance([r for r in by_algo.get(v, []) if r["generator"] == gen], lo, hi)
            print(
                f"{v} {gen}: [{lo:g}, {hi:g}) s: connected {b.connected_per_s:.1f}/s,"
                f" completed {b.completed_per_s:.1f}/s, connected/completed {b.ratio:.3f};"
                f" open {b.open_at_start} at {lo:g} s, {b.open_at_end} at {hi:g} s"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
