"""One figure per run: per algorithm, flow rates (max-min shares dashed) and queues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_exp.oracle import maxmin_pps
from fairgate_exp.plan import Plan


def plot_run(
    run_dir: Path, plan: Plan, flows: list[dict[str, Any]], ports: list[dict[str, Any]]
) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    algos = (
        list(dict.fromkeys(r["algo"] for r in flows))
        or list(dict.fromkeys(r["algo"] for r in ports))
        or plan.algorithms
    )
    fig, axes = plt.subplots(2, len(algos), figsize=(5 * len(algos), 6), squeeze=False)
    oracle = maxmin_pps(plan)
    for j, algo in enumerate(algos):
        ax = axes[0][j]
        for f in plan.flows:
            pts = [
                (r["t"], r["rate_pps"]) for r in flows if r["algo"] == algo and r["flow"] == f.name
            ]
            if pts:
                line = ax.plot(*zip(*pts, strict=True), label=f.name)[0]
                ax.axhline(oracle[f.name], ls="--", lw=0.8, color=line.get_color())
        ax.set_title(f"{plan.name} [{algo}]")
        ax.set_ylabel("flow rate (pkt/s); max-min dashed")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
        ax = axes[1][j]
        for lab in dict.fromkeys(r["port"] for r in ports if r["algo"] == algo):
            pts = [
                (r["t"], r["queue_pkts"]) for r in ports if r["algo"] == algo and r["port"] == lab
            ]
            ax.plot(*zip(*pts, strict=True), label=lab)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (pkt)")
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = run_dir / f"{plan.name}.png"
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return [out]


def plot_tcp(run_dir: Path, plan: Plan, tcp: list[dict[str, Any]]) -> list[Path]:
    """Completed TCP flows per second over time (by completion time), one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for label in dict.fromkeys(r["algo"] for r in tcp):
        bins: dict[int, int] = {}
        for r in tcp:
            if r["algo"] == label and r["outcome"] == "completed" and r["fct_s"] is not None:
                b = int(r["scheduled_s"] + r["fct_s"])
                bins[b] = bins.get(b, 0) + 1
        if bins:
            xs = list(range(max(bins) + 1))
            ax.plot([x + 0.5 for x in xs], [bins.get(x, 0) for x in xs], label=label)
    ax.set_title(f"{plan.name}: TCP completions")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("completed flows/s")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.tight_layout()
    out = run_dir / f"{plan.name}-tcp.png"
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return [out]
