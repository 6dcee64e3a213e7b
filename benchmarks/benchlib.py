"""What every benchmark shares: the true reason it cannot run, and its headline figures.

A benchmark writes ``results/bench/<name>.json``; its ``headlines`` list (measure, value,
unit, goal, direction) is what ``scripts/run_benchmarks.py`` puts in the final table beside
the goal from docs/performance.md. A benchmark that cannot run writes ``skipped`` instead,
with the reason (the missing tool first, root second) and how to get it."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
BENCH_DIR = TOP / "results" / "bench"
TOOLCHAIN_HINT = "install p4lang's BMv2 (README: P4 toolchain)"


@dataclass(frozen=True)
class Headline:
    measure: str
    value: float
    unit: str
    goal: float
    higher_is_better: bool

    @property
    def met(self) -> bool:
        return self.value >= self.goal if self.higher_is_better else self.value <= self.goal


def missing_switch() -> str | None:
    """Why a BMv2 benchmark cannot run here (the switch first, then root), or None."""
    switch = os.environ.get("SWITCH", "simple_switch_grpc")
    if shutil.which(switch) is None:
        return f"{switch} not found: {TOOLCHAIN_HINT}"
    if os.geteuid() != 0:
        return "needs root for network namespaces (sudo make bench)"
    if shutil.which("ip") is None:
        return "needs the `ip` command (iproute2: make deps)"
    return None


def missing_netns() -> str | None:
    """Why a namespace benchmark cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root for network namespaces (sudo make bench)"
    if shutil.which("ip") is None:
        return "needs the `ip` command (iproute2: make deps)"
    return None


def skip(name: str, reason: str, out: Path | None = None) -> int:
    """Say why ``name`` did not run and record it; exit status 0 (a skip is no crash)."""
    print(f"bench_{name}: SKIPPED: {reason}")
    write(name, {"skipped": reason}, out)
    return 0


def write(
    name: str,
    doc: dict[str, Any],
    out: Path | None = None,
    headlines: Sequence[Headline] = (),
) -> Path:
    path = out or BENCH_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"benchmark": name, **doc, "headlines": [asdict(h) for h in headlines]}
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path
