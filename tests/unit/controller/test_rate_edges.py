"""Single-step closed forms and robustness of the rate controllers against odd inputs."""

import math

import pytest

from fairgate_controller.algorithms import (
    LestasController,
    PortMeasurement,
    QfcpController,
    RateController,
    RcpController,
)

C = 1_000_000.0
FLOOR = 1250.0
CONTROLLERS = [QfcpController, RcpController, LestasController]


def _m(**kw) -> PortMeasurement:
    args = {"period_s": 0.1, "capacity_Bps": C, "rtt_mean_s": 0.1}
    args.update(kw)
    return PortMeasurement(**args)


def _ok(rate: float, capacity: float = C) -> bool:
    return math.isfinite(rate) and FLOOR <= rate <= capacity


@pytest.mark.parametrize("make", CONTROLLERS)
def test_satisfies_protocol(make):
    assert isinstance(make(C), RateController)


def test_qfcp_one_step_closed_form():
    c = QfcpController(C)  # R_prev = C
    # 30 kB more arrived than left, of which the queue dropped 10 kB (the rest is growth).
    d = c.update(
        _m(
            arrival_bytes=0.2 * C,
            queue_mean_bytes=10_000.0,
            drop_bytes=30_000.0,
            queue_drop_bytes=10_000.0,
        )
    )
    n = 2.0  # y = 2C over R_prev = C
    raw = (C - 0.5 * 20_000.0 / 0.1) / n
    assert d.diagnostics["N"] == pytest.approx(n)
    assert d.diagnostics["q_bytes"] == pytest.approx(20_000.0)  # queue + the queue's drops
    assert d.rate_Bps == pytest.approx((raw + C) / 2)
    assert d.congested


def test_rcp_one_step_closed_form():
    c = RcpController(C, initial_rate_Bps=100_000.0)
    d = c.update(
        _m(arrival_bytes=0.05 * C, queue_mean_bytes=9000.0, queue_min_bytes=1000.0, rtt_mean_s=0.2)
    )
    # T = 0.1, d = 0.2, y = 0.5 C, q = the standing (minimum) queue, not the mean
    factor = 1 + (0.1 / 0.2) * (0.1 * (C - 0.5 * C) - 1.0 * 1000.0 / 0.2) / C
    assert d.rate_Bps == pytest.approx(100_000.0 * factor)
    assert not d.congested


def test_lestas_one_step_closed_form():
    c = LestasController(C, q_ref_bytes=5000.0)
    p0 = (C + 2 * 5000.0 / 0.05) / 10  # initial rate: eq. 5 with q = 0, N_hat = 10, d = 0.05
    assert c.rate_Bps == pytest.approx(p0)
    d = c.update(_m(arrival_bytes=0.1 * C, queue_min_bytes=2000.0, rtt_mean_s=0.1))
    n1 = 10 + 0.1 * (C - 10 * p0) * p0 / (1 + p0**2)
    assert c.n_hat == pytest.approx(n1)
    assert d.rate_Bps == pytest.approx((C - (2000.0 - 10_000.0) / 0.1) / n1)
    assert d.diagnostics["q_persistent_bytes"] == 2000.0


def test_lestas_persistent_queue_is_min_over_propagation_delay():
    c = LestasController(C, q_ref_bytes=0.0)
    # RTT 0.3 s with an empty queue: the window must cover 3 periods of 0.1 s
    for q_min in (1000.0, 5000.0, 7000.0):
        d = c.update(_m(queue_min_bytes=q_min, rtt_mean_s=0.3))
    assert d.diagnostics["q_persistent_bytes"] == 1000.0
    d = c.update(_m(queue_min_bytes=9000.0, rtt_mean_s=0.3))
    assert d.diagnostics["q_persistent_bytes"] == 5000.0


@pytest.mark.parametrize("make", CONTROLLERS)
def test_no_traffic_climbs_to_capacity(make):
    c = make(C, initial_rate_Bps=FLOOR)
    for _ in range(400):
        d = c.update(_m())
    assert d.rate_Bps == pytest.approx(C, rel=0.01)
    assert not d.congested


