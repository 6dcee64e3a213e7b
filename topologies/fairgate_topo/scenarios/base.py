"""The interface of a named lab scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabTopology
from fairgate_topo.scenarios.common import LabContext


class Scenario:
    """One paper experiment. The runner builds ``topology()`` once per algorithm,
    calls ``run()`` in it, then ``summarize()`` and ``plot()`` over all runs."""

    name: str = ""
    algos: tuple[str, ...] = ("qfcp",)  # run by default (ALGO=all)
    allowed: tuple[str, ...] = ("qfcp", "rcp", "lestas")
    paper: str = ""

    def smoke_algos(self) -> tuple[str, ...]:
        """What ALGO=all runs with SMOKE=1."""
        return self.algos

    def topology(self, smoke: bool) -> LabTopology:
        raise NotImplementedError

    def host_sysctls(self) -> dict[str, str]:
        return {}

    def run(self, ctx: LabContext) -> dict[str, Any]:
        """Drives one run; returns its measurements (JSON-able)."""
        raise NotImplementedError

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        """Key figures over the runs (keyed by algorithm)."""
        raise NotImplementedError

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        return []

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {}
