"""Queue-length based controller of Lestas et al. (paper 004, eqs. 5-8), per output port.

Every period k (rates in bytes/s, queues in bytes, times in seconds)::

    d(k)   = mean carried RTT (kept from the last period when none was carried; d(0) = 0.05 s)
    q(k)   = persistent queue: min of the per-period queue minima over the last propagation
             delay, estimated as d(k) - queue / C
    N(k+1) = max(1, N(k) + gamma * e * p(k-1) / (u^2 + p(k-1)^2)),
             e = y(k) + q(k-1) / d(k) - N(k) * p(k-1)                       (7), (8)
    p(k)   = clamp((C - (q(k) - 2 q_ref) / d(k)) / N(k+1), min_rate, max_rate)   (5), (6)

``u`` (``rate_unit_Bps``) is the unit in which the paper's ``1 + p^2`` is written: the paper
works in bytes/s, so u = 1 B/s and the step is a normalised-LMS step of about
gamma * (N_eff - N_hat) whatever C is. The estimate uses the freshest N (one period less
delay than the paper's indexing); see docs/algorithms.md.
"""

from __future__ import annotations

from collections import deque

from .common import (
    DEFAULT_CONGESTION_THRESHOLD,
    DEFAULT_MIN_RATE_BPS,
    DEFAULT_MIN_RTT_S,
    AdvertisedRate,
    RateDecision,
    check_non_negative,
    check_positive,
    clamp,
    is_congested,
)
from .measure import PortMeasurement

DEFAULT_Q_REF_BYTES = 15_000.0
"""Default reference queue: 10 full-size (1500-byte) packets, well inside BMv2's 64-packet queue."""

_MAX_N_HAT = 1e9


class PersistentQueue:
    """Minimum queue over (at least) the last propagation delay, from per-period minima."""

    def __init__(self, max_periods: int = 256) -> None:
        if max_periods < 1:
            raise ValueError(f"max_periods must be >= 1, got {max_periods!r}")
        self._window: deque[tuple[float, float]] = deque(maxlen=max_periods)

    def push(self, period_s: float, queue_min_bytes: float, span_s: float) -> float:
        """Record one period's minimum; return the min over the newest periods covering span_s."""
        self._window.append((period_s, queue_min_bytes))
        covered = 0.0
        lowest = queue_min_bytes
        for period, q_min in reversed(self._window):
            lowest = min(lowest, q_min)
            covered += period
            if covered >= span_s:
                break
        return lowest


class LestasController(AdvertisedRate):
    """Per-port queue-length controller with the online estimate N_hat of the number of users."""

    def __init__(
        self,
        capacity_Bps: float,
        *,
        q_ref_bytes: float = DEFAULT_Q_REF_BYTES,
        gamma: float = 0.1,
        n_hat_0: float = 10.0,
        d_0_s: float = 0.05,
        rate_unit_Bps: float = 1.0,
        min_rate_Bps: float = DEFAULT_MIN_RATE_BPS,
        max_rate_Bps: float | None = None,
        initial_rate_Bps: float | None = None,
        congestion_threshold: float = DEFAULT_CONGESTION_THRESHOLD,
        min_rtt_s: float = DEFAULT_MIN_RTT_S,
        window_periods: int = 256,
    ) -> None:
        self._q_ref = check_non_negative("q_ref_bytes", q_ref_bytes)
        self._gamma = check_positive("gamma", gamma)
        self._unit = check_positive("rate_unit_Bps", rate_unit_Bps)
        self._threshold = check_positive("congestion_threshold", congestion_threshold)
        self._min_rtt_s = check_positive("min_rtt_s", min_rtt_s)
        capacity = check_positive("capacity_Bps", capacity_Bps)
        self._n_hat = max(1.0, check_positive("n_hat_0", n_hat_0))
        self._d = max(check_positive("d_0_s", d_0_s), self._min_rtt_s)
        self._q_prev = 0.0
        self._persistent = PersistentQueue(window_periods)
        if initial_rate_Bps is None:
            # the rate eq. (6) gives for an empty queue with N_hat(0) users
            initial_rate_Bps = (capacity + 2.0 * self._q_ref / self._d) / self._n_hat
        super().__init__(
            capacity,
            min_rate_Bps=min_rate_Bps,
            max_rate_Bps=max_rate_Bps,
            initial_rate_Bps=initial_rate_Bps,
        )

    @property
    def n_hat(self) -> float:
        """The current estimate of the effective number of users."""
        return self._n_hat

    @property
    def d_s(self) -> float:
        """The RTT (and control delay) the controller currently uses."""
        return self._d

    def update(self, m: PortMeasurement) -> RateDecision:
        c = m.capacity_Bps
        if m.rtt_mean_s is not None and m.rtt_mean_s > 0:
            self._d = max(m.rtt_mean_s, self._min_rtt_s)
        d = self._d
        y = m.y_Bps
        prop_delay = max(d - m.queue_mean_bytes / c, self._min_rtt_s)
        q = self._persistent.push(m.period_s, m.queue_min_bytes, prop_delay)

        p_prev = self._rate
        error = y + self._q_prev / d - self._n_hat * p_prev
        # gamma * e * p / (u^2 + p^2), written so that huge p cannot overflow p^2
        ratio = p_prev / self._unit
        step = self._gamma * (error / self._unit) / (ratio + 1.0 / ratio)
        self._n_hat = clamp(self._n_hat + step, 1.0, _MAX_N_HAT)

        p = self._limits.clamp((c - (q - 2.0 * self._q_ref) / d) / self._n_hat, c)
        self._rate = p
        self._q_prev = q
        return RateDecision(
            rate_Bps=p,
            congested=is_congested(m, self._threshold),
            diagnostics={
                "N_hat": self._n_hat,
                "q_persistent_bytes": q,
                "d_s": d,
                "prop_delay_s": prop_delay,
                "y_Bps": y,
                "estimator_error_Bps": error,
            },
        )
