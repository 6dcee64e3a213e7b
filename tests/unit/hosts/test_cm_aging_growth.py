"""Congestion avoidance when one feedback acknowledges many segments (a probe response every
few RTTs, after exponential aging cut the rate): the window grows as TCP's acks for those
segments would grow it, one ``+MSS x MSS / cwnd`` per segment, not by ``MSS x acked / cwnd``
from the aged window in one step (hosts/fairgate_hosts/cm/aimd.py; `cm-aging`, Fig. 6:
docs/labs/cm-droptail.md)."""

from __future__ import annotations

import pytest

from fairgate_hosts.cm.aimd import AimdRate, avoidance_growth

MSS = 1000
RTT = 100_000  # us


def _avoiding(rate_Bps: float) -> AimdRate:
    """A CM in congestion avoidance at ``rate_Bps`` (ssthresh below it), sRTT 100 ms, last
    feedback at t = 0."""
    a = AimdRate(mss=MSS, initial_rate_Bps=rate_Bps)
    a.on_ack(0, RTT, 0)
    a.ssthresh_Bps = 0.0
    assert not a.slow_start
    return a


def _window(a: AimdRate) -> float:
    return a.rate_Bps * a.srtt_us / 1e6


@pytest.mark.parametrize("rate_Bps", [150.0, 2_000.0, 10_000.0, 50_000.0])
def test_one_response_grows_the_window_as_the_acks_of_its_segments_would(
    rate_Bps: float,
) -> None:
    """Ten segments acknowledged over 20 round trips (the one-MSS-per-round-trip cap does not
    bind): one response and ten acks of one segment leave the same window."""
    one, per_ack = _avoiding(rate_Bps), _avoiding(rate_Bps)
    one.on_ack(10 * MSS, None, 20 * RTT)
    for i in range(1, 11):
        per_ack.on_ack(MSS, None, 2 * i * RTT)
    assert one.rate_Bps == pytest.approx(per_ack.rate_Bps, rel=1e-9)


def test_an_aged_window_is_not_given_every_acked_byte() -> None:
    """The case measured in `cm-aging` (minrtt1): aged to the CM's floor of 150 B/s, a
    response for 10 MSS after 20 round trips. From a window of one MSS, ten acks of TCP's
    congestion avoidance reach about 4.8 MSS; the rule in one step gave 11."""
    a = _avoiding(150.0)
    assert _window(a) < MSS
    a.on_ack(10 * MSS, None, 20 * RTT)
    assert 4.5 * MSS < _window(a) < 5.0 * MSS


def test_the_round_trip_cap_still_binds() -> None:
    """Many segments acknowledged over two round trips: at most two MSS, as before."""
    a = _avoiding(10_000.0)  # one MSS per RTT
    a.on_ack(100 * MSS, None, 2 * RTT)
    assert _window(a) == pytest.approx(3 * MSS)


def test_one_segment_per_feedback_grows_as_before() -> None:
    """TCP/CM's acks: one segment from a window of 10 MSS adds MSS x MSS / cwnd."""
    a = _avoiding(100_000.0)
    a.on_ack(MSS, None, RTT)
    assert _window(a) == pytest.approx(10 * MSS + MSS / 10)


def test_growth_per_segment_and_its_limit() -> None:
    g = avoidance_growth(float(MSS), 10.0 * MSS, MSS, float("inf"))
    assert g / MSS == pytest.approx(3.7887, abs=1e-3)  # 1 -> 2 -> 2.5 -> ... -> 4.7887 MSS
    assert avoidance_growth(float(MSS), 10.0 * MSS, MSS, 2.0 * MSS) == 2.0 * MSS
    assert avoidance_growth(5.0 * MSS, 0.5 * MSS, MSS, float("inf")) == pytest.approx(MSS / 10)
