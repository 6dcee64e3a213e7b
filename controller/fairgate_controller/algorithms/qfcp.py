"""QFCP router rate allocation (Pu and Hamdi, paper 002, eqs. 2-4), per output port.

Every period::

    T = mean carried RTT (the control period when no packet carried one)
    N = max(1, y / R_prev)                      # equivalent number of flows   (2)
    R = (C - beta * q / T) / N                  # q = mean queue + bytes dropped (3)
    R = (R + R_prev) / 2                        # rate stabilisation            (4)

then R is clamped into [min_rate, max_rate]. All rates in bytes/s, q in bytes, T in seconds.
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


class QfcpController(AdvertisedRate):
    """Per-port QFCP fair-rate controller (state: the last advertised rate R_prev)."""

    def __init__(
        self,
        capacity_Bps: float,
        *,
        beta: float = 0.5,
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
        self._beta = check_non_negative("beta", beta)
        self._threshold = check_positive("congestion_threshold", congestion_threshold)
        self._min_rtt_s = check_positive("min_rtt_s", min_rtt_s)

    def update(self, m: PortMeasurement) -> RateDecision:
        c = m.capacity_Bps
        t = rtt_or(m, m.period_s, self._min_rtt_s)
        y = m.y_Bps
        q = m.virtual_queue_bytes
        n = max(1.0, y / self._rate)
        raw = (c - self._beta * q / t) / n
        rate = self._limits.clamp((raw + self._rate) / 2.0, c)
        self._rate = rate
        return RateDecision(
            rate_Bps=rate,
            congested=is_congested(m, self._threshold),
            diagnostics={"N": n, "q_bytes": q, "T_s": t, "y_Bps": y, "R_raw_Bps": raw},
        )
