"""RCP (Dukkipati et al.) as the baseline rate controller, per output port.

Every period::

    T = control period,  d = mean carried RTT (T when no packet carried one)
    R = R_prev * (1 + (T/d) * max((alpha * (C - y) - beta * q / d) / C, -max_decrease))

with alpha = 0.1, beta = 1, q the queue that stood through the whole period (the period's
minimum, ``queue_min_bytes``: what RCP's instantaneous queue sample sees once transients
are gone) and ``max_decrease = 0.25``. As in RCP, the gain T/d is capped at
``max_period_ratio`` (1: RCP's control interval never exceeds d), and R is clamped into
[min_rate, max_rate].

Why the bounded step (issue 14): when a flow joins at the advertised rate R = C the load
doubles, and the queue it builds keeps growing for the feedback delay (one RTT plus the
queueing delay in front of the new rate). Unbounded, the queue term charged that same queue
in every period of the delay: factors 0.64, 0.18, 0.004 in a row took R from C to the
floor, and with y = 0 RCP regrows by only ``1 + alpha`` per period (utilisation 0.004 for
a second in ``qfcp-convergence``). Bounding the cut to 25 % of R per RTT keeps each step in
the regime where RCP's linearised equation holds (a factor near or below 0 is outside it);
in equilibrium (y = C, q = 0) nothing changes.
"""

from __future__ import annotations

from .common import (
    DEFAULT_CONGESTION_THRESHOLD,
    DEFAULT_MIN_RATE_BPS,
    DEFAULT_MIN_RTT_S,
    AdvertisedRate,
    RateDecision,
    check_non_negative,
    check_positive,
    is_congested,
    rtt_or,
)
from .measure import PortMeasurement


class RcpController(AdvertisedRate):
    """Per-port RCP fair-rate controller (state: the last advertised rate R_prev)."""

    def __init__(
        self,
        capacity_Bps: float,
        *,
        alpha: float = 0.1,
        beta: float = 1.0,
        max_period_ratio: float = 1.0,
        max_decrease: float = 0.25,
        min_rate_Bps: float = DEFAULT_MIN_RATE_BPS,
        max_rate_Bps: float | None = None,
        initial_rate_Bps: float | None = None,
        congestion_threshold: float = DEFAULT_CONGESTION_THRESHOLD,
        min_rtt_s: float = DEFAULT_MIN_RTT_S,
    ) -> None:
        super().__init__(
            capacity_Bps,
            min_rate_Bps=min_rate_Bps,
            max_rate_Bps=max_rate_Bps,
            initial_rate_Bps=initial_rate_Bps,
        )
        self._alpha = check_non_negative("alpha", alpha)
        self._beta = check_non_negative("beta", beta)
        self._max_ratio = check_positive("max_period_ratio", max_period_ratio)
        if not (check_positive("max_decrease", max_decrease) < 1):
            raise ValueError(
                f"max_decrease must be < 1 (a cut of 100 % is a collapse), got {max_decrease!r}"
            )
        self._max_decrease = max_decrease
        self._threshold = check_positive("congestion_threshold", congestion_threshold)
        self._min_rtt_s = check_positive("min_rtt_s", min_rtt_s)

    def update(self, m: PortMeasurement) -> RateDecision:
        c = m.capacity_Bps
        d = rtt_or(m, m.period_s, self._min_rtt_s)
        ratio = min(m.period_s / d, self._max_ratio)
        y = m.y_Bps
        q = m.queue_min_bytes
        step = (self._alpha * (c - y) - self._beta * q / d) / c
        factor = 1.0 + ratio * max(step, -self._max_decrease)
        rate = self._limits.clamp(self._rate * factor, c)
        self._rate = rate
        return RateDecision(
            rate_Bps=rate,
            congested=is_congested(m, self._threshold),
            diagnostics={
                "factor": factor,
                "step": step,
                "q_bytes": q,
                "d_s": d,
                "T_over_d": ratio,
                "y_Bps": y,
            },
        )
