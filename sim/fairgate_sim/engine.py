"""The event loop: a thin layer over SimPy's environment (callbacks, no generators).

Every simulated action is a callback scheduled at an absolute time; SimPy keeps the
heap and the clock. Times are seconds (float); the host cores want integer
microseconds, which ``now_us`` gives (rounded, so a timer set for ``t_us`` reads
``t_us`` when it fires).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import simpy
from simpy.events import Timeout

US = 1e-6


class Clock:
    """Simulated time and scheduling."""

    def __init__(self) -> None:
        self.env = simpy.Environment()
        self.events = 0

    @property
    def now(self) -> float:
        return self.env.now

    def now_us(self) -> int:
        return round(self.env.now * 1e6)

    def at(self, t: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at simulated time ``t`` (now if ``t`` is in the past)."""
        delay = t - self.env.now
        ev = Timeout(self.env, delay if delay > 0 else 0.0)
        ev.callbacks.append(lambda _ev: fn(*args))  # type: ignore[union-attr]
        self.events += 1

    def after(self, delay: float, fn: Callable[..., Any], *args: Any) -> None:
        self.at(self.env.now + delay, fn, *args)

    def run(self, until: float) -> None:
        self.env.run(until=until)
