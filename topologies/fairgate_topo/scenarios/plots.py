"""Matplotlib (Agg) helpers shared by the scenarios."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def figure(rows: int, title: str, height: float = 2.6) -> tuple[Any, list[Any]]:
    fig, axes = plt.subplots(rows, 1, figsize=(8, height * rows), sharex=True, squeeze=False)
    fig.suptitle(title)
    return fig, [a for a in axes[:, 0]]


def save(fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def rates_and_port(
    path: Path,
    title: str,
    flows: dict[str, list[list[float]]],
    port: dict[str, Any] | None,
    expected: dict[str, float] | None = None,
    unit: str = "pkt/s",
) -> Path:
    """Per-flow rate over time, then the bottleneck's utilisation and queue."""
    rows = 1 if port is None else 3
    fig, axes = figure(rows, title)
    for name, series in flows.items():
        if series:
            line = axes[0].plot([p[0] for p in series], [p[1] for p in series], label=name)[0]
            if expected and name in expected:
                axes[0].axhline(expected[name], color=line.get_color(), ls=":", lw=1)
    axes[0].set_ylabel(f"rate ({unit})")
    axes[0].legend(loc="upper right", fontsize=8)
    if port is not None:
        axes[1].plot(port["t"], port["util"])
        axes[1].set_ylabel("utilisation")
        axes[1].set_ylim(0, 1.2)
        axes[2].plot(port["t"], port["queue_pkts"], label="queue")
        axes[2].set_ylabel("queue (pkt)")
        axes[-1].set_xlabel("time (s)")
    else:
        axes[0].set_xlabel("time (s)")
    return save(fig, path)
