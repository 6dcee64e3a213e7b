"""The TCP of two engines side by side on one variant of a session-control file, from
each run folder's tcp.csv over its measurement window: flows arrived, connected,
completed and given up (the connect failed after its SYN retries) per second; connected
flows' SYN retries (first-SYN share, mean retries); retransmissions per completed flow;
completions, their share and mean FCT per size class (segments of ``--mss`` bytes).

``python scripts/session_tcp_compare.py RUN_A RUN_B [RUN...] --variant none``

A run recorded before tcp.csv had ``syn_retrans`` and ``retrans`` shows "-" there.
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

from fairgate_exp.records import read_tcp_run

MSS = 1448
#: size classes in segments: (label, lowest, highest); the paper's Table II splits at 10 kB
CLASSES = (("1-3", 1, 3), ("4-7", 4, 7), ("8-15", 8, 15), ("16+", 16, math.inf))


@dataclass
class Profile:
    window_s: float
    arrived: int = 0
    connected: int = 0
    completed: int = 0
    gave_up: int = 0
    syn_known: int = 0  # connected flows with a syn_retrans value
    first_syn: int = 0
    syn_retries: int = 0
    retrans_known: int = 0  # completed flows with a retrans value
    retrans: int = 0
    by_class: dict[str, list[float]] = field(default_factory=dict)  # class -> FCTs

    def per_s(self, n: int) -> float:
        return n / self.window_s


def size_class(size: int, mss: int = MSS) -> str:
    segs = max(1, math.ceil(size / mss))
    return next(label for label, lo, hi in CLASSES if lo <= segs <= hi)


def profile(rows: list[dict[str, str]], lo: float, hi: float, mss: int = MSS) -> Profile:
    """The flows of one variant over [lo, hi): arrivals by scheduled time, connections by
    ``connected_s``, completions and give-ups by their end (arrival + FCT; a give-up's
    end is unknown, so it is counted by arrival)."""
    p = Profile(hi - lo, by_class={label: [] for label, _, _ in CLASSES})
    for r in rows:
        start = float(r["scheduled_s"])
        arrived = lo <= start < hi
        p.arrived += arrived
        if r.get("connected_s"):
            if lo <= float(r["connected_s"]) < hi:
                p.connected += 1
                if r.get("syn_retrans") not in (None, ""):
                    p.syn_known += 1
                    n = int(float(r["syn_retrans"]))
                    p.first_syn += n == 0
                    p.syn_retries += n
        elif r["outcome"] == "timeout" and arrived:
            p.gave_up += 1
        if r["outcome"] == "completed" and r.get("fct_s"):
            fct = float(r["fct_s"])
            if lo <= start + fct < hi:
                p.completed += 1
                p.by_class[size_class(int(r["size"]), mss)].append(fct)
                if r.get("retrans") not in (None, ""):
                    p.retrans_known += 1
                    p.retrans += int(float(r["retrans"]))
    return p


def _ratio(a: int, b: int) -> str:
    return f"{a / b:.2f}" if b else "-"


def table(names: list[str], profiles: list[Profile]) -> list[str]:
    """Markdown rows, one column per run."""
    out = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]

    def line(label: str, cells: list[str]) -> None:
        out.append(f"| {label} | " + " | ".join(cells) + " |")

    line("arrived /s", [f"{p.per_s(p.arrived):.1f}" for p in profiles])
    line("connected /s", [f"{p.per_s(p.connected):.1f}" for p in profiles])
    line("completed /s", [f"{p.per_s(p.completed):.1f}" for p in profiles])
    line("connect gave up /s (by arrival)", [f"{p.per_s(p.gave_up):.1f}" for p in profiles])
    line("connected on the first SYN", [_ratio(p.first_syn, p.syn_known) for p in profiles])
    line("SYN retries per connected flow", [_ratio(p.syn_retries, p.syn_known) for p in profiles])
    line(
        "retransmissions per completed flow", [_ratio(p.retrans, p.retrans_known) for p in profiles]
    )
    for label, _, _ in CLASSES:
        cells = []
        for p in profiles:
            fcts = p.by_class[label]
            share = len(fcts) / p.completed if p.completed else 0.0
            mean = sum(fcts) / len(fcts) if fcts else float("nan")
            cells.append(f"{p.per_s(len(fcts)):.1f} ({share:.0%}), FCT {mean:.2f}")
        line(f"completed {label} segments /s (share), mean FCT s", cells)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", type=Path, nargs="+")
    ap.add_argument("--variant", default="none")
    ap.add_argument("--mss", type=int, default=MSS)
    args = ap.parse_args(argv)
    names, profiles = [], []
    for run in args.runs:
        try:
            summary, by_algo = read_tcp_run(run)
            rows = by_algo.get(args.variant)
            res = summary["results"][args.variant]
        except (OSError, ValueError, KeyError) as exc:
            print(f"session_tcp_compare: {run}: {exc}", file=sys.stderr)
            return 2
        if not rows:
            print(f"session_tcp_compare: {run}: no flows of {args.variant!r}", file=sys.stderr)
            return 2
        for gen, u in res["tcp"].items():
            lo, hi = u["window_s"]
            names.append(f"{summary['engine']} {run.name[:16]} {gen}")
            profiles.append(profile([r for r in rows if r["generator"] == gen], lo, hi, args.mss))
    print(f"{args.variant}:")
    print("\n".join(table(names, profiles)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
