"""From counter reads to per-port measurements (pure: no I/O, no clock).

The switch keeps monotonic counters (docs/data-plane.md, "Telemetry
encoding"); the control loop reads them once per period into a Snapshot and
this module turns two snapshots into one PortMeasurement per port. A counter
that went backwards means the switch restarted (its counters began again at
zero): `counter_deltas` reports it so the loop re-baselines instead of
computing rates from garbage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from fairgate_controller.algorithms.measure import PortMeasurement
from fairgate_controller.algorithms.xcp_types import XcpSample
from fairgate_controller.buckets import (
    OVERFLOW_BUCKET,
    Buckets,
    queue_buckets,
    rtt_buckets,
    uniform_queue_buckets,
)
from fairgate_p4 import generated as g
from fairgate_p4.xcp_math import RatioBuckets, XcpSums, estimate_sums

# counter name -> index -> (packets, bytes)
Snapshot = dict[str, dict[int, tuple[int, int]]]

COUNTERS = (
    g.COUNTER_PORT_ARRIVALS,
    g.COUNTER_PORT_DEPARTURES,
    g.COUNTER_QUEUE_DEPTH_HIST,
    g.COUNTER_RTT_HIST,
    g.COUNTER_SESSION_EVENTS,
)
# read only when a port runs XCP (1024 more entries per read)
XCP_COUNTERS = (g.COUNTER_XCP_RATIO_HIST,)
DEFAULT_PKT_BYTES = 1500.0
SIM_QUEUE_DROPS = "sim.queue_drops"
"""A counter no P4 program has: packets and bytes each egress queue dropped. An engine
that knows them exactly (the simulator) adds it to its snapshots; the agent then uses it
instead of ``QueueDropEstimator``."""

__all__ = (
    "COUNTERS",
    "OVERFLOW_BUCKET",
    "SIM_QUEUE_DROPS",
    "XCP_COUNTERS",
    "Buckets",
    "HistogramStats",
    "QueueDropEstimator",
    "Snapshot",
    "counter_cells",
    "counter_deltas",
    "event_count",
    "histogram_stats",
    "measure_port",
    "queue_buckets",
    "queue_overflow",
    "queue_top_pkts",
    "rtt_buckets",
    "uniform_queue_buckets",
    "xcp_sample",
    "xcp_sums",
)


def counter_cells(name: str, ports: Iterable[int]) -> list[int] | None:
    """The cells of counter array `name` that hold `ports`' values (the index
    layouts of docs/data-plane.md, "Telemetry encoding"), or None for an array
    not laid out by port."""
    shift = {
        g.COUNTER_PORT_ARRIVALS: 0,
        g.COUNTER_PORT_DEPARTURES: 0,
        g.COUNTER_QUEUE_DEPTH_HIST: g.FG_HIST_BUCKET_BITS,
        g.COUNTER_RTT_HIST: g.FG_HIST_BUCKET_BITS,
        g.COUNTER_SESSION_EVENTS: g.FG_SESSION_EVENT_BITS,
        g.COUNTER_XCP_RATIO_HIST: g.FG_XCP_HIST_BUCKET_BITS,
        g.COUNTER_FICCRD_EDGE_EVENTS: g.FG_FICCRD_EVENT_BITS,
        g.COUNTER_FICCRD_CORE_EVENTS: g.FG_FICCRD_EVENT_BITS,
    }.get(name)
    if shift is None:
        return None
    return [(port << shift) | cell for port in sorted(set(ports)) for cell in range(1 << shift)]


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
    """Count, mean and minimum of one port's histogram over a period.

    Each bucket stands for its midpoint (`Buckets.value`), so the mean is off by
    at most half the widest occupied bucket, and the minimum (the lowest
    non-empty bucket's midpoint) by at most half its width: exact for
    one-packet buckets. `overflow` counts values in the open last bucket, which
    stand for its lower bound: when it is non-zero the mean is a lower bound
    (saturated)."""

    count: int
    mean: float
    minimum: float
    overflow: int = 0

    @property
    def saturated(self) -> bool:
        return self.overflow > 0


def histogram_stats(delta: Snapshot, counter: str, port: int, buckets: Buckets) -> HistogramStats:
    base = port << g.FG_HIST_BUCKET_BITS
    entries = delta.get(counter, {})
    counts = [entries.get(base + b, (0, 0))[0] for b in range(g.FG_HIST_BUCKETS)]
    total = sum(counts)
    if total == 0:
        return HistogramStats(0, 0.0, 0.0)
    # the empty buckets left out: each added an exact 0.0, so the sum is the same
    mean = sum(n * buckets.value(b) for b, n in enumerate(counts) if n) / total
    low = next(b for b, n in enumerate(counts) if n)
    return HistogramStats(total, mean, buckets.value(low), counts[OVERFLOW_BUCKET])


def queue_overflow(delta: Snapshot, port: int) -> int:
    """Packets of the period that found the queue at or above the open bucket's
    bound (for target-sized buckets: a full buffer)."""
    index = (port << g.FG_HIST_BUCKET_BITS) | OVERFLOW_BUCKET
    return delta.get(g.COUNTER_QUEUE_DEPTH_HIST, {}).get(index, (0, 0))[0]


def queue_top_pkts(delta: Snapshot, port: int, buckets: Buckets, depth_pkts: int) -> float:
    """The largest queue (packets, the packet itself included) that a packet leaving
    `port` in the period found: the top of the highest non-empty depth bucket plus
    one, at most the buffer `depth_pkts`; 0 when nothing left."""
    base = port << g.FG_HIST_BUCKET_BITS
    entries = delta.get(g.COUNTER_QUEUE_DEPTH_HIST, {})
    for b in range(g.FG_HIST_BUCKETS - 1, -1, -1):
        if entries.get(base + b, (0, 0))[0]:
            if b >= OVERFLOW_BUCKET:
                return float(depth_pkts)
            return float(min(depth_pkts, buckets.bounds[b + 1]))
    return 0.0


class QueueDropEstimator:
    """Tail drops of one egress queue, from counters BMv2 has.

    BMv2 drops in its queue after ingress and before egress, and no counter sees it.
    What the counters give exactly is the backlog B = arrivals - departures since the
    baseline = drops + Q(now) - Q(baseline). The queue at the read, Q(now), is not
    readable (registers are not, over P4Runtime); the departures' depth histogram says
    the largest queue a departing packet found, Q_seen. So::

        D(t) = max(D(t - 1), B(t) - Q_seen(t))

    a running count that never goes down, and the period's drops are its increase.
    Errors: when the queue grew in the last sojourn time beyond what departures saw,
    the growth counts as drops (at most the growth since the newest departure found
    the queue, never more than the buffer); drops are exact when the queue is at the
    buffer at the read (where tail drops happen). A queue non-empty at the baseline
    makes the count low by that queue. The old rule (per period max(0, A - D)) counted
    every growth as drops. docs/algorithms.md has measured errors."""

    def __init__(self) -> None:
        self.backlog_pkts = 0.0
        self.backlog_bytes = 0.0
        self.counted_pkts = 0.0
        self.counted_bytes = 0.0

    def update(
        self,
        arrivals: tuple[float, float],
        departures: tuple[float, float],
        queue_seen_pkts: float,
        pkt_bytes: float,
    ) -> tuple[float, float]:
        """One period's (packets, bytes) arrived and departed; returns its drops."""
        self.backlog_pkts += arrivals[0] - departures[0]
        self.backlog_bytes += arrivals[1] - departures[1]
        new_pkts = max(0.0, self.backlog_pkts - queue_seen_pkts - self.counted_pkts)
        new_bytes = max(0.0, self.backlog_bytes - queue_seen_pkts * pkt_bytes - self.counted_bytes)
        if new_pkts == 0:
            new_bytes = 0.0
        self.counted_pkts += new_pkts
        self.counted_bytes += new_bytes
        return new_pkts, new_bytes


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
    queue_drops: tuple[float, float] = (0.0, 0.0),
) -> PortMeasurement:
    """One port's measurement; `queue_drops` (packets, bytes) comes from the caller,
    which keeps the state to estimate them (``QueueDropEstimator``) or reads them."""
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
        queue_drop_pkts=queue_drops[0],
        queue_drop_bytes=queue_drops[1],
        queue_mean_bytes=queue.mean * pkt_bytes,
        queue_min_bytes=queue.minimum * pkt_bytes,
        rtt_mean_s=rtt.mean / 1e6 if rtt.count else None,
        syn_admitted=event_count(delta, port, g.FG_EVENT_SYN_ADMITTED),
        syn_dropped=event_count(delta, port, g.FG_EVENT_SYN_DROPPED),
        syn_ungated=event_count(delta, port, g.FG_EVENT_SYN_UNGATED),
        fins=event_count(delta, port, g.FG_EVENT_FIN),
        rsts=event_count(delta, port, g.FG_EVENT_RST),
    )


