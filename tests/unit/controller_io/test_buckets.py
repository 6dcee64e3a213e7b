"""Queue-histogram bucket bounds: a pure function of (buffer depth, target queue).

What the switch can do with them is fixed by the P4 program: 32 buckets, the
last one the range table's default, a 19-bit enq_qdepth key (checked against
the committed P4Info below)."""

from __future__ import annotations

import math
import random

import pytest

from fairgate_controller.buckets import (
    FINE_SPAN,
    MAX_FINE_BUCKETS,
    MAX_RATIO,
    OVERFLOW_BUCKET,
    QDEPTH_BITS,
    QDEPTH_MAX,
    Buckets,
    queue_buckets,
    uniform_queue_buckets,
)
from fairgate_controller.telemetry import histogram_stats, queue_overflow
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g

PORT = 2
BASE = PORT << g.FG_HIST_BUCKET_BITS
DEPTHS = (1, 10, 31, 40, 64, 100, 256, 1000, 1875, 2499, 12_500, 100_000, QDEPTH_MAX, 10**7)
TARGETS = (0.3, 1.0, 5.0, 10.0, 12.1, 66.67, 100.0, 1000.0, 1e5, 1e6)
CASES = [(d, t) for d in DEPTHS for t in (None, *TARGETS)]


def widths(b: Buckets) -> list[int]:
    return [hi - lo + 1 for lo, hi, _b in b.ranges()]


def test_the_key_is_19_bits_wide_in_the_p4info() -> None:
    text = artifacts.p4info_path().read_text()
    table = text[text.index('name: "queue_buckets"') :]
    field = table[table.index('name: "enq_qdepth"') :]
    assert int(field.split("bitwidth:")[1].split()[0]) == QDEPTH_BITS


@pytest.mark.parametrize(("depth", "target"), CASES)
def test_bounds_are_valid_range_entries_covering_every_key(depth: int, target: float) -> None:
    b = queue_buckets(depth, target)
    ranges = b.ranges()
    assert len(b.bounds) == g.FG_HIST_BUCKETS and len(ranges) == OVERFLOW_BUCKET
    # Contiguous from 0, strictly increasing, every range inside the 19-bit key;
    # the open bucket (the table's default) takes [bounds[-1], 2^19 - 1].
    assert ranges[0][0] == 0
    assert all(lo <= hi for lo, hi, _b in ranges)
    assert all(r[0] == prev[1] + 1 for prev, r in zip(ranges, ranges[1:], strict=False))
    assert b.bounds[-1] <= QDEPTH_MAX
    for v in (0, 1, depth - 1, b.bounds[-1] - 1, b.bounds[-1], QDEPTH_MAX):
        if 0 <= v <= QDEPTH_MAX:
            bucket = b.bucket_of(v)
            matching = [bk for lo, hi, bk in ranges if lo <= v <= hi]
            assert matching == ([] if bucket == OVERFLOW_BUCKET else [bucket])
    # Every depth the buffer can hold has a finite bucket (up to the key's limit).
    assert b.bounds[-1] >= min(max(depth, 31), QDEPTH_MAX - 30)


@pytest.mark.parametrize(("depth", "target"), [(d, t) for d in DEPTHS for t in TARGETS])
def test_target_layout_exact_zero_fine_region_then_growing_widths(
    depth: int, target: float
) -> None:
    b = queue_buckets(depth, target)
    w = widths(b)
    assert w[0] == 1  # an empty queue reads exactly 0
    assert w[1:-1] == sorted(w[1:-1])  # widths never shrink (the last may be cut at 2^19)
    top = min(max(depth, 31), QDEPTH_MAX)
    need = min(math.ceil(round(FINE_SPAN * target, 6)), top - 1)
    fine_w = max(1, math.ceil(need / MAX_FINE_BUCKETS))
    # Resolution near the target: every bucket below FINE_SPAN targets is at most
    # fine_w wide (1 packet when the target is small).
    assert all(wi <= fine_w for (lo, _hi, _b), wi in zip(b.ranges(), w, strict=True) if lo <= need)
    # The tail grows by at most MAX_RATIO when the buffer is not huge.
    if top <= FINE_SPAN * target * MAX_RATIO ** (30 - MAX_FINE_BUCKETS):
        for lo, hi, _b in b.ranges():
            if lo > need:
                assert (hi + 1) / lo <= MAX_RATIO + 1e-9


