"""Issue #16, outage: a period with no arrivals holds every algorithm's rate
(and state), instead of letting it drift to C; traffic that returns meets
the rate that held before the outage."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fairgate_controller.agent import ControlConfig
from fairgate_controller.algorithms import (
    HoldWhenIdle,
    LestasController,
    PortMeasurement,
    QfcpController,
    RateController,
    RcpController,
)
from fairgate_controller.topology import PortSpec

C = 1_250_000.0  # 10 Mbit/s
PERIOD = 0.1

MAKERS: dict[str, Callable[[], RateController]] = {
    "qfcp": lambda: QfcpController(C),
    "rcp": lambda: RcpController(C),
    "lestas": lambda: LestasController(C),
}


def busy(ctl: RateController, flows: int) -> PortMeasurement:
    """`flows` senders at the advertised rate, capped by C (what a port sees)."""
    y = min(flows * ctl.rate_Bps, 1.2 * C)
    q = max(0.0, y - C) * PERIOD
    return PortMeasurement(
        period_s=PERIOD,
        capacity_Bps=C,
        arrival_bytes=y * PERIOD,
        arrival_pkts=y * PERIOD / 1250,
        departure_bytes=min(y, C) * PERIOD,
        departure_pkts=min(y, C) * PERIOD / 1250,
        queue_mean_bytes=q,
        queue_min_bytes=q / 2,
        rtt_mean_s=0.05,
    )


IDLE = PortMeasurement(period_s=PERIOD, capacity_Bps=C)


def settle(ctl: RateController, flows: int, periods: int = 300) -> float:
    for _ in range(periods):
        ctl.update(busy(ctl, flows))
    return ctl.rate_Bps


@pytest.mark.parametrize("algo", sorted(MAKERS))
def test_without_the_rule_an_outage_drifts_the_rate_up(algo: str) -> None:
    """The problem the rule fixes: the bare algorithms climb during silence."""
    ctl = MAKERS[algo]()
    fair = settle(ctl, 10)
    assert fair < 0.2 * C
    for _ in range(30):  # a 3 s outage
        ctl.update(IDLE)
    assert ctl.rate_Bps > 1.5 * fair


@pytest.mark.parametrize("algo", sorted(MAKERS))
def test_an_outage_holds_the_rate_and_state(algo: str) -> None:
    ctl = HoldWhenIdle(MAKERS[algo]())
    fair = settle(ctl, 10)
    last = list(ctl.recent)
    n_hat = getattr(ctl.inner, "n_hat", None)
    first = ctl.update(IDLE)
    assert first.rate_Bps == min(last) <= fair  # the safe one of the last busy periods
    for _ in range(300):  # a 30 s outage
        d = ctl.update(IDLE)
        assert d.rate_Bps == first.rate_Bps and not d.congested and d.diagnostics == {"idle": 1.0}
    assert ctl.rate_Bps == first.rate_Bps
    assert getattr(ctl.inner, "n_hat", None) == n_hat
    # Traffic returns: the first decision starts from the held rate, so ten
    # senders resume at about C in total, not 10 C.
    d = ctl.update(busy(ctl, 10))
    assert 10 * d.rate_Bps < 1.3 * C
    assert settle(ctl, 10) == pytest.approx(fair, rel=0.1)


def test_half_empty_last_period_and_slow_starters_do_not_raise_the_rate() -> None:
    """QFCP: the period in which flows stop is half empty (N looks like 5, the
    rate doubles); returning flows send at their start rate for a while. Neither
    may lift the rate above the pre-outage share."""
    ctl = HoldWhenIdle(QfcpController(C))
    fair = settle(ctl, 10)
    half = PortMeasurement(
        period_s=PERIOD, capacity_Bps=C, arrival_bytes=5 * fair * PERIOD, arrival_pkts=40
    )
    assert ctl.update(half).rate_Bps > 1.3 * fair  # the algorithm alone would double it
    held = ctl.update(IDLE).rate_Bps
    assert held == pytest.approx(fair, rel=0.05)
    start_rate = 50_000.0  # 400 kbit/s: what senders start with
    slow = PortMeasurement(
        period_s=PERIOD,
        capacity_Bps=C,
        arrival_bytes=10 * start_rate * PERIOD,
        arrival_pkts=10 * start_rate * PERIOD / 1250,
    )
    for _ in range(ctl.warmup_periods):
        d = ctl.update(slow)
        assert d.rate_Bps <= held
    assert "warmup_capped_Bps" in d.diagnostics
    assert ctl.update(slow).rate_Bps > held  # after the warm-up the algorithm rules again


def test_slow_senders_are_not_an_outage() -> None:
    """At a rate below two frames per period, a period without arrivals is what
    slow senders look like: the algorithm runs (and raises the rate)."""
    ctl = HoldWhenIdle(RcpController(C, initial_rate_Bps=5_000.0))
    d = ctl.update(IDLE)
    assert "idle" not in d.diagnostics and d.rate_Bps > 5_000.0


@pytest.mark.parametrize("algo", sorted(MAKERS))
def test_a_single_packet_is_not_idle(algo: str) -> None:
    ctl = HoldWhenIdle(MAKERS[algo]())
    settle(ctl, 10)
    one = PortMeasurement(
        period_s=PERIOD, capacity_Bps=C, arrival_bytes=1250, arrival_pkts=1, rtt_mean_s=0.05
    )
    assert "idle" not in ctl.update(one).diagnostics


@pytest.mark.parametrize("algo", ["qfcp", "rcp", "lestas"])
def test_the_controller_uses_the_rule_for_every_algorithm(algo: str) -> None:
    port = PortSpec("s1", 1, "h1", C)
    ctl = ControlConfig(algo=algo).rate_controller(port, None)  # type: ignore[arg-type]
    assert isinstance(ctl, HoldWhenIdle)
    assert ControlConfig(algo="none").rate_controller(port, None) is None