def xcp_sums(delta: Snapshot, port: int, buckets: RatioBuckets) -> XcpSums:
    """One port's XCP sums over a period from its xcp_ratio_hist deltas."""
    base = port << g.FG_XCP_HIST_BUCKET_BITS
    entries = delta.get(g.COUNTER_XCP_RATIO_HIST, {})
    cells = [entries.get(base + b, (0, 0)) for b in range(g.FG_XCP_HIST_BUCKETS)]
    return estimate_sums([c[1] for c in cells], [c[0] for c in cells], buckets)


def xcp_sample(
    delta: Snapshot,
    port: int,
    period_s: float,
    qbuckets: Buckets,
    rbuckets: Buckets,
    xbuckets: RatioBuckets,
) -> XcpSample:
    """XCP's per-port inputs over one period (docs/data-plane.md "XCP").

    The queue is the persistent one: the lowest occupied queue-depth bucket,
    in bytes at the period's mean departing packet size."""
    arr_p, arr_b = delta.get(g.COUNTER_PORT_ARRIVALS, {}).get(port, (0, 0))
    dep_p, dep_b = delta.get(g.COUNTER_PORT_DEPARTURES, {}).get(port, (0, 0))
    pkt_bytes = dep_b / dep_p if dep_p else (arr_b / arr_p if arr_p else DEFAULT_PKT_BYTES)
    queue = histogram_stats(delta, g.COUNTER_QUEUE_DEPTH_HIST, port, qbuckets)
    rtt = histogram_stats(delta, g.COUNTER_RTT_HIST, port, rbuckets)
    sums = xcp_sums(delta, port, xbuckets)
    return XcpSample(
        y_bytes=arr_b,
        sum_s_bytes=sums.sum_s_bytes,
        sum_rtt_s_over_cwnd=sums.sum_rtt_s_over_cwnd,
        avg_rtt_s=rtt.mean / 1e6 if rtt.count else None,
        queue_bytes_or_pkts=queue.minimum * pkt_bytes,
        interval_s=period_s,
    )
