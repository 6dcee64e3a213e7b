"""The queue histogram's target-sized buckets end to end: Lestas at the paper's
single bottleneck (50 Mbit/s, q_ref = 100 packets of 1000 B, buffer one BDP =
806 packets) holds the queue at q_ref, not at the edge of a coarse bucket
(the uniform layout's 53-packet buckets gave 110.7 packets here, and 1.9 q_ref
with the 2499-packet buffer of lestas-dynamics at paper scale). About 10 s."""

from __future__ import annotations

import pytest

from fairgate_sim.sweep import FULL, Q_REF, Point, run_point


def test_lestas_holds_q_ref_in_a_bdp_buffer() -> None:
    res, net = run_point(Point.of("capacity", 50), FULL)
    assert res["buffer_pkts"] == 806
    bounds = net.switches["s1"].qbuckets.bounds
    assert max(b - a for a, b in zip(bounds, bounds[1:], strict=False) if b <= 2 * Q_REF) <= 10
    assert res["utilisation"] > 0.99 and res["drops_window"] == 0 and res["jain"] > 0.99
    assert res["queue_pkts"] == pytest.approx(Q_REF, rel=0.06)
    assert res["queue_histogram_pkts"] == pytest.approx(res["queue_pkts"], abs=5)
