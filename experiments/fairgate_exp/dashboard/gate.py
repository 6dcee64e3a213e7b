"""Pause, step one control period, and pace the simulator (sim seconds per wall second).

The simulator engine calls ``Gate.advance`` instead of running its clock straight to
``until``; the dashboard's control requests call ``Gate.control`` from another thread.
A step runs the simulation until the controller has written the next period's records for
a measured port (one control period of that port's switch), then stops there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Any, Protocol

STEP_SLICE_S = 0.001  # a step advances in 1 ms slices until the next period's records appear
RUN_SLICE_S = 0.02  # when running, the gate looks at pause/speed every 20 ms of sim time


class Clocked(Protocol):
    @property
    def clock(self) -> Any: ...

    def run(self, until: float) -> None: ...


class Gate:
    """Thread-safe run/pause/step state. ``speed`` is sim seconds per wall second; 0 means
    as fast as the machine allows."""

    def __init__(self, speed: float = 1.0, paused: bool = False) -> None:
        self._cv = threading.Condition()
        self.speed = speed
        self.paused = paused
        self.closed = False
        self._steps = 0
        self.periods = 0  # control periods of measured ports seen so far
        self.sim_t = 0.0
        self._seen = 0  # how far into the records list ``periods`` has counted
        self._last_t: float | None = None
        self._records: Sequence[dict[str, Any]] | None = None

    def state(self) -> dict[str, Any]:
        with self._cv:
            return {
                "paused": self.paused,
                "speed": self.speed,
                "periods": self.periods,
                "sim_t": round(self.sim_t, 4),
                "pending_steps": self._steps,
            }

    def control(self, action: str, speed: float | None = None) -> dict[str, Any]:
        """``pause``, ``resume`` (optionally at ``speed``), ``step``, ``speed`` or ``close``."""
        with self._cv:
            if speed is not None:
                if not speed >= 0:
                    raise ValueError(f"speed must be >= 0 (0 = as fast as possible), not {speed}")
                self.speed = speed
            if action == "pause":
                self.paused = True
            elif action == "resume":
                self.paused, self._steps = False, 0
            elif action == "step":
                self.paused = True
                self._steps += 1
            elif action == "close":
                self.closed, self.paused = True, False
            elif action != "speed":
                raise ValueError(f"unknown action {action!r} (pause, resume, step, speed)")
            self._cv.notify_all()
        return self.state()

    def wait_steps_done(self, timeout: float) -> bool:
        """Blocks until no step is pending (tests and the API's synchronous step)."""
        with self._cv:
            return self._cv.wait_for(lambda: self._steps == 0 or self.closed, timeout)

    def _count(self, records: Sequence[dict[str, Any]], measured: set[tuple[str, int]]) -> int:
        """Counts new periods: records of measured ports with a new time stamp."""
        if records is not self._records:  # a new algorithm: a new engine and list
            self._records, self._seen, self._last_t = records, 0, None
        for r in records[self._seen :]:
            if (r["switch"], r["port"]) in measured and r["t"] != self._last_t:
                self._last_t = r["t"]
                self.periods += 1
        self._seen = len(records)
        return self.periods

    def advance(
        self,
        net: Clocked,
        until: float,
        records: Sequence[dict[str, Any]],
        measured: Sequence[tuple[str, int]],
    ) -> None:
        keys = set(measured)
        while net.clock.now < until - 1e-12:
            with self._cv:
                self._cv.wait_for(lambda: not self.paused or self._steps > 0 or self.closed)
                stepping = self.paused and self._steps > 0 and not self.closed
                speed = 0.0 if self.closed else self.speed
            if stepping:
                before = self._count(records, keys)
                while net.clock.now < until - 1e-12:
                    net.run(min(until, net.clock.now + STEP_SLICE_S))
                    if self._count(records, keys) > before:
                        with self._cv:
                            self._steps -= 1
                            self.sim_t = net.clock.now
                            self._cv.notify_all()
                        break
                continue
            wall0, sim0 = time.perf_counter(), net.clock.now
            net.run(min(until, sim0 + (RUN_SLICE_S if speed > 0 else 0.25)))
            with self._cv:
                self._count(records, keys)
                self.sim_t = net.clock.now
            if speed > 0:
                lag = (net.clock.now - sim0) / speed - (time.perf_counter() - wall0)
                if lag > 0:
                    time.sleep(lag)
