"""Outage rule shared by every rate controller: a period with no arrivals holds the rate.

With nothing arriving, QFCP sees N = max(1, 0/R) = 1 and moves R to C; RCP sees
spare capacity C - 0 and grows R; Lestas's estimator drives N_hat down. After a
silent outage every sender would then restart at (nearly) C at once: a burst
that overflows the buffer and a long stall while the losses are repaired
(issue #16: 21-31 drops, a 6.9 s stall for a 3.1 s outage). An idle period
says nothing about how many flows will share the port next, so the controller
keeps what it knew: the rate, and the algorithm's state, stay as they were,
and the congestion flag is cleared (y = 0 is not above 0.95 C).
"""

from __future__ import annotations

from .common import RateController, RateDecision
from .measure import PortMeasurement


class HoldWhenIdle:
    """Wraps a rate controller: periods with no arrivals leave it untouched."""

    def __init__(self, inner: RateController) -> None:
        self.inner = inner

    @property
    def rate_Bps(self) -> float:
        return self.inner.rate_Bps

    def update(self, m: PortMeasurement) -> RateDecision:
        if m.arrival_pkts > 0:
            return self.inner.update(m)
        return RateDecision(
            rate_Bps=self.inner.rate_Bps, congested=False, diagnostics={"idle": 1.0}
        )
