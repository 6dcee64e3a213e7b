"""Absolute-deadline pacer."""

from __future__ import annotations

import pytest

from fairgate_hosts.pacer import Pacer


def test_deadlines_do_not_drift_with_late_wakeups() -> None:
    p = Pacer(rate_Bps=1_000_000, max_lag_us=1000)  # 1000 B -> 1000 us
    now = 0.0
    for _ in range(100):
        dl = p.next_deadline(now)
        now = max(now, dl) + 30  # always wake 30 us late
        p.on_sent(1000, now)
    # 100 packets at 1 ms each from t=30: the schedule ends at 100.03 ms, not 103 ms
    assert p.next_deadline(now) == pytest.approx(100_030)


def test_idle_resets_schedule_without_burst() -> None:
    p = Pacer(rate_Bps=1_000_000, max_lag_us=500)
    p.on_sent(1000, 0)
    assert p.next_deadline(10) == 1000
    assert not p.ready(10)
    assert p.next_deadline(50_000) == 50_000  # long idle: no catch-up burst
    assert p.on_sent(1000, 50_000) == 51_000


def test_set_rate_recomputes_pending_deadline() -> None:
    p = Pacer(rate_Bps=1000)
    p.on_sent(1000, 0)
    assert p.next_deadline(0) == 1_000_000
    p.set_rate(1_000_000)
    assert p.next_deadline(0) == 1000
    with pytest.raises(ValueError):
        p.set_rate(0)


def test_set_rate_after_hold_gives_no_credit_back() -> None:
    """A window-bound sender holds the pacer, then an ack sets the (same or a higher)
    rate: the schedule stays at the hold, no burst of the credit from before it."""
    p = Pacer(rate_Bps=1_000_000, max_lag_us=20_000)  # 1000 B -> 1000 us
    p.on_sent(1000, 0)  # next deadline 1000
    p.hold(5000)  # blocked by the window since then
    p.set_rate(1_000_000)  # an ack re-applies the granted rate
    assert p.next_deadline(5010) == 5000  # may send now, ...
    assert p.on_sent(1000, 5010) == 6000  # ... but the next one waits a full interval
    assert not p.ready(5020)
    p.hold(9000)
    p.set_rate(2_000_000)  # a higher rate: still no credit from before the hold
    assert p.next_deadline(9000) == 9000
    assert p.on_sent(1000, 9000) == 9500
