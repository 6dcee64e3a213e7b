"""Closed-form checks of the rate controllers in the fluid model (fluid.py in this folder)."""

import pytest
from fluid import Flow, FluidNetwork, Link, single_bottleneck

from fairgate_controller.algorithms import LestasController, QfcpController, RcpController

MBIT = 125_000.0  # bytes/s in 1 Mbit/s


def _settled(values: list[float], target: float, tol: float) -> bool:
    return all(abs(v / target - 1.0) <= tol for v in values)


@pytest.mark.parametrize("n_flows", [1, 4, 30])
@pytest.mark.parametrize("capacity_Bps", [1 * MBIT, 10 * MBIT, 100 * MBIT])
def test_qfcp_single_bottleneck_converges_to_fair_share(n_flows, capacity_Bps):
    net = single_bottleneck(QfcpController(capacity_Bps), n_flows, capacity_Bps)
    trace = net.run(6.0)
    fair = capacity_Bps / n_flows
    assert _settled([r[0] for r in trace.rates[-40:]], fair, 0.02)
    assert _settled(trace.flow_rates[-1], fair, 0.02)
    assert trace.diagnostics[-1][0]["N"] == pytest.approx(n_flows, rel=0.02)
    assert max(q[0] for q in trace.queues[-40:]) < 1500.0  # the queue drains (< 1 packet)


@pytest.mark.parametrize("n_flows", [1, 4, 30])
def test_rcp_single_bottleneck_converges_to_fair_share(n_flows):
    capacity_Bps = 10 * MBIT
    net = single_bottleneck(RcpController(capacity_Bps), n_flows, capacity_Bps)
    trace = net.run(10.0)
    fair = capacity_Bps / n_flows
    assert _settled([r[0] for r in trace.rates[-40:]], fair, 0.05)


def test_rcp_is_slower_than_qfcp():
    """The paper's point about RCP: it converges more slowly than QFCP (alpha = 0.1)."""

    def periods_to_settle(controller) -> int:
        net = single_bottleneck(controller, 4, 10 * MBIT)
        rates = [r[0] for r in net.run(8.0).rates]
        fair = 10 * MBIT / 4
        return next(i for i in range(len(rates)) if _settled(rates[i:], fair, 0.05))

    assert periods_to_settle(QfcpController(10 * MBIT)) < periods_to_settle(
        RcpController(10 * MBIT)
    )


def _two_bottlenecks(make) -> FluidNetwork:
    """QFCP Fig. 4: flows 1-2 cross link 1 (20 Mbit/s) then link 2 (50 Mbit/s); flow 3 only
    link 2. Max-min: 10 / 10 / 30 Mbit/s."""
    links = [
        Link(20 * MBIT, 200_000.0, make(20 * MBIT)),
        Link(50 * MBIT, 500_000.0, make(50 * MBIT)),
    ]
    flows = [Flow(path=[0, 1]), Flow(path=[0, 1]), Flow(path=[1])]
    return FluidNetwork(links, flows, period_s=0.05, base_rtt_s=0.05)


def test_qfcp_two_bottlenecks_reach_max_min_10_10_30():
    trace = _two_bottlenecks(QfcpController).run(10.0)
    for rates in trace.flow_rates[-40:]:
        assert rates[0] == pytest.approx(10 * MBIT, rel=0.05)
        assert rates[1] == pytest.approx(10 * MBIT, rel=0.05)
        assert rates[2] == pytest.approx(30 * MBIT, rel=0.05)
    # Router 2 sees an equivalent flow number of 50/30 = 1.67 (the paper reports about 1.6)
    assert trace.diagnostics[-1][1]["N"] == pytest.approx(50 / 30, rel=0.05)


def test_lestas_two_bottlenecks_reach_max_min_10_10_30():
    net = _two_bottlenecks(LestasController)
    net.window_based = True
    trace = net.run(20.0)
    for rates in trace.flow_rates[-40:]:
        assert rates[0] == pytest.approx(10 * MBIT, rel=0.05)
        assert rates[2] == pytest.approx(30 * MBIT, rel=0.05)


@pytest.mark.parametrize("capacity_Bps", [1 * MBIT, 10 * MBIT, 100 * MBIT, 1000 * MBIT])
@pytest.mark.parametrize("n_flows", [4, 50])
def test_lestas_settles_queue_at_q_ref_and_estimates_n(capacity_Bps, n_flows):
    q_ref = 15_000.0
    controller = LestasController(capacity_Bps, q_ref_bytes=q_ref)  # N_hat(0) = 10
    net = single_bottleneck(controller, n_flows, capacity_Bps, window_based=True)
    trace = net.run(15.0)
    fair = capacity_Bps / n_flows
    assert _settled([r[0] for r in trace.rates[-40:]], fair, 0.02)
    for q in trace.queues[-40:]:
        assert q[0] == pytest.approx(q_ref, rel=0.03)
    # equilibrium of eqs. 5-8: y = C, q = q_ref, N_hat p = C + q_ref/d
    # so N_hat = N (1 + q_ref / (C d))
    d = controller.d_s
    assert controller.n_hat == pytest.approx(n_flows * (1 + q_ref / (capacity_Bps * d)), rel=0.03)


def test_lestas_estimator_needs_the_byte_unit():
    """Written in Mbit/s (u = 125000 B/s) the paper's 1 + p^2 freezes the estimator at 1 Mbit/s
    with 50 users (gain p^2/(u^2+p^2) = 4e-4); in bytes/s (u = 1 B/s) it converges."""

    def n_hat_after(unit: float) -> float:
        controller = LestasController(MBIT, rate_unit_Bps=unit)
        single_bottleneck(controller, 50, MBIT, window_based=True).run(15.0)
        return controller.n_hat

    assert n_hat_after(1.0) > 50
    assert n_hat_after(MBIT) < 15


def test_flows_joining_and_leaving_qfcp_tracks_fair_share():
    capacity_Bps = 10 * MBIT
    link = Link(capacity_Bps, 200_000.0, QfcpController(capacity_Bps))
    flows = [Flow(path=[0]), Flow(path=[0], start_s=3.0), Flow(path=[0], start_s=3.0, stop_s=6.0)]
    net = FluidNetwork([link], flows)
    trace = net.run(9.0)
    by_time = dict(zip(trace.t, trace.rates, strict=True))

    def rate_at(t: float) -> float:
        return by_time[min(by_time, key=lambda x: abs(x - t))][0]

    assert rate_at(2.9) == pytest.approx(capacity_Bps, rel=0.02)
    assert rate_at(5.9) == pytest.approx(capacity_Bps / 3, rel=0.05)
    assert rate_at(8.9) == pytest.approx(capacity_Bps / 2, rel=0.05)
