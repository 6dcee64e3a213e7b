"""From counter reads to per-port measurements (pure: no I/O, no clock).

The switch keeps monotonic counters (docs/data-plane.md, "Telemetry
encoding"); the control loop reads them once per period into a Snapshot and
this module turns two snapshots into one PortMeasurement per port. A counter
that went backwards means the switch restarted (its counters began again at
zero): `counter_deltas` reports it so the loop re-baselines instead of
computing rates from garbage.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

from fairgate_controller.algorithms.measure import PortMeasurement
from fairgate_p4 import generated as g

# counter name -> index -> (packets, bytes)
Snapshot = dict[str, dict[int, tuple[int, int]]]

COUNTERS = (
    g.COUNTER_PORT_ARRIVALS,
    g.COUNTER_PORT_DEPARTURES,
    g.COUNTER_QUEUE_DEPTH_HIST,
    g.COUNTER_RTT_HIST,
    g.COUNTER_SESSION_EVENTS,
)
OVERFLOW_BUCKET = g.FG_HIST_BUCKETS - 1
DEFAULT_PKT_BYTES = 1500.0


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

    def value(self, bucket: int) -> float:
        """The value a bucket stands for: its midpoint; the overflow's lower bound."""
        if bucket >= OVERFLOW_BUCKET:
            return float(self.bounds[-1])
        lo, hi = self.bounds[bucket], self.bounds[bucket + 1] - 1
        return (lo + hi) / 2.0

    def lower(self, bucket: int) -> float:
        return float(self.bounds[min(bucket, OVERFLOW_BUCKET)])


def queue_buckets(depth_pkts: int = 64) -> Buckets:
    """One-packet buckets for 0..15 (exact minimum for the persistent queue),
    then 15 equal buckets up to the queue's depth."""
    exact = list(range(16))
    width = max(1, math.ceil((depth_pkts + 1 - 16) / 15))
    return Buckets(tuple(exact + [16 + width * i for i in range(16)]))


def rtt_buckets(low_us: int = 1_000, high_us: int = 1_000_000) -> Buckets:
    """Bucket 0 is 1 us .. low_us; then 30 log-spaced buckets to high_us
    (each about 26% wide for 1 ms .. 1 s); RTTs above high_us overflow."""
    ratio = (high_us / low_us) ** (1 / 30)
    bounds = [1] + [round(low_us * ratio**i) for i in range(31)]
    return Buckets(tuple(bounds))


def counter_deltas(prev: Snapshot, cur: Snapshot) -> tuple[Snapshot, bool]:
    """Per-index deltas; the flag is True when any counter went backwards."""
    out: Snapshot = {}
    reset = False
    for name, entries in cur.items():
        before = prev.get(name, {})
        d: dict[int, tuple[int, int]] = {}
        for index, (pkts, nbytes) in entries.items():
            p0, b0 = before.get(index, (0, 0))
            if pkts < p0 or nbytes < b0:
                reset = True
            d[index] = (pkts - p0, nbytes - b0)
        out[name] = d
    return out, reset


@dataclass(frozen=True)
class HistogramStats:
    count: int
    mean: float
    minimum: float


def histogram_stats(delta: Snapshot, counter: str, port: int, buckets: Buckets) -> HistogramStats:
    base = port << g.FG_HIST_BUCKET_BITS
    entries = delta.get(counter, {})
    counts = [entries.get(base + b, (0, 0))[0] for b in range(g.FG_HIST_BUCKETS)]
    total = sum(counts)
    if total == 0:
        return HistogramStats(0, 0.0, 0.0)
    mean = sum(n * buckets.value(b) for b, n in enumerate(counts)) / total
    low = next(b for b, n in enumerate(counts) if n)
    return HistogramStats(total, mean, buckets.lower(low))


def event_count(delta: Snapshot, port: int, event: int) -> int:
    index = (port << g.FG_SESSION_EVENT_BITS) | event
    return delta.get(g.COUNTER_SESSION_EVENTS, {}).get(index, (0, 0))[0]


def measure_port(
    delta: Snapshot,
    port: int,
    period_s: float,
    capacity_Bps: float,
    qbuckets: Buckets,
    rbuckets: Buckets,
) -> PortMeasurement:
    arr_p, arr_b = delta.get(g.COUNTER_PORT_ARRIVALS, {}).get(port, (0, 0))
    dep_p, dep_b = delta.get(g.COUNTER_PORT_DEPARTURES, {}).get(port, (0, 0))
    pkt_bytes = dep_b / dep_p if dep_p else (arr_b / arr_p if arr_p else DEFAULT_PKT_BYTES)
    queue = histogram_stats(delta, g.COUNTER_QUEUE_DEPTH_HIST, port, qbuckets)
    rtt = histogram_stats(delta, g.COUNTER_RTT_HIST, port, rbuckets)
    return PortMeasurement.from_counters(
        period_s=period_s,
        capacity_Bps=capacity_Bps,
        arrival_bytes=arr_b,
        arrival_pkts=arr_p,
        departure_bytes=dep_b,
        departure_pkts=dep_p,
        queue_mean_bytes=queue.mean * pkt_bytes,
        queue_min_bytes=queue.minimum * pkt_bytes,
        rtt_mean_s=rtt.mean / 1e6 if rtt.count else None,
        syn_admitted=event_count(delta, port, g.FG_EVENT_SYN_ADMITTED),
        syn_dropped=event_count(delta, port, g.FG_EVENT_SYN_DROPPED),
        syn_ungated=event_count(delta, port, g.FG_EVENT_SYN_UNGATED),
        fins=event_count(delta, port, g.FG_EVENT_FIN),
        rsts=event_count(delta, port, g.FG_EVENT_RST),
    )
