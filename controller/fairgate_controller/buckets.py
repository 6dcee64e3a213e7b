"""Histogram bucket bounds the controller installs in the switch's range tables.

The switch counts each departing packet's enqueue queue depth (and carried RTT)
into FG_HIST_BUCKETS counters per port; which value falls into which bucket is
decided by range entries the controller installs (`queue_buckets`,
`rtt_buckets` tables, docs/data-plane.md). Everything here is pure: bounds are
a function of the buffer depth and the algorithm's target queue only.

Queue layout with a target T (packets), `queue_buckets(depth, T)`:

    bucket 0          exactly 0 (an empty queue reads as exactly 0)
    buckets 1..n_f    "fine": equal width w from 1 up to at least FINE_SPAN * T,
                      w the smallest width that leaves enough buckets for the tail
    buckets ..30      "tail": geometric up to the buffer depth, ratio <= MAX_RATIO
                      between consecutive bounds (relaxed only for huge buffers)
    bucket 31         open: depth >= buffer (the switch's default action);
                      stands for its lower bound, i.e. the estimate saturates

When the fine region would reach the buffer anyway (a target of a third of the
buffer or more), 30 equal buckets cover it instead.

Without a target (QFCP, RCP, which drive the queue to 0) the layout is the
original one: 16 one-packet buckets, then 15 equal buckets up to the depth.
"""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass

from fairgate_p4 import generated as g

OVERFLOW_BUCKET = g.FG_HIST_BUCKETS - 1
QDEPTH_BITS = 19  # v1model standard_metadata.enq_qdepth (P4Info: queue_buckets.enq_qdepth)
QDEPTH_MAX = (1 << QDEPTH_BITS) - 1
FINE_SPAN = 3.0  # the fine region covers at least this many targets
MAX_RATIO = 1.35  # tail: consecutive bounds at most 35 % apart (half-bucket error <= 15 %)
MAX_FINE_BUCKETS = 22  # with a huge buffer the tail gets at least 30 - 22 = 8 buckets
_FINITE = g.FG_HIST_BUCKETS - 1  # buckets with an upper bound (0..30)


@dataclass(frozen=True)
class Buckets:
    """Histogram bucket bounds installed as range entries.

    Bucket b < 31 holds values in [bounds[b], bounds[b + 1] - 1]; bucket 31
    (the switch's default) holds everything else, i.e. values >= bounds[-1]
    (and values below bounds[0], which for RTT are never counted)."""

    bounds: tuple[int, ...]

    def __post_init__(self) -> None:
        if len(self.bounds) != g.FG_HIST_BUCKETS:
            raise ValueError(f"need {g.FG_HIST_BUCKETS} bounds, got {len(self.bounds)}")
        if any(a >= b for a, b in itertools.pairwise(self.bounds)):
            raise ValueError(f"bounds must increase strictly: {self.bounds}")

    def ranges(self) -> list[tuple[int, int, int]]:
        """(low, high inclusive, bucket) for every installed range."""
        return [(lo, hi - 1, b) for b, (lo, hi) in enumerate(itertools.pairwise(self.bounds))]

    def bucket_of(self, value: int) -> int:
        """The bucket the switch puts `value` in (what the range table does)."""
        b = bisect.bisect_right(self.bounds, value) - 1
        return b if 0 <= b < OVERFLOW_BUCKET else OVERFLOW_BUCKET

    def value(self, bucket: int) -> float:
        """The value a bucket stands for: its midpoint; the open bucket's lower bound."""
        if bucket >= OVERFLOW_BUCKET:
            return float(self.bounds[-1])
        lo, hi = self.bounds[bucket], self.bounds[bucket + 1] - 1
        return (lo + hi) / 2.0

    def half_width(self, bucket: int) -> float:
        """Largest error of `value` for a value in `bucket` (inf for the open bucket)."""
        if bucket >= OVERFLOW_BUCKET:
            return math.inf
        return (self.bounds[bucket + 1] - 1 - self.bounds[bucket]) / 2.0


