"""``metrics.window_drops``: a port's drops over a window from the records' counters."""

from __future__ import annotations

from typing import Any

from fairgate_exp.metrics import window_drops


def _row(arr: int, dep: int, queue: float, est: float | None = None, exact: float | None = None
         ) -> dict[str, Any]:  # fmt: skip
    return {
        "arrival_pkts": arr,
        "departure_pkts": dep,
        "queue_pkts": queue,
        "drop_est": est,
        "queue_drops": exact,
    }


def test_exact_drops_are_summed_where_the_engine_knows_them() -> None:
    rows = [_row(10, 5, 2.0, est=9, exact=3), _row(10, 10, 4.0, est=9, exact=1)]
    assert window_drops(rows) == 4


def test_counters_alone_give_arrivals_minus_departures_minus_queue_growth() -> None:
    # 12 more arrived than left; the queue's period means went 1 -> 5: 8 dropped
    rows = [_row(100, 95, 1.0), _row(100, 98, 3.0), _row(100, 95, 5.0)]
    assert window_drops(rows) == 8


def test_the_running_estimate_caps_an_end_effect_of_the_period_means() -> None:
    # the queue was 6 at the window's end but its last period's mean says 2: the counters
    # alone read 4 drops; the controller's running estimate saw none
    rows = [_row(100, 100, 2.0, est=0.0), _row(100, 96, 2.0, est=0.0)]
    assert window_drops([{**r, "drop_est": None} for r in rows]) == 4
    assert window_drops(rows) == 0


def test_the_counters_cap_a_running_estimate_that_counted_growth_as_drops() -> None:
    rows = [_row(100, 90, 0.0, est=3.0), _row(100, 100, 10.0, est=2.0)]
    assert window_drops(rows) == 0  # growth 10 = net 10: nothing lost, whatever est says
    rows = [_row(100, 80, 0.0, est=12.0), _row(100, 100, 10.0, est=3.0)]
    assert window_drops(rows) == 10
