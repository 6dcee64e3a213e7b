"""Two-sided relative CUSUM: detects a lasting shift of a positive signal from its reference."""

from __future__ import annotations

from typing import Literal

from .common import check_positive


class RelativeCusum:
    """Page's CUSUM on the relative deviation x / reference - 1.

    The first sample after :meth:`reset` becomes the reference. Each later sample adds
    ``dev - drift`` to the upper sum and ``-dev - drift`` to the lower one (both floored at 0);
    an alarm is raised when either exceeds ``threshold``. A sudden 50 % change alarms at once
    (defaults 0.1 / 0.3); a 20 % one in about 3 samples; noise below ``drift`` never adds up.
    """

    def __init__(self, drift: float = 0.1, threshold: float = 0.3) -> None:
        self._drift = check_positive("drift", drift)
        self._threshold = check_positive("threshold", threshold)
        self._reference: float | None = None
        self._upper = 0.0
        self._lower = 0.0
        self._alarm: Literal["rise", "fall"] | None = None

    @property
    def alarm(self) -> Literal["rise", "fall"] | None:
        """Which way the signal moved if the last :meth:`update` since :meth:`reset`
        alarmed, else None."""
        return self._alarm

    @property
    def reference(self) -> float | None:
        return self._reference

    @property
    def statistic(self) -> float:
        """The larger of the two sums (alarm when > threshold)."""
        return max(self._upper, self._lower)

    def reset(self) -> None:
        """Forget the reference (and the last alarm); the next sample becomes the new one."""
        self._reference = None
        self._upper = 0.0
        self._lower = 0.0
        self._alarm = None

    def update(self, x: float, low: float = 1.0, high: float = 1.0) -> bool:
        """Feed one sample (>= 0); return True on alarm (the detector then resets itself).

        ``low`` <= 1 <= ``high`` widen the reference to a band, reference x [low, high]: the
        range the signal may move to without a change, e.g. after the caller moved what
        drives it. The lower sum measures the sample against reference x ``low``, the upper
        sum against reference x ``high``; the default band is the reference itself.
        """
        if not 0.0 < low <= 1.0 <= high:
            raise ValueError(f"need 0 < low <= 1 <= high, got low={low!r}, high={high!r}")
        self._alarm = None
        if self._reference is None:
            self._reference = x
            return False
        ref = max(self._reference, 1e-9)
        self._upper = max(0.0, self._upper + x / (ref * high) - 1.0 - self._drift)
        self._lower = max(0.0, self._lower + 1.0 - x / (ref * low) - self._drift)
        if self.statistic > self._threshold:
            alarm: Literal["rise", "fall"] = "fall" if self._lower > self._upper else "rise"
            self.reset()
            self._alarm = alarm
            return True
        return False
