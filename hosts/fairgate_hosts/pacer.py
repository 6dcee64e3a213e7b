"""Absolute-deadline pacing (sans-IO).

The next deadline is the previous deadline plus the transmission time of the packet just
sent, not ``now`` plus it: late wake-ups then do not accumulate into a lower rate. If the
sender falls more than ``max_lag_us`` behind (it was descheduled for long), the schedule
restarts from ``now`` so that no large burst is released to catch up; a sender that is idle or
window-blocked calls :meth:`Pacer.hold` so that no credit accumulates meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

US_PER_S = 1_000_000


@dataclass(slots=True)
class Pacer:
    """Paces bytes at ``rate_Bps``; times are microseconds (floats keep sub-us precision)."""

    rate_Bps: float
    max_lag_us: float = 20_000.0
    _deadline: float | None = None
    _last_base: float | None = None
    _last_bytes: int = 0

    def __post_init__(self) -> None:
        if not self.rate_Bps > 0:
            raise ValueError(f"pacing rate must be > 0, got {self.rate_Bps}")

    def interval_us(self, nbytes: int) -> float:
        return nbytes * US_PER_S / self.rate_Bps

    def next_deadline(self, now_us: float) -> float:
        """Earliest time the next packet may leave (``now_us`` if it may leave now)."""
        if self._deadline is None or self._deadline < now_us - self.max_lag_us:
            return now_us
        return self._deadline

    def ready(self, now_us: float) -> bool:
        return self._deadline is None or now_us >= self._deadline

    def on_sent(self, nbytes: int, now_us: float) -> float:
        """Account a packet of ``nbytes`` sent at ``now_us``; returns the next deadline."""
        base = self._deadline
        if base is None or base < now_us - self.max_lag_us:
            base = now_us
        self._last_base, self._last_bytes = base, nbytes
        self._deadline = base + self.interval_us(nbytes)
        return self._deadline

    def set_rate(self, rate_Bps: float) -> None:
        """Change the rate; the pending deadline is recomputed from the last send's base."""
        if not rate_Bps > 0:
            raise ValueError(f"pacing rate must be > 0, got {rate_Bps}")
        self.rate_Bps = rate_Bps
        if self._last_base is not None:
            self._deadline = self._last_base + self.interval_us(self._last_bytes)

    def hold(self, now_us: float) -> None:
        """The sender has nothing it may send at ``now_us``: credit must not pile up.

        The schedule restarts at ``now_us`` as if a packet of no bytes had been sent
        then, so that a later :meth:`set_rate` (a QFCP sender applies the granted rate
        on every ack) recomputes the deadline from here and not from the last packet's
        base, which would hand back the credit piled up while the window was full: a
        window-bound sender then sent on every ack, unpaced (clumps of packets at the
        bottleneck's line rate, drops at a 1 Gbit/s port's 64-packet buffer)."""
        if self._deadline is not None and self._deadline < now_us:
            self._deadline = self._last_base = now_us
            self._last_bytes = 0

    def reset(self) -> None:
        """Forget the schedule (next packet may leave immediately)."""
        self._deadline = self._last_base = None
        self._last_bytes = 0
