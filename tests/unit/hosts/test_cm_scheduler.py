"""The CM's hierarchical round-robin scheduler: shares by weight (within the stated
rounding bound), levels for tiny weights, even spacing, work conservation."""

from __future__ import annotations

import random

import pytest

from fairgate_hosts.cm.scheduler import HierarchicalRoundRobin

MSS = 1000


def shares(s: HierarchicalRoundRobin, grants: int) -> dict[int, float]:
    got = dict.fromkeys(s.flows, 0)
    for _ in range(grants):
        grant = s.next_grant(MSS)
        assert grant is not None
        got[grant[0]] += grant[1]
    total = sum(got.values())
    return {f: n / total for f, n in got.items()}


def backlogged(weights: dict[int, float], frame_slots: int = 64) -> HierarchicalRoundRobin:
    s = HierarchicalRoundRobin(frame_slots=frame_slots)
    for fid, w in weights.items():
        s.add(fid, w)
        s.request(fid, 10**12)
    return s


def test_tiny_weight_sits_in_a_deeper_level_and_still_gets_its_share() -> None:
    s = backlogged({1: 1000.0, 2: 1000.0, 3: 1.0})
    assert s.level_of == {1: 0, 2: 0, 3: 1}
    assert len(s.levels[0].slots) <= 2 * 64 + 1  # not stretched to 2001 slots by flow 3
    assert s.levels[0].slots.count(-1) == 1
    got = shares(s, 200_000)
    assert got[3] == pytest.approx(1 / len(s.levels[0].slots), rel=1e-3)  # one down slot
    assert got[3] <= 1 / 64
    assert got[1] == pytest.approx(got[2], rel=1e-3)


def test_shares_within_the_rounding_bound_for_random_weights() -> None:
    rng = random.Random(7)
    for _ in range(25):
        n = rng.randint(2, 9)
        weights = {
            f: rng.choice([0.5, 1, 2, 3, 10, 40, 300]) * rng.uniform(0.5, 2) for f in range(n)
        }
        s = backlogged(weights, frame_slots=16)
        frames = 1
        for lv in s.levels:
            frames *= len(lv.slots)
        got = shares(s, 4 * frames)
        total = sum(weights.values())
        for fid, w in weights.items():
            # Bound: half a slot of the flow's level, and each level above it.
            depth = s.level_of[fid]
            worth = 1.0
            bound = 0.0
            for lv in s.levels[: depth + 1]:
                bound += worth / s.frame_slots
                worth *= lv.slots.count(-1) / len(lv.slots)
            assert abs(got[fid] - w / total) <= bound + 1e-9, (weights, fid, got[fid], bound)


def test_idle_flows_slots_go_to_the_active_ones() -> None:
    s = HierarchicalRoundRobin()
    for fid, w in ((1, 4.0), (2, 1.0), (3, 3.0)):
        s.add(fid, w)
    s.request(2, 10**12)
    s.request(3, 10**12)
    got = shares(s, 40_000)
    assert got[1] == 0
    assert got[3] / got[2] == pytest.approx(3.0, rel=0.02)


def test_grants_are_evenly_spaced() -> None:
    s = backlogged({1: 1.0, 2: 7.0}, frame_slots=8)
    order = [s.next_grant(MSS)[0] for _ in range(800)]  # type: ignore[index]
    gaps = [j - i for i, j in zip(
        [k for k, f in enumerate(order) if f == 1],
        [k for k, f in enumerate(order) if f == 1][1:],
        strict=False,
    )]  # fmt: skip
    assert max(gaps) == min(gaps) == 8


def test_peek_does_not_advance_and_small_requests_are_served_whole() -> None:
    s = HierarchicalRoundRobin()
    s.add(1, 1.0)
    s.add(2, 1.0)
    s.request(1, 300)
    s.request(2, 5000)
    first = s.peek_size(MSS)
    assert s.peek_size(MSS) == first
    grants = [s.next_grant(MSS) for _ in range(6)]
    assert (1, 300) in grants
    assert sum(n for f, n in grants if f == 2) == 5000  # type: ignore[misc]
    assert s.next_grant(MSS) is None and s.peek_size(MSS) is None and s.pending() == 0


def test_remove_and_reweight_rebuild_the_frames() -> None:
    s = backlogged({1: 1.0, 2: 1.0, 3: 2.0})
    s.remove(3)
    assert set(s.level_of) == {1, 2}
    s.set_weight(2, 3.0)
    got = shares(s, 20_000)
    assert got[2] / got[1] == pytest.approx(3.0, rel=0.02)
    with pytest.raises(ValueError):
        s.set_weight(1, 0)
    with pytest.raises(ValueError):
        HierarchicalRoundRobin(frame_slots=1)
