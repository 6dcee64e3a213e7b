"""What every per-port rate controller shares: the decision type, the protocol, clamping."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .measure import PortMeasurement

DEFAULT_MIN_RATE_BPS = 1250.0
"""Default rate floor: 1250 B/s = 10 kbit/s, about one 1250-byte packet per second."""

DEFAULT_MIN_RTT_S = 1e-3
"""RTTs below this (1 ms) are treated as this: no BMv2 path is faster, and q/T must stay finite."""

DEFAULT_CONGESTION_THRESHOLD = 0.95
"""Congestion flag when y > 0.95 C (Lestas et al., also used for QFCP and RCP)."""


@dataclass(frozen=True)
class RateDecision:
    """What a rate controller tells the switch for one port: the fair rate and the flag."""

    rate_Bps: float
    congested: bool
    diagnostics: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class RateController(Protocol):
    """A per-port controller: one :meth:`update` per control period."""

    @property
    def rate_Bps(self) -> float:
        """The rate currently advertised (before the first update: the initial rate)."""
        ...

    def update(self, m: PortMeasurement) -> RateDecision:
        """Consume one period's measurement and return the rate to advertise next."""
        ...


@dataclass(frozen=True, slots=True)
class RateLimits:
    """The band every advertised rate is clamped into: [min_rate_Bps, max_rate_Bps].

    ``max_rate_Bps=None`` means "the capacity of the current measurement".
    """

    min_rate_Bps: float = DEFAULT_MIN_RATE_BPS
    max_rate_Bps: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.min_rate_Bps) and self.min_rate_Bps > 0):
            raise ValueError(f"min_rate_Bps must be finite and > 0, got {self.min_rate_Bps!r}")
        if self.max_rate_Bps is not None and not (
            math.isfinite(self.max_rate_Bps) and self.max_rate_Bps >= self.min_rate_Bps
        ):
            raise ValueError(
                f"max_rate_Bps must be finite and >= min_rate_Bps ({self.min_rate_Bps}), "
                f"got {self.max_rate_Bps!r}"
            )

    def upper(self, capacity_Bps: float) -> float:
        """The ceiling for a port of this capacity (never below the floor)."""
        hi = capacity_Bps if self.max_rate_Bps is None else self.max_rate_Bps
        return max(self.min_rate_Bps, hi)

    def clamp(self, rate_Bps: float, capacity_Bps: float) -> float:
        """Clamp into [floor, ceiling]; NaN goes to the floor, +inf to the ceiling."""
        return clamp(rate_Bps, self.min_rate_Bps, self.upper(capacity_Bps))


class AdvertisedRate:
    """The state of an explicit-rate port controller (QFCP, RCP, Lestas): the rate it
    advertised last, kept in ``[min_rate_Bps, max_rate_Bps]``.

    ``initial_rate_Bps=None`` starts at the capacity. Subclasses read and write
    ``self._rate`` and clamp with ``self._limits``.
    """

    def __init__(
        self,
        capacity_Bps: float,
        *,
        min_rate_Bps: float,
        max_rate_Bps: float | None,
        initial_rate_Bps: float | None,
    ) -> None:
        self._limits = RateLimits(min_rate_Bps, max_rate_Bps)
        capacity = check_positive("capacity_Bps", capacity_Bps)
        start = capacity if initial_rate_Bps is None else initial_rate_Bps
        self._rate = self._limits.clamp(check_positive("initial_rate_Bps", start), capacity)

    @property
    def rate_Bps(self) -> float:
        """The rate currently advertised (before the first update: the initial rate)."""
        return self._rate

    def reset_rate(self, rate_Bps: float) -> None:
        """Continue from `rate_Bps` as if it had been advertised last (outage rule)."""
        self._rate = max(self._limits.min_rate_Bps, check_positive("rate_Bps", rate_Bps))


def clamp(x: float, lo: float, hi: float) -> float:
    """``min(max(x, lo), hi)`` that maps NaN to ``lo`` (a broken input must not escape)."""
    if math.isnan(x):
        return lo
    return min(max(x, lo), hi)


def check_positive(name: str, value: float) -> float:
    """Return ``value`` or raise ValueError if it is not a finite number > 0."""
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def check_non_negative(name: str, value: float) -> float:
    """Return ``value`` or raise ValueError if it is not a finite number >= 0."""
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return float(value)


def rtt_or(m: PortMeasurement, fallback_s: float, min_rtt_s: float) -> float:
    """The mean carried RTT, or ``fallback_s`` when none was carried (None or 0).

    The result is at least ``min_rtt_s`` so that q / T stays finite and meaningful.
    """
    rtt = m.rtt_mean_s
    t = fallback_s if rtt is None or rtt <= 0 else rtt
    return max(t, min_rtt_s)


def is_congested(m: PortMeasurement, threshold: float) -> bool:
    """The congestion flag: input rate above ``threshold`` x capacity."""
    return m.y_Bps > threshold * m.capacity_Bps
