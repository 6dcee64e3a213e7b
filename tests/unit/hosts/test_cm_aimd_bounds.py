"""The CM's AIMD when one feedback acknowledges several round trips at once (a probe response
every few RTTs, after aging cut the rate): an update grows no faster than TCP would over the
same round trips (hosts/fairgate_hosts/cm/aimd.py, docs/hosts.md)."""

from __future__ import annotations

import pytest

from fairgate_hosts.cm.aimd import AimdRate

MSS = 1000
RTT = 100_000  # us


def _in_avoidance(rate_Bps: float) -> AimdRate:
    """A CM past its first loss: rate == ssthresh == ``rate_Bps``, sRTT and min RTT 100 ms,
    last feedback at t = 0."""
    a = AimdRate(mss=MSS, initial_rate_Bps=2 * rate_Bps)
    a.on_ack(0, RTT, 0)
    assert a.on_loss(0, RTT)
    assert a.rate_Bps == pytest.approx(rate_Bps) and not a.slow_start
    return a


def _aged(rate_Bps: float, halvings: int) -> tuple[AimdRate, int]:
    """``_in_avoidance(rate_Bps)`` left without feedback for ``halvings`` round trips of
    sending: aged that many times. Returns the CM and the time now."""
    a = _in_avoidance(rate_Bps)
    now = 0
    for _ in range(halvings):
        now += RTT
        a.age(now, active=True)
    assert a.agings == halvings
    return a, now


def test_a_response_after_aging_adds_one_mss_per_round_trip_it_covers() -> None:
    a = _in_avoidance(100_000)  # 10 MSS per RTT
    a.ssthresh_Bps = 0.0  # congestion avoidance whatever the rate
    sent = 0.0
    now = 0
    for _ in range(4):  # four silent round trips: sending at the (aging) rate
        sent += a.rate_Bps * RTT / 1e6
        now += RTT
        a.age(now, active=True)
    assert a.agings == 4 and a.rate_Bps == pytest.approx(100_000 / 16)
    aged = a.rate_Bps
    a.on_ack(int(sent), RTT, now)  # one response acks all of it
    # MSS x acked / cwnd over the aged window would add ~19 MSS; TCP's congestion avoidance
    # over these four round trips adds four
    assert a.rate_Bps == pytest.approx(aged + 4 * MSS / 0.1)


def test_per_ack_feedback_keeps_tcps_increase() -> None:
    """Frequent feedback (TCP/CM's acks): the bound never binds, +MSS per window acked."""
    a = _in_avoidance(100_000)
    now = 0
    cwnd = a.rate_Bps * 0.1
    for _ in range(10):  # one window in ten acks over one RTT
        now += RTT // 10
        a.on_ack(int(cwnd / 10), RTT, now)
    assert a.rate_Bps * 0.1 == pytest.approx(cwnd + MSS, rel=0.01)


def test_slow_start_stops_at_ssthresh_within_one_update() -> None:
    a, now = _aged(100_000, 5)
    assert a.slow_start and a.ssthresh_Bps == pytest.approx(100_000)  # aging keeps ssthresh
    a.on_ack(200_000, RTT, now)  # far more than the window up to ssthresh
    # up to ssthresh in slow start, then at most one MSS per round trip covered (five)
    assert a.rate_Bps == pytest.approx(100_000 + 5 * MSS / 0.1)
    assert not a.slow_start


def test_slow_start_below_ssthresh_is_unchanged() -> None:
    a = AimdRate(mss=MSS, initial_rate_Bps=2 * MSS / 0.1)
    a.on_ack(2 * MSS, RTT, RTT)
    assert a.rate_Bps == pytest.approx(4 * MSS / 0.1)


def test_a_loss_after_aging_still_halves() -> None:
    a, now = _aged(100_000, 3)
    aged = a.rate_Bps
    assert a.on_loss(now + 1, RTT)
    assert a.rate_Bps == pytest.approx(aged / 2) and a.ssthresh_Bps == pytest.approx(aged / 2)