def queue_buckets(depth_pkts: int = 64, target_pkts: float | None = None) -> Buckets:
    """Queue-depth buckets (packets) for a buffer of `depth_pkts`.

    `target_pkts`: the queue the port's algorithm regulates to (Lestas: q_ref);
    None or <= 0 keeps the target-free layout (`uniform_queue_buckets`)."""
    top = min(max(int(depth_pkts), _FINITE), QDEPTH_MAX)
    if target_pkts is None or not target_pkts > 0 or not math.isfinite(target_pkts):
        return uniform_queue_buckets(depth_pkts)
    need = min(max(1, math.ceil(round(FINE_SPAN * target_pkts, 6))), top - 1)
    slots = _FINITE - 1  # bucket 0 is the exact zero
    w = _fine_width(need, top)
    n_fine = math.ceil(need / w)
    # Spare buckets: keep the fine width further while the tail would start
    # with buckets narrower than w (the tail's widths only grow).
    while n_fine < slots - 1 and 1 + (n_fine + 1) * w < top:
        first = 1 + n_fine * w
        if first * (_ratio(first, top, slots - n_fine) - 1) >= w:
            break
        n_fine += 1
    first = 1 + n_fine * w
    if top - first < (slots - n_fine) * w:
        # No room for a tail at least w wide: then 30 equal buckets over the
        # whole buffer are at most w wide; use them.
        w = math.ceil((top - 1) / slots)
        bounds = [1 + w * i for i in range(slots)]
        return Buckets((0, *bounds, min(1 + w * slots, QDEPTH_MAX)))
    fine = [1 + w * i for i in range(n_fine + 1)]
    return Buckets((0, *fine, *_geometric(first, top, slots - n_fine)))


def _fine_width(need: int, top: int) -> int:
    """Smallest fine width w whose fine region (>= need packets) leaves the tail
    enough buckets for MAX_RATIO, or fits in MAX_FINE_BUCKETS."""
    slots = _FINITE - 1
    for w in itertools.count(1):
        n_fine = math.ceil(need / w)
        if n_fine >= slots:
            continue
        first = 1 + n_fine * w
        if first >= top:
            return w
        if _ratio(first, top, slots - n_fine) <= MAX_RATIO or n_fine <= MAX_FINE_BUCKETS:
            return w
    raise AssertionError("unreachable")  # pragma: no cover


def _ratio(first: int, top: int, n: int) -> float:
    return float((top / first) ** (1.0 / n))


def _geometric(first: int, top: int, n: int) -> list[int]:
    """n bucket upper bounds after `first`, growing geometrically, the last = top.

    Rounding the bounds can make a width smaller than the one before it; the
    widths are sorted (same total) so they never shrink."""
    r = _ratio(first, top, n)
    bounds = [first, *(round(first * r**i) for i in range(1, n)), top]
    widths = sorted(max(1, b - a) for a, b in itertools.pairwise(bounds))
    excess = first + sum(widths) - top  # > 0 only when a width of 0 was raised to 1
    while excess > 0:
        i = max(range(n), key=lambda k: widths[k])
        widths[i] -= 1
        excess -= 1
    return list(itertools.accumulate(widths, initial=first))[1:]


def uniform_queue_buckets(depth_pkts: int = 64) -> Buckets:
    """The target-free layout: one-packet buckets for 0..15 (exact minimum),
    then 15 equal buckets up to the queue's depth."""
    exact = list(range(16))
    width = max(1, math.ceil((depth_pkts + 1 - 16) / 15))
    width = min(width, (QDEPTH_MAX - 16) // 15)  # every bound fits the 19-bit key
    return Buckets(tuple(exact + [16 + width * i for i in range(16)]))


def rtt_buckets(low_us: int = 1_000, high_us: int = 1_000_000) -> Buckets:
    """Bucket 0 is 1 us .. low_us; then 30 log-spaced buckets to high_us
    (each about 26% wide for 1 ms .. 1 s); RTTs above high_us overflow."""
    ratio = (high_us / low_us) ** (1 / 30)
    bounds = [1] + [round(low_us * ratio**i) for i in range(31)]
    return Buckets(tuple(bounds))
