"""Counter snapshots to per-port measurements: deltas, resets, histograms."""

from __future__ import annotations

import pytest

from fairgate_controller.telemetry import (
    Buckets,
    counter_deltas,
    histogram_stats,
    measure_port,
    queue_buckets,
    rtt_buckets,
)
from fairgate_p4 import generated as g

PORT = 3
BASE = PORT << g.FG_HIST_BUCKET_BITS


def test_queue_buckets_are_exact_below_16_and_cover_the_depth() -> None:
    b = queue_buckets(64)
    ranges = b.ranges()
    assert len(ranges) == g.FG_HIST_BUCKETS - 1
    assert ranges[:16] == [(i, i, i) for i in range(16)]
    assert ranges[-1][1] >= 64
    assert all(r[0] == prev[1] + 1 for prev, r in zip(ranges, ranges[1:], strict=False))


def test_rtt_buckets_are_log_spaced() -> None:
    b = rtt_buckets(1_000, 1_000_000)
    lows = [lo for lo, _hi, _b in b.ranges()]
    assert lows[0] == 1 and lows[1] == 1_000 and b.bounds[-1] == 1_000_000
    ratios = [b2 / b1 for b1, b2 in zip(lows[1:], lows[2:], strict=False)]
    assert max(ratios) < 1.3 and min(ratios) > 1.2


def test_buckets_validate() -> None:
    with pytest.raises(ValueError, match="32 bounds"):
        Buckets((0, 1, 2))
    with pytest.raises(ValueError, match="increase"):
        Buckets(tuple([0] * 32))


def test_deltas_and_reset_detection() -> None:
    prev = {"a": {0: (10, 1000), 1: (5, 500)}}
    cur = {"a": {0: (15, 1600), 1: (5, 500)}}
    delta, reset = counter_deltas(prev, cur)
    assert delta == {"a": {0: (5, 600), 1: (0, 0)}} and not reset
    _delta, reset = counter_deltas(cur, {"a": {0: (1, 100), 1: (5, 500)}})
    assert reset


def test_histogram_mean_and_minimum() -> None:
    b = queue_buckets(64)
    delta = {g.COUNTER_QUEUE_DEPTH_HIST: {BASE + 2: (10, 0), BASE + 5: (30, 0), 5: (99, 0)}}
    stats = histogram_stats(delta, g.COUNTER_QUEUE_DEPTH_HIST, PORT, b)
    assert stats.count == 40 and stats.minimum == 2
    assert stats.mean == pytest.approx((2 * 10 + 5 * 30) / 40)
    overflow = {g.COUNTER_QUEUE_DEPTH_HIST: {BASE + 31: (4, 0)}}
    assert histogram_stats(overflow, g.COUNTER_QUEUE_DEPTH_HIST, PORT, b).mean == b.bounds[-1]
    empty = histogram_stats({}, g.COUNTER_QUEUE_DEPTH_HIST, PORT, b)
    assert empty.count == 0 and empty.mean == 0


def test_measure_port_converts_everything() -> None:
    qb, rb = queue_buckets(64), rtt_buckets()
    rtt_bucket = next(bk for lo, hi, bk in rb.ranges() if lo <= 20_000 <= hi)
    delta = {
        g.COUNTER_PORT_ARRIVALS: {PORT: (110, 110 * 1000)},
        g.COUNTER_PORT_DEPARTURES: {PORT: (100, 100 * 1000)},
        g.COUNTER_QUEUE_DEPTH_HIST: {BASE + 4: (100, 0)},
        g.COUNTER_RTT_HIST: {BASE + rtt_bucket: (50, 0)},
        g.COUNTER_SESSION_EVENTS: {
            (PORT << g.FG_SESSION_EVENT_BITS) | g.FG_EVENT_SYN_ADMITTED: (7, 0),
            (PORT << g.FG_SESSION_EVENT_BITS) | g.FG_EVENT_SYN_DROPPED: (3, 0),
            (PORT << g.FG_SESSION_EVENT_BITS) | g.FG_EVENT_FIN: (6, 0),
        },
    }
    m = measure_port(delta, PORT, 0.5, 1e6, qb, rb)
    assert m.y_Bps == 110 * 1000 / 0.5
    assert m.drop_pkts == 10 and m.drop_bytes == 10_000
    assert m.queue_mean_bytes == 4 * 1000 and m.queue_min_bytes == 4 * 1000
    assert m.rtt_mean_s == pytest.approx(0.020, rel=0.13)
    assert (m.syn_admitted, m.syn_dropped, m.fins) == (7, 3, 6)
    idle = measure_port({}, PORT, 0.5, 1e6, qb, rb)
    assert idle.y_Bps == 0 and idle.rtt_mean_s is None


def test_queue_top_is_the_highest_occupied_bucket_bounded_by_the_buffer() -> None:
    from fairgate_controller.telemetry import queue_top_pkts

    b = queue_buckets(64)
    assert queue_top_pkts({}, PORT, b, 64) == 0.0
    seen = {g.COUNTER_QUEUE_DEPTH_HIST: {BASE + 2: (5, 0), BASE + 9: (1, 0), 9: (7, 0)}}
    assert queue_top_pkts(seen, PORT, b, 64) == 10.0  # found 9 ahead: 10 with itself
    full = {g.COUNTER_QUEUE_DEPTH_HIST: {BASE + 31: (1, 0)}}
    assert queue_top_pkts(full, PORT, b, 64) == 64.0  # the open bucket: the buffer


def test_drop_estimate_counts_drops_not_queue_growth() -> None:
    """B = arrivals - departures is drops + queue; the estimate subtracts the largest
    queue the departures saw and never counts a packet twice."""
    from fairgate_controller.telemetry import QueueDropEstimator

    est = QueueDropEstimator()
    # the queue grows from 0 to 40 (departures saw it reach 40): no drops
    assert est.update((100, 100_000), (60, 60_000), 40.0, 1000.0) == (0.0, 0.0)
    # full 64-packet buffer, 30 more in than out and the queue grew by 24: 6 dropped
    assert est.update((130, 130_000), (100, 100_000), 64.0, 1000.0) == (6.0, 6000.0)
    # it drains back to 10: the backlog falls, nothing is counted again
    assert est.update((50, 50_000), (104, 104_000), 64.0, 1000.0) == (0.0, 0.0)
    # steady at 10 with 5 drops in the period
    assert est.update((100, 100_000), (95, 95_000), 10.0, 1000.0) == (5.0, 5000.0)
    # the old rule would have counted 40 + 30 + 0 + 5 = 75
    assert est.counted_pkts == 11.0