def test_paper_and_lab_layouts() -> None:
    # Paper scale Lestas: 2499-packet buffer, q_ref = 100 packets of 1000 B, i.e.
    # 66.7 packets of 1500 B (the agent's unit): 10-packet buckets up to 200,
    # then 10 buckets growing by 1.28x to the buffer.
    paper = queue_buckets(2499, 100 * 1000 / 1500)
    assert paper.bounds == (
        0, 1, 11, 21, 31, 41, 51, 61, 71, 81, 91, 101, 111, 121, 131, 141, 151, 161,
        171, 181, 191, 201, 259, 333, 428, 551, 709, 912, 1173, 1510, 1942, 2499,
    )  # fmt: skip
    assert paper.bucket_of(100) == 10 and paper.value(10) == 95.5
    assert paper.bucket_of(2498) == 30 and paper.bucket_of(2499) == OVERFLOW_BUCKET
    # The uniform layout it replaces: 166-packet buckets above 15.
    assert widths(uniform_queue_buckets(2499))[16] == 166
    # Lab: 64 packets, q_ref 10: 2-packet buckets to 55, then 3-packet ones.
    lab = queue_buckets(64, 10.0)
    assert set(widths(lab)[1:27]) == {2} and lab.bounds[-1] == 64


@pytest.mark.parametrize("target", [None, 0.0, -3.0, math.nan])
def test_without_a_target_the_layout_is_the_uniform_one(target: float | None) -> None:
    for depth in (64, 256, 2499):
        assert queue_buckets(depth, target) == uniform_queue_buckets(depth) == queue_buckets(depth)
    assert queue_buckets(64).bounds == tuple(range(16)) + tuple(range(16, 77, 4))
    assert uniform_queue_buckets(10**7).bounds[-1] <= QDEPTH_MAX


def _hist(b: Buckets, values: list[int]) -> dict[str, dict[int, tuple[int, int]]]:
    counts: dict[int, tuple[int, int]] = {}
    for v in values:
        k = BASE + b.bucket_of(v)
        counts[k] = (counts.get(k, (0, 0))[0] + 1, 0)
    return {g.COUNTER_QUEUE_DEPTH_HIST: counts}


@pytest.mark.parametrize(("depth", "target"), [(2499, 66.67), (64, 10.0), (1875, 66.67)])
def test_mean_and_minimum_error_bounds(depth: int, target: float) -> None:
    b = queue_buckets(depth, target)
    rng = random.Random(7)
    near = max(1, round(1.5 * target))
    for trial in range(300):
        # Queues around the target, wide ones, and empty ones.
        if trial % 3 == 0:
            values = [max(0, round(rng.gauss(near, near / 4))) for _ in range(50)]
        elif trial % 3 == 1:
            values = [rng.randrange(depth) for _ in range(50)]
        else:
            values = [0] * 10 + [rng.randrange(depth) for _ in range(5)]
        values = [min(v, depth - 1) for v in values]
        stats = histogram_stats(_hist(b, values), g.COUNTER_QUEUE_DEPTH_HIST, PORT, b)
        used = {b.bucket_of(v) for v in values}
        bound = max(b.half_width(k) for k in used)
        assert abs(stats.mean - sum(values) / len(values)) <= bound
        assert abs(stats.minimum - min(values)) <= b.half_width(b.bucket_of(min(values)))
        assert not stats.saturated
        if min(values) == 0:
            assert stats.minimum == 0
    # Near the target the mean is good to half a fine bucket.
    fine_w = max(1, math.ceil(math.ceil(FINE_SPAN * target) / MAX_FINE_BUCKETS))
    values = list(range(round(0.5 * target), round(2 * target) + 1))
    stats = histogram_stats(_hist(b, values), g.COUNTER_QUEUE_DEPTH_HIST, PORT, b)
    assert abs(stats.mean - sum(values) / len(values)) <= (fine_w - 1) / 2


def test_open_bucket_saturates_and_is_flagged() -> None:
    b = queue_buckets(2499, 66.67)
    delta = _hist(b, [2499, 5000, 100])
    stats = histogram_stats(delta, g.COUNTER_QUEUE_DEPTH_HIST, PORT, b)
    assert stats.overflow == 2 and stats.saturated
    assert stats.mean == pytest.approx((2499 + 2499 + 95.5) / 3)  # lower bound: a floor
    assert queue_overflow(delta, PORT) == 2 and queue_overflow(delta, PORT + 1) == 0
    assert b.half_width(OVERFLOW_BUCKET) == math.inf
