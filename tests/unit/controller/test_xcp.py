"""XCP's controller: the paper's equations, edge cases, and convergence in a small model."""

from __future__ import annotations

import math

import pytest

from fairgate_controller.algorithms import XcpController, XcpSample

C = 1_250_000.0  # 10 Mbit/s in bytes/s


def sample(**kw: float | None) -> XcpSample:
    base: dict[str, float | None] = {
        "y_bytes": 0.0,
        "sum_s_bytes": 0.0,
        "sum_rtt_s_over_cwnd": 0.0,
        "avg_rtt_s": 0.1,
        "queue_bytes_or_pkts": 0.0,
        "interval_s": 0.1,
    }
    base.update(kw)
    return XcpSample(**base)  # type: ignore[arg-type]


def test_equations_by_hand_underused_link():
    # y = 0.5 C over d = 0.1 s, no queue: phi = 0.4 * 0.1 * 0.5C = 25000 B,
    # h = max(0, 0.1 * 0.5C * 0.1 - 25000) = 0; xi_p = 25000 / (0.1 * 0.2); xi_n = 0.
    d = XcpController(C).update(
        sample(y_bytes=0.5 * C * 0.1, sum_s_bytes=62500.0, sum_rtt_s_over_cwnd=0.2)
    )
    assert d.diagnostics["phi_bytes"] == pytest.approx(25000.0)
    assert d.diagnostics["h_bytes"] == 0.0
    assert d.xi_p == pytest.approx(25000.0 / (0.1 * 0.2))
    assert d.xi_n == 0.0
    assert d.interval_s == pytest.approx(0.1)


def test_equations_by_hand_queue_and_shuffling():
    # y = C exactly, Q = 10000 B: phi = -0.226 * 10000 = -2260; h = 0.1*C*0.1 - 2260 = 10240.
    d = XcpController(C).update(
        sample(
            y_bytes=C * 0.1,
            sum_s_bytes=C * 0.1,
            sum_rtt_s_over_cwnd=0.3,
            queue_bytes_or_pkts=10000.0,
        )
    )
    phi, h = -2260.0, 0.1 * C * 0.1 - 2260.0
    assert d.diagnostics["phi_bytes"] == pytest.approx(phi)
    assert d.diagnostics["h_bytes"] == pytest.approx(h)
    assert d.xi_p == pytest.approx(h / (0.1 * 0.3))
    assert d.xi_n == pytest.approx((h - phi) / (0.1 * C * 0.1))


def test_sums_are_scaled_from_the_interval_to_d():
    # The loop measured 0.2 s while d = 0.1 s: half of each sum belongs to one d.
    a = XcpController(C).update(
        sample(y_bytes=C * 0.1, sum_s_bytes=C * 0.1, sum_rtt_s_over_cwnd=0.3, interval_s=0.1)
    )
    b = XcpController(C).update(
        sample(y_bytes=C * 0.2, sum_s_bytes=C * 0.2, sum_rtt_s_over_cwnd=0.6, interval_s=0.2)
    )
    assert b.xi_p == pytest.approx(a.xi_p)
    assert b.xi_n == pytest.approx(a.xi_n)


def test_no_rtt_yet_uses_d0_then_follows_the_carried_rtt():
    ctl = XcpController(C)
    assert ctl.interval_s == pytest.approx(0.05)
    assert ctl.update(sample(avg_rtt_s=None)).interval_s == pytest.approx(0.05)
    assert ctl.update(sample(avg_rtt_s=0.0)).interval_s == pytest.approx(0.05)
    assert ctl.update(sample(avg_rtt_s=0.2)).interval_s == pytest.approx(0.2)
    # a later interval without RTTs keeps the last d
    assert ctl.update(sample(avg_rtt_s=None)).interval_s == pytest.approx(0.2)


def test_idle_port_gives_a_finite_positive_factor_and_no_negative_one():
    d = XcpController(C).update(sample())
    # phi = 0.4 * d * C, handed to a lone flow: xi_p = phi / (d * d)
    assert d.xi_p == pytest.approx(0.4 * 0.1 * C / (0.1 * 0.1))
    assert d.xi_n == 0.0
    assert all(math.isfinite(v) for v in d.diagnostics.values())


