"""Outage rule shared by every rate controller: silence holds a safe rate.

With nothing arriving, QFCP sees N = max(1, 0/R) = 1 and moves R to C; RCP sees
spare capacity C - 0 and grows R; Lestas's estimator drives N_hat down. After a
silent outage every sender would then restart at (nearly) C at once: a burst
that overflows the buffer and a long stall while the losses are repaired
(issue #16: 21-31 drops, a 6.9 s stall for a 3.1 s outage). An idle period
says nothing about how many flows will share the port next, so:

- **Idle** is a period with no arrivals while the advertised rate would have
  let a sender put at least ``min_idle_bytes`` (two frames) into the period.
  Below that rate, zero arrivals is what a few slow senders look like, and the
  algorithm runs as usual (it raises the rate: the safe direction there).
- **Entering idle** the controller falls back to the lowest rate it advertised
  in the last ``history`` busy periods: the last period before silence is
  usually half-empty, which makes every algorithm over-estimate the share.
  The rate then holds, with the algorithm's state, and the congestion flag is
  clear (y = 0 is not above 0.95 C).
- **Coming back**, for ``warmup_periods`` busy periods the rate may fall but not
  rise above the held one: returning senders start below their share (their
  start rate, a partly filled first period), which would otherwise look like
  few flows and send everyone to C at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Protocol

from .common import RateController, RateDecision
from .measure import PortMeasurement

IDLE_MIN_BYTES = 2500.0
"""Two 1250-byte frames: below rate x period of this, silence is not an outage."""


class ResettableRateController(RateController, Protocol):
    def reset_rate(self, rate_Bps: float) -> None: ...


class HoldWhenIdle:
    """Wraps a rate controller with the outage rule (see the module doc)."""

    def __init__(
        self,
        inner: ResettableRateController,
        *,
        min_idle_bytes: float = IDLE_MIN_BYTES,
        history: int = 3,
        warmup_periods: int = 4,
    ) -> None:
        self.inner = inner
        self.min_idle_bytes = min_idle_bytes
        self.warmup_periods = warmup_periods
        self.recent: deque[float] = deque(maxlen=max(1, history))
        self.held: float | None = None  # the rate held since the last outage
        self.idle = False
        self.warmup_left = 0

    @property
    def rate_Bps(self) -> float:
        return self.inner.rate_Bps

    def is_idle(self, m: PortMeasurement) -> bool:
        return m.arrival_pkts == 0 and self.inner.rate_Bps * m.period_s >= self.min_idle_bytes

    def update(self, m: PortMeasurement) -> RateDecision:
        if self.is_idle(m):
            if not self.idle:
                self.idle = True
                safe = min(self.recent, default=self.inner.rate_Bps)
                self.inner.reset_rate(min(safe, self.inner.rate_Bps))
                self.held = self.inner.rate_Bps
                self.recent.clear()
            self.warmup_left = self.warmup_periods
            return RateDecision(
                rate_Bps=self.inner.rate_Bps, congested=False, diagnostics={"idle": 1.0}
            )
        self.idle = False
        d = self.inner.update(m)
        if self.warmup_left > 0 and self.held is not None:
            self.warmup_left -= 1
            if d.rate_Bps > self.held:
                self.inner.reset_rate(self.held)
                d = replace(
                    d,
                    rate_Bps=self.inner.rate_Bps,
                    diagnostics={**d.diagnostics, "warmup_capped_Bps": d.rate_Bps},
                )
        self.recent.append(d.rate_Bps)
        return d
