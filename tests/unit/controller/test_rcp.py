"""RCP's bounded step and standing queue (issue 14): a flow joining at R = C must not drive
the advertised rate to the floor, and equilibrium must be unchanged."""

from __future__ import annotations

import pytest

from fairgate_controller.algorithms import PortMeasurement, RcpController

from .fluid import Flow, FluidNetwork, Link

MBIT = 125_000.0
C_LAB = 1_117_800.0  # qfcp-convergence's bottleneck at lab scale (900 pkt/s of 1242 B)

# (period_s, y_Bps, queue_mean_bytes, queue_min_bytes, rtt_mean_s) of s1 port 5 from
# `python -m fairgate_exp run experiments/qfcp-convergence.toml --engine sim --algo rcp`
# on d7f9b90, t = 2.04-2.29 s: flow2 joins at 2 s at the advertised rate (about C).
# The old controller's rates: 1108992, 714519, 127388, 1000 (the floor), 1000, 1000.
JOIN = [
    (0.04496, 1187737.0, 0.0, 0.0, 0.0449645),
    (0.04496, 2099256.1, 13465.1, 1242.0, 0.0449645),
    (0.04496, 1823038.2, 38129.4, 26703.0, 0.0449645),
    (0.04496, 662923.0, 57504.6, 46575.0, 0.047293),
    (0.04729, 0.0, 63443.1, 51543.0, 0.0641059),
    (0.06411, 0.0, 56511.0, 56511.0, 0.089716),
]


def _join_measurements() -> list[PortMeasurement]:
    return [
        PortMeasurement(
            period_s=t,
            capacity_Bps=C_LAB,
            arrival_bytes=y * t,
            arrival_pkts=y * t / 1242,
            queue_mean_bytes=qm,
            queue_min_bytes=qmin,
            rtt_mean_s=rtt,
        )
        for t, y, qm, qmin, rtt in JOIN
    ]


def test_recorded_join_does_not_collapse_to_the_floor():
    ctl = RcpController(C_LAB, min_rate_Bps=1000.0)
    rates = [ctl.update(m).rate_Bps for m in _join_measurements()]
    # the old controller ended at 1000 B/s (0.1 % of C); each cut is now at most 25 % per RTT
    assert min(rates) > C_LAB / 4, rates
    assert all(b >= 0.75 * a - 1e-6 for a, b in zip([C_LAB, *rates], rates, strict=False))


def test_cut_is_bounded_to_max_decrease_scaled_by_t_over_d():
    far_above = {"arrival_bytes": 10 * C_LAB * 0.1, "queue_min_bytes": 1e6}
    full = RcpController(C_LAB)
    d = full.update(PortMeasurement(period_s=0.1, capacity_Bps=C_LAB, rtt_mean_s=0.1, **far_above))
    assert d.rate_Bps == pytest.approx(0.75 * C_LAB)
    assert d.diagnostics["step"] < -0.25  # the equation asked for more; the bound held it
    half = RcpController(C_LAB)
    d = half.update(PortMeasurement(period_s=0.05, capacity_Bps=C_LAB, rtt_mean_s=0.1, **far_above))
    assert d.rate_Bps == pytest.approx((1 - 0.5 * 0.25) * C_LAB)


def test_small_steps_are_rcps_equation_unchanged():
    ctl = RcpController(C_LAB, initial_rate_Bps=0.5 * C_LAB)
    m = PortMeasurement(
        period_s=0.1,
        capacity_Bps=C_LAB,
        arrival_bytes=1.2 * C_LAB * 0.1,
        queue_mean_bytes=50_000.0,
        queue_min_bytes=2000.0,
        rtt_mean_s=0.1,
    )
    step = (0.1 * (C_LAB - 1.2 * C_LAB) - 1.0 * 2000.0 / 0.1) / C_LAB
    assert -0.25 < step < 0
    assert ctl.update(m).rate_Bps == pytest.approx(0.5 * C_LAB * (1 + step))


@pytest.mark.parametrize("bad", [0.0, 1.0, 1.5, -0.1, float("nan")])
def test_max_decrease_must_be_in_open_unit_interval(bad):
    with pytest.raises(ValueError, match="max_decrease"):
        RcpController(C_LAB, max_decrease=bad)


def test_fluid_join_at_full_rate_converges_to_half():
    capacity_Bps = 10 * MBIT
    link = Link(capacity_Bps, 200_000.0, RcpController(capacity_Bps))
    flows = [Flow(path=[0]), Flow(path=[0], start_s=3.0)]
    trace = FluidNetwork([link], flows).run(12.0)
    after_join = [r[0] for t, r in zip(trace.t, trace.rates, strict=True) if t > 3.0]
    assert min(after_join) > capacity_Bps / 8  # fluid queue drains slowly: 0.19 C at worst
    assert after_join[-1] == pytest.approx(capacity_Bps / 2, rel=0.05)
