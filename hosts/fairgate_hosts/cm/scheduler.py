"""Hierarchical round robin (HRR) sharing a macroflow among its flows (CM paper, section 2,
after Kalmanek, Kanakia and Keshav, "Rate controlled servers for very high-speed networks").

What the CM schedules hierarchically:
- each destination is one macroflow with its own AIMD rate (hosts.md: macroflows do not
  split one host-wide rate);
- inside a macroflow this scheduler decides which flow gets the next grant (at most one
  MSS each), in proportion to the flows' pre-configured weights.

HRR, as built here: every level has a frame of ``frame_slots`` slots. A flow whose share of
the macroflow's weight is worth at least one slot of level 0 is placed there with
``round(share x frame_slots)`` slots; the slots left over are level 0's *down* slots, and the
remaining flows are placed, in the same way, in level 1, whose whole frame is worth the
down slots of level 0, and so on. A flow with a tiny weight therefore sits deep in the
hierarchy instead of stretching level 0's frame. Slots of a level are spread evenly over its
frame (smooth weighted round robin), so a flow's grants are evenly spaced.

Serving is work-conserving (the CM already paces grants at the macroflow rate): a slot
whose flow has nothing pending, or a down slot whose level has nothing pending, is skipped,
so idle flows' slots go to the active ones. Shares count grants, not bytes: a flow that
queues less than one MSS at a time gets a slot's turn for it.

A level's frame has about ``frame_slots`` to twice that many slots: the length whose
whole slots come closest to the owners' shares. Rounding to whole slots makes a share inexact
by at most one slot of its level and of each level above it (1/64 of the macroflow at level
0 with the default 64 slots); ``tests/unit/hosts/test_cm_scheduler.py`` checks that bound
over random weights.
"""

from __future__ import annotations

from dataclasses import dataclass, field

DOWN = -1  # the slot owner that stands for the next level


@dataclass(slots=True)
class _Entry:
    weight: float
    pending: int = 0


@dataclass(slots=True)
class _Level:
    slots: list[int]  # the frame: owner flow id per slot, DOWN for the next level
    pos: int = 0


@dataclass(slots=True)
class HierarchicalRoundRobin:
    frame_slots: int = 64
    max_levels: int = 4
    flows: dict[int, _Entry] = field(default_factory=dict)
    levels: list[_Level] = field(default_factory=list)
    level_of: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.frame_slots < 2:
            raise ValueError("frame_slots must be >= 2")
        if self.max_levels < 1:
            raise ValueError("max_levels must be >= 1")

    # ------------------------------------------------------------------ configuration
    def add(self, fid: int, weight: float = 1.0) -> None:
        if not weight > 0:
            raise ValueError("weight must be > 0")
        self.flows[fid] = _Entry(weight)
        self._rebuild()

    def set_weight(self, fid: int, weight: float) -> None:
        if not weight > 0:
            raise ValueError("weight must be > 0")
        self.flows[fid].weight = weight
        self._rebuild()

    def remove(self, fid: int) -> None:
        if self.flows.pop(fid, None) is not None:
            self._rebuild()

    def _rebuild(self) -> None:
        """Place flows in levels by weight and lay out each level's frame."""
        self.levels = []
        self.level_of = {}
        todo = sorted(self.flows, key=lambda f: (-self.flows[f].weight, f))
        depth = 0
        while todo:
            worth = sum(self.flows[f].weight for f in todo)  # what this level's frame is worth
            quota = {f: self.flows[f].weight / worth for f in todo}
            last = depth == self.max_levels - 1
            placed = [f for f in todo if last or quota[f] * self.frame_slots >= 1]
            if not placed:  # nobody is worth a slot here: the largest takes one anyway
                placed = todo[:1]
            rest = [f for f in todo if f not in placed]
            if rest:
                quota[DOWN] = sum(quota[f] for f in rest)
            self.levels.append(
                _Level(_spread(self._frame([*placed, *([DOWN] if rest else [])], quota)))
            )
            for fid in placed:
                self.level_of[fid] = depth
            todo = rest
            depth += 1

    def _frame(self, owners: list[int], quota: dict[int, float]) -> dict[int, int]:
        """Slots per owner: the frame length between frame_slots and twice that whose whole
        slots come closest to the owners' quotas (every owner gets at least one)."""
        best: tuple[float, dict[int, int]] | None = None
        for length in range(self.frame_slots, 2 * self.frame_slots + 1):
            counts = {o: max(1, round(quota[o] * length)) for o in owners}
            total = sum(counts.values())
            err = max(abs(counts[o] / total - quota[o]) for o in owners)
            if best is None or err < best[0] - 1e-12:
                best = (err, counts)
        assert best is not None
        return best[1]

    # ------------------------------------------------------------------ requests
    def request(self, fid: int, nbytes: int) -> None:
        if nbytes > 0:
            self.flows[fid].pending += nbytes

    def pending(self) -> int:
        return sum(e.pending for e in self.flows.values())

    def peek_size(self, mss: int) -> int | None:
        """Size of the next grant without taking it; None when idle."""
        fid = self._select(commit=False)
        return None if fid is None else min(self.flows[fid].pending, mss)

    def next_grant(self, mss: int) -> tuple[int, int] | None:
        """The next (flow, bytes) to grant, at most ``mss`` bytes; None when idle."""
        fid = self._select(commit=True)
        if fid is None:
            return None
        e = self.flows[fid]
        size = min(e.pending, mss)
        e.pending -= size
        return fid, size

    # ------------------------------------------------------------------ service
    def _busy(self, depth: int) -> bool:
        return any(
            self.flows[f].pending > 0 for f, d in self.level_of.items() if d >= depth
        )  # fmt: skip

    def _select(self, commit: bool) -> int | None:
        """Walk level 0's frame from its position; a down slot walks the next level."""
        positions = [lv.pos for lv in self.levels]
        fid = self._walk(0, positions)
        if commit and fid is not None:
            for lv, pos in zip(self.levels, positions, strict=True):
                lv.pos = pos
        return fid

    def _walk(self, depth: int, positions: list[int]) -> int | None:
        if depth >= len(self.levels) or not self._busy(depth):
            return None
        slots = self.levels[depth].slots
        for _ in range(len(slots)):
            owner = slots[positions[depth]]
            positions[depth] = (positions[depth] + 1) % len(slots)
            if owner == DOWN:
                got = self._walk(depth + 1, positions)
                if got is not None:
                    return got
            elif self.flows[owner].pending > 0:
                return owner
        return None


def _spread(counts: dict[int, int]) -> list[int]:
    """A frame with ``counts[owner]`` slots per owner, each owner's slots evenly spaced
    (smooth weighted round robin: the owner with the most accumulated credit goes next)."""
    total = sum(counts.values())
    credit = dict.fromkeys(counts, 0)
    frame = []
    for _ in range(total):
        for owner, n in counts.items():
            credit[owner] += n
        pick = max(credit, key=lambda o: (credit[o], -o))
        credit[pick] -= total
        frame.append(pick)
    return frame
