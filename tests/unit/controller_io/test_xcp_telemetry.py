"""XCP's per-port sample from counter deltas (telemetry.xcp_sample), pure."""

from __future__ import annotations

import pytest

from fairgate_controller.algorithms.xcp_types import XcpSample
from fairgate_controller.telemetry import queue_buckets, rtt_buckets, xcp_sample
from fairgate_p4 import generated as g
from fairgate_p4 import xcp_math as xm

PORT = 2


def test_sample_from_one_ports_counters() -> None:
    qb, rb, xb = queue_buckets(64, None), rtt_buckets(), xm.RatioBuckets()
    hist = g.FG_HIST_BUCKET_BITS
    xcp_bits = g.FG_XCP_HIST_BUCKET_BITS
    b_fast = xb.bucket_of(round(256 * (-20.0)))  # rtt/cwnd = 2^-20 s/B
    b_slow = xb.bucket_of(round(256 * (-15.0)))
    delta = {
        g.COUNTER_PORT_ARRIVALS: {PORT: (300, 300_000), 3: (9, 9_999)},
        g.COUNTER_PORT_DEPARTURES: {PORT: (250, 250_000)},
        g.COUNTER_QUEUE_DEPTH_HIST: {
            (PORT << hist) | qb.bucket_of(5): (100, 0),
            (PORT << hist) | qb.bucket_of(20): (150, 0),
            (3 << hist) | qb.bucket_of(1): (7, 0),
        },
        g.COUNTER_RTT_HIST: {(PORT << hist) | rb.bucket_of(40_000): (250, 0)},
        g.COUNTER_XCP_RATIO_HIST: {
            (PORT << xcp_bits) | b_fast: (200, 200_000),
            (PORT << xcp_bits) | b_slow: (50, 50_000),
            (3 << xcp_bits) | b_fast: (1, 1_000_000),  # another port: ignored
        },
    }
    s = xcp_sample(delta, PORT, 0.05, qb, rb, xb)
    assert s.y_bytes == 300_000
    assert s.sum_s_bytes == 250_000
    assert s.sum_rtt_s_over_cwnd == pytest.approx(
        200_000 * xb.representative(b_fast) + 50_000 * xb.representative(b_slow)
    )
    exact = 200_000 * 2.0**-20 + 50_000 * 2.0**-15
    assert abs(s.sum_rtt_s_over_cwnd / exact - 1) <= xb.relative_error_bound()
    assert s.avg_rtt_s == pytest.approx(rb.value(rb.bucket_of(40_000)) / 1e6)
    # persistent queue: the lowest occupied bucket, in bytes of the mean departing packet
    assert s.queue_bytes_or_pkts == pytest.approx(qb.value(qb.bucket_of(5)) * 1000)
    assert s.interval_s == 0.05


def test_idle_port_and_bad_samples() -> None:
    s = xcp_sample({}, PORT, 0.1, queue_buckets(64, None), rtt_buckets(), xm.RatioBuckets())
    assert (s.y_bytes, s.sum_s_bytes, s.sum_rtt_s_over_cwnd, s.avg_rtt_s) == (0, 0, 0.0, None)
    with pytest.raises(ValueError, match="sum_s_bytes"):
        XcpSample(0, -1, 0, None, 0, 0.1)
    with pytest.raises(ValueError, match="interval_s"):
        XcpSample(0, 0, 0, None, 0, 0.0)
    with pytest.raises(ValueError, match="avg_rtt_s"):
        XcpSample(0, 0, 0, float("nan"), 0, 0.1)
