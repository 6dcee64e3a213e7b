"""What the last scenario class (FICCRD) uses: the run context with its smoke flag and
schedule clock, on top of ``fairgate_topo.labrun``. Goes with ``scenarios/ficcrd.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fairgate_topo.labrun import PY, JsonlTail, read_jsonl
from fairgate_topo.labrun import LabContext as _LabContext

__all__ = ["PY", "RTT_EMULATION", "JsonlTail", "LabContext", "jain", "read_jsonl"]

RTT_EMULATION = "ack-delay"  # the kernels here have no netem (DESIGN.md)


@dataclass
class LabContext(_LabContext):
    """One run of one scenario with one algorithm."""

    smoke: bool = False
    t0: float = 0.0  # wall clock of the schedule's time 0

    def host(self, name: str) -> Any:
        return self.net.host(name)

    def ip(self, host: str) -> str:
        return self.topology.hosts[host].ip


def jain(values: list[float]) -> float:
    if not values or not any(values):
        return 0.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))
