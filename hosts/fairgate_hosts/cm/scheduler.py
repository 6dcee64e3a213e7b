"""Weighted round-robin (deficit round robin) sharing a macroflow among its flows.

The CM schedules hierarchically: the host's rate is split per destination (one macroflow
each, with its own AIMD rate); inside a macroflow this scheduler hands out grants of at most
one MSS to flows with pending requests in proportion to their weights.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(slots=True)
class _Entry:
    weight: float
    pending: int = 0
    deficit: float = 0.0


@dataclass(slots=True)
class WeightedRoundRobin:
    quantum: int = 1200
    flows: dict[int, _Entry] = field(default_factory=dict)
    active: deque[int] = field(default_factory=deque)

    def add(self, fid: int, weight: float = 1.0) -> None:
        if not weight > 0:
            raise ValueError("weight must be > 0")
        self.flows[fid] = _Entry(weight)

    def set_weight(self, fid: int, weight: float) -> None:
        if not weight > 0:
            raise ValueError("weight must be > 0")
        self.flows[fid].weight = weight

    def remove(self, fid: int) -> None:
        self.flows.pop(fid, None)
        if fid in self.active:
            self.active.remove(fid)

    def request(self, fid: int, nbytes: int) -> None:
        e = self.flows[fid]
        if nbytes <= 0:
            return
        if e.pending == 0 and fid not in self.active:
            self.active.append(fid)
        e.pending += nbytes

    def pending(self) -> int:
        return sum(e.pending for e in self.flows.values())

    def peek_size(self, mss: int) -> int | None:
        for fid in self.active:
            e = self.flows[fid]
            if e.pending > 0:
                return min(e.pending, mss)
        return None

    def next_grant(self, mss: int) -> tuple[int, int] | None:
        """The next (flow, bytes) to grant, at most ``mss`` bytes; None when idle."""
        spins = 0
        while self.active:
            fid = self.active[0]
            e = self.flows.get(fid)
            if e is None or e.pending <= 0:
                self.active.popleft()
                if e is not None:
                    e.deficit = 0.0
                continue
            size = min(e.pending, mss)
            if e.deficit >= size:
                e.deficit -= size
                e.pending -= size
                if e.pending == 0:
                    self.active.popleft()
                    e.deficit = 0.0
                return fid, size
            e.deficit += self.quantum * e.weight
            self.active.rotate(-1)
            spins += 1
            if spins > 1_000_000:  # pragma: no cover - weights absurdly small
                raise RuntimeError("scheduler made no progress")
        return None
