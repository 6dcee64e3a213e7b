"""The convergence metric: seconds until every flow stays within a tolerance of its share."""

from __future__ import annotations

from fairgate_exp.metrics import convergence_time


def series(values: list[float], dt: float = 0.2) -> list[tuple[float, float]]:
    return [(round((i + 1) * dt, 4), v) for i, v in enumerate(values)]


def test_converged_after_the_last_sample_outside() -> None:
    rates = {
        "a": series([10, 50, 95, 102, 100, 99, 100]),
        "b": series([190, 150, 105, 98, 100, 101, 100]),
    }
    # both are last outside 5 % of 100 at 0.4 s (95 and 105 are exactly 5 % off: inside)
    got = convergence_time(rates, {"a": 100.0, "b": 100.0}, 0.0, 1.4, 0.05, 0.0)
    assert got == 0.4
    # a tighter tolerance: 95 (0.6 s) and 102 (0.8 s) are outside 1 %
    assert convergence_time(rates, {"a": 100.0, "b": 100.0}, 0.0, 1.4, 0.01, 0.0) == 0.8


def test_a_late_excursion_resets_the_time() -> None:
    rates = {"a": series([100, 100, 100, 130, 100, 100])}
    assert convergence_time(rates, {"a": 100.0}, 0.0, 1.2, 0.1, 0.0) == 0.8


def test_never_converged_or_no_samples_is_none() -> None:
    assert convergence_time({"a": series([50, 60, 70])}, {"a": 100.0}, 0.0, 0.6, 0.1, 0) is None
    assert convergence_time({}, {"a": 100.0}, 0.0, 0.6, 0.1) is None


def test_time_counts_from_the_join_and_ignores_samples_before_it() -> None:
    rates = {"a": series([0, 0, 0, 0, 0, 40, 100, 100, 100, 100])}
    # the flow joined at 1.0 s: samples up to 1.0 do not count; 1.2 (40) is the last outside
    assert convergence_time(rates, {"a": 100.0}, 1.0, 2.0, 0.1, 0.0) == 0.2


def test_one_noisy_sample_is_averaged_away_over_the_trailing_second() -> None:
    # 0.2 s samples: the flow is at its share from 1.0 s, one sample jitters 8 % at 3.0 s
    values = [20, 40, 60, 80, 100] + [100] * 9 + [92] + [100] * 10
    rates = {"a": series(values)}
    assert convergence_time(rates, {"a": 100.0}, 0.0, 5.0, 0.05, 0.0) == 3.0  # raw: late
    # smoothed over 1 s (5 samples): (92 + 4 x 100) / 5 = 98.4 stays inside; the ramp is
    # last outside at 1.4 s ((60 + 80 + 3 x 100) / 5 = 88), inside at 1.6 s (96)
    assert convergence_time(rates, {"a": 100.0}, 0.0, 5.0, 0.05) == 1.4
