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

    algos = list(dict.fromkeys(r["algo"] for r in flows)) or plan.algorithms
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