@pytest.mark.parametrize("make", CONTROLLERS)
def test_traffic_far_above_capacity_pushes_rate_down_not_to_zero(make):
    c = make(C)
    rates = [
        c.update(_m(arrival_bytes=100 * C * 0.1, queue_mean_bytes=1e6)).rate_Bps for _ in range(50)
    ]
    assert all(_ok(r) for r in rates)
    assert rates[-1] < C / 10
    assert c.update(_m(arrival_bytes=100 * C * 0.1)).congested


@pytest.mark.parametrize("make", CONTROLLERS)
@pytest.mark.parametrize("rtt", [None, 0.0, 1e-12, 1e6])
def test_rtt_absent_zero_tiny_or_huge(make, rtt):
    c = make(C)
    for _ in range(20):
        d = c.update(_m(arrival_bytes=0.5 * C * 0.1, queue_mean_bytes=5000.0, rtt_mean_s=rtt))
        assert _ok(d.rate_Bps)
        for value in d.diagnostics.values():
            assert math.isfinite(value)


@pytest.mark.parametrize("make", CONTROLLERS)
def test_absurd_counters_keep_rates_finite_and_in_band(make):
    c = make(C)
    absurd = [
        _m(
            arrival_bytes=1e300,
            queue_mean_bytes=1e300,
            queue_min_bytes=1e300,
            drop_bytes=1e300,
            queue_drop_bytes=1e300,
        ),
        _m(period_s=1e-300, arrival_bytes=1e10),  # y overflows to inf
        _m(arrival_bytes=0.0, queue_mean_bytes=0.0),
        _m(capacity_Bps=1e-300, arrival_bytes=1.0),
        _m(capacity_Bps=1e300, arrival_bytes=1e300),
    ]
    for m in absurd * 3:
        d = c.update(m)
        assert math.isfinite(d.rate_Bps) and d.rate_Bps >= FLOOR
        assert d.rate_Bps <= max(m.capacity_Bps, FLOOR)
    # and it recovers to the capacity once the counters are sane again
    for _ in range(400):
        d = c.update(_m())
    assert d.rate_Bps == pytest.approx(C, rel=0.01)


@pytest.mark.parametrize("make", CONTROLLERS)
def test_idle_port_from_the_floor_recovers(make):
    """y = 0 with R_prev at the floor: the rate must come back up, never divide by zero."""
    c = make(C, initial_rate_Bps=FLOOR)
    d = c.update(_m(arrival_bytes=0))
    assert _ok(d.rate_Bps) and d.rate_Bps > FLOOR


@pytest.mark.parametrize("make", CONTROLLERS)
def test_floor_and_ceiling_are_honoured(make):
    c = make(C, min_rate_Bps=50_000.0, max_rate_Bps=200_000.0)
    assert 50_000.0 <= c.rate_Bps <= 200_000.0
    for _ in range(30):
        assert c.update(_m()).rate_Bps <= 200_000.0
    for _ in range(30):
        assert c.update(_m(arrival_bytes=1e9, queue_mean_bytes=1e9)).rate_Bps >= 50_000.0


@pytest.mark.parametrize("make", CONTROLLERS)
@pytest.mark.parametrize(
    "kwargs",
    [
        {"min_rate_Bps": 0.0},
        {"min_rate_Bps": math.nan},
        {"max_rate_Bps": 10.0, "min_rate_Bps": 100.0},
        {"initial_rate_Bps": -1.0},
        {"congestion_threshold": 0.0},
        {"min_rtt_s": 0.0},
    ],
)
def test_constructor_rejects_bad_parameters(make, kwargs):
    with pytest.raises(ValueError):
        make(C, **kwargs)


@pytest.mark.parametrize("make", CONTROLLERS)
@pytest.mark.parametrize("capacity", [0.0, -1.0, math.inf])
def test_constructor_rejects_bad_capacity(make, capacity):
    with pytest.raises(ValueError):
        make(capacity)


@pytest.mark.parametrize("make", CONTROLLERS)
def test_congestion_flag_threshold(make):
    c = make(C)
    assert not c.update(_m(arrival_bytes=0.95 * C * 0.1)).congested
    assert c.update(_m(arrival_bytes=0.96 * C * 0.1)).congested
