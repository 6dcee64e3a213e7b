"""The CM paper's Fig. 3 from run records of ``cm-tcp-friendly`` / ``cm-tcp-friendly-sweep``:
is TCP/CM TCP-friendly in the paper's sense (the same throughput for the same loss rate
and RTT, lambda = K / sqrt(p)), not only "do the two get the same goodput"?

Per run, for TCP/CM (``tcpcm-0``) and TCP NewReno (``newreno``), over the whole run:
``n_r`` segments delivered (the last ``seq_pkts`` of traces.csv) and ``n_d`` segments
retransmitted (summary.json: ``engine.cm.tcpcm.retransmits`` and
``tcp_flows.retrans_per_flow.newreno.total``; a retransmission stands for a loss, as the
paper counts drops), ``p = n_d / (n_r + n_d)`` and ``K = n_r * sqrt(p)`` (the paper's
``n_r^2 = K^2 (n_r / n_d) + K^2``, so ``K^2 = n_r^2 p``). Both flows of a run share one
queue, so they see the same RTT: ``K`` of TCP/CM over ``K`` of NewReno near 1 means the same
throughput at the same loss rate, whatever each one's share. Also the window goodput ratio
the files' check reads, and, over all points, the slope of the paper's least-squares line
``n_r^2`` against ``n_r / n_d`` per protocol.

``python scripts/cm_fig3.py RESULTS/cm-tcp-friendly-sweep/sweep-<time>`` (or run folders)
``[--png fig3.png]``. Go-back-N resends after a timeout count as retransmissions too, so a
run with many RTOs overstates that flow's loss.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CM, NEWRENO = "tcpcm-0", "newreno"


@dataclass(frozen=True)
class FlowFacts:
    n_r: int  # segments delivered
    n_d: int  # segments retransmitted
    goodput_pps: float  # the judged window's mean (summary.json)

    @property
    def p(self) -> float:
        n = self.n_r + self.n_d
        return self.n_d / n if n else 0.0

    @property
    def k(self) -> float:
        return self.n_r * math.sqrt(self.p)


@dataclass(frozen=True)
class Point:
    label: str
    run: str
    cm: FlowFacts
    newreno: FlowFacts

    @property
    def goodput_ratio(self) -> float:
        return self.cm.goodput_pps / self.newreno.goodput_pps

    @property
    def k_ratio(self) -> float:
        return self.cm.k / self.newreno.k if self.newreno.k else math.inf


def _last_seq(traces: Path) -> dict[str, int]:
    last: dict[str, int] = {}
    with traces.open(newline="") as fh:
        for row in csv.DictReader(fh):
            last[row["flow"]] = int(row["seq_pkts"])
    return last


def run_facts(run_dir: Path, label: str | None = None) -> Point:
    """One run folder's two flows."""
    summary: dict[str, Any] = json.loads((run_dir / "summary.json").read_text())
    res = summary["results"]["none"]
    goodput = res["windows"]["run"]["flows"]
    n_r = _last_seq(run_dir / "traces.csv")
    cm_rtx = int(res["engine"]["cm"]["tcpcm"]["retransmits"])
    nr_rtx = int(res["tcp_flows"]["retrans_per_flow"][NEWRENO]["total"])
    if label is None:
        exp = json.loads((run_dir / "experiment.json").read_text())
        label = str(exp.get("links", [{}])[0].get("capacity", run_dir.name))
    return Point(
        label,
        run_dir.name,
        FlowFacts(n_r[CM], cm_rtx, float(goodput[CM]["mean_pps"])),
        FlowFacts(n_r[NEWRENO], nr_rtx, float(goodput[NEWRENO]["mean_pps"])),
    )


def sweep_points(sweep_dir: Path) -> list[Point]:
    """The points of a sweep record, in the sweep's order."""
    sweep = json.loads((sweep_dir / "sweep.json").read_text())
    key = next(iter(sweep["grid"]))
    seen: dict[str, str] = {}
    for row in sweep["rows"]:
        seen.setdefault(row["run"], str(row[key]))
    return [run_facts(sweep_dir.parent / run, label) for run, label in seen.items()]


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of y on x (None below two distinct x)."""
    if len(points) < 2:
        return None
    mx = sum(x for x, _ in points) / len(points)
    my = sum(y for _, y in points) / len(points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    if sxx == 0:
        return None
    return sum((x - mx) * (y - my) for x, y in points) / sxx


def fig3_xy(f: FlowFacts) -> tuple[float, float] | None:
    """The paper's axes: (n_r / n_d, n_r^2); None without a loss."""
    return (f.n_r / f.n_d, float(f.n_r) ** 2) if f.n_d else None


def table(points: list[Point]) -> str:
    head = (
        "| point | run | goodput TCP/CM / NewReno (window) | n_r TCP/CM, NewReno "
        "| n_d TCP/CM, NewReno | p TCP/CM, NewReno | K TCP/CM / NewReno |\n"
        "|---|---|---|---|---|---|---|"
    )
    rows = [
        f"| {pt.label} | `{pt.run}` | {pt.goodput_ratio:.3f} | {pt.cm.n_r}, {pt.newreno.n_r} "
        f"| {pt.cm.n_d}, {pt.newreno.n_d} | {pt.cm.p:.4f}, {pt.newreno.p:.4f} "
        f"| {pt.k_ratio:.3f} |"
        for pt in points
    ]
    return "\n".join([head, *rows])


def slopes(points: list[Point]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name, pick in (("TCP/CM", lambda p: p.cm), ("NewReno", lambda p: p.newreno)):
        xy = [q for q in (fig3_xy(pick(p)) for p in points) if q is not None]
        out[name] = slope(xy)
    return out


def plot(points: list[Point], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, pick, mark in (
        ("TCP/CM", lambda p: p.cm, "o"),
        ("TCP NewReno", lambda p: p.newreno, "s"),
    ):
        xy = [q for q in (fig3_xy(pick(p)) for p in points) if q is not None]
        if xy:
            ax.scatter([x for x, _ in xy], [y for _, y in xy], marker=mark, label=name)
    ax.set_xlabel("n_r / n_d")
    ax.set_ylabel("n_r^2")
    ax.set_title("CM paper Fig. 3: n_r^2 against n_r / n_d")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="+", type=Path, help="sweep-<time> folders or run folders")
    ap.add_argument("--png", type=Path, help="write the n_r^2 vs n_r/n_d plot here")
    args = ap.parse_args(argv)
    points: list[Point] = []
    for rec in args.records:
        if (rec / "sweep.json").exists():
            points += sweep_points(rec)
        elif (rec / "summary.json").exists():
            points.append(run_facts(rec))
        else:
            print(f"cm_fig3: {rec}: neither a sweep nor a run folder", file=sys.stderr)
            return 2
    print(table(points))
    for name, s in slopes(points).items():
        print(f"slope of n_r^2 on n_r/n_d, {name}: " + ("-" if s is None else f"{s:.4g}"))
    if args.png is not None:
        plot(points, args.png)
        print(f"plot: {args.png}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