def test_standing_queue_without_arrivals_charges_nobody():
    d = XcpController(C).update(sample(queue_bytes_or_pkts=1e6))
    assert d.diagnostics["phi_bytes"] < 0
    assert d.xi_p == 0.0 and d.xi_n == 0.0


@pytest.mark.parametrize(
    "bad",
    [
        {"interval_s": 0.0},
        {"interval_s": -1.0},
        {"y_bytes": -1.0},
        {"sum_s_bytes": math.nan},
        {"queue_bytes_or_pkts": math.inf},
    ],
)
def test_bad_samples_are_refused(bad: dict[str, float]):
    with pytest.raises(ValueError):
        XcpController(C).update(sample(**bad))


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        XcpController(0.0)
    with pytest.raises(ValueError):
        XcpController(C, alpha=-0.1)


# ---- convergence: window senders, per-packet feedback, a fluid queue ----------------------


def run_model(
    rtts: list[float], cwnd0: list[float], seconds: float, *, s: float = 1000.0, dt: float = 0.001
) -> tuple[list[float], float, float]:
    """Flows with window w_i and RTT r_i send w_i / r_i into a link of capacity C. Every d
    the controller gets the sums of the packets of that d; each packet carries
    xi_p*r^2*s/w - xi_n*r*s bytes, applied to the window one RTT later (lumped per d).
    Returns the final rates, the mean utilisation and the mean queue over the last second."""
    ctl = XcpController(C)
    w = list(cwnd0)
    q, t, since = 0.0, 0.0, 0.0
    acc = {"y": 0.0, "ss": 0.0, "src": 0.0, "rtt": 0.0, "n": 0.0, "qmin": math.inf}
    pending: list[tuple[float, list[float]]] = []  # (apply at, per-flow window change)
    tail_y = tail_q = tail_t = 0.0
    xi_p = xi_n = 0.0
    while t < seconds:
        rates = [wi / ri for wi, ri in zip(w, rtts, strict=True)]
        arr = sum(rates) * dt
        q = max(0.0, q + arr - C * dt)
        acc["qmin"] = min(acc["qmin"], q)
        for wi, ri, xi in zip(w, rtts, rates, strict=True):
            pk = xi * dt / s
            acc["ss"] += pk * s
            acc["src"] += pk * ri * s / wi
            acc["rtt"] += pk * (ri + q / C)
            acc["n"] += pk
        acc["y"] += arr
        # feedback of the packets sent now, applied when their acks return
        change = [
            (wi / ri * dt / s) * (xi_p * ri * ri * s / wi - xi_n * ri * s)
            for wi, ri in zip(w, rtts, strict=True)
        ]
        pending.append((t + max(rtts), change))
        while pending and pending[0][0] <= t:
            for i, dw in enumerate(pending.pop(0)[1]):
                w[i] = max(s, w[i] + dw)
        t += dt
        since += dt
        if t > seconds - 1.0:
            tail_y += arr
            tail_q += q * dt
            tail_t += dt
        if since >= ctl.interval_s:
            dec = ctl.update(
                XcpSample(
                    acc["y"],
                    acc["ss"],
                    acc["src"],
                    acc["rtt"] / acc["n"] if acc["n"] else None,
                    acc["qmin"],
                    since,
                )
            )
            xi_p, xi_n = dec.xi_p, dec.xi_n
            acc = {"y": 0.0, "ss": 0.0, "src": 0.0, "rtt": 0.0, "n": 0.0, "qmin": math.inf}
            since = 0.0
    final = [wi / ri for wi, ri in zip(w, rtts, strict=True)]
    return final, tail_y / (C * tail_t), tail_q / tail_t


def test_two_flows_converge_to_fair_full_use_with_a_small_queue():
    rates, util, q = run_model([0.1, 0.1], [80_000.0, 2_000.0], 12.0)
    assert util > 0.95
    assert max(rates) / min(rates) < 1.1, rates
    assert q < 0.1 * C * 0.1  # under a tenth of a bandwidth-delay product


def test_different_rtts_get_equal_rates():
    # XCP's fairness controller is RTT-independent (the paper's Fig. 9)
    rates, util, _q = run_model([0.04, 0.16], [1_000.0, 1_000.0], 20.0)
    assert util > 0.9
    assert max(rates) / min(rates) < 1.2, rates
