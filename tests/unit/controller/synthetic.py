"""Synthetic completion-rate curves and a window-by-window driver for SessionController."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from fairgate_controller.algorithms import SessionController

Curve = Callable[[float], float]


def collapse(optimum: float, fall_to: float = 0.2, over: float = 2.0) -> Curve:
    """F(a) = a up to the optimum, then falling linearly to ``fall_to`` x optimum at
    a = ``over`` x optimum and flat beyond (congestion collapse, the shape of paper 000's
    Fig. 2; the defaults make a sharp peak, Table I's is shallower, see :func:`table1`)."""

    def f(a: float) -> float:
        if a <= optimum:
            return a
        slope = (1.0 - fall_to) / (over - 1.0)
        return optimum * max(1.0 - slope * (a / optimum - 1.0), fall_to)

    return f


def piecewise(pts: list[tuple[float, float]]) -> Curve:
    def f(a: float) -> float:
        for (x0, y0), (x1, y1) in itertools.pairwise(pts):
            if a <= x1:
                return y0 + (y1 - y0) * (a - x0) / (x1 - x0)
        return pts[-1][1]

    return f


def table1(scale: float = 1.0) -> Curve:
    """Piecewise-linear fit of paper 000's Table I (10 Mbit/s, 1000 flows/s offered): F = a up to
    100 flows/s, 102.6 at 150, 107 at 250, 44 at 1000 (all times ``scale``)."""
    base = piecewise([(0.0, 0.0), (100.0, 99.84), (150.0, 102.6), (250.0, 107.1), (1000.0, 43.9)])
    return lambda a: base(a / scale) * scale


def lab() -> Curve:
    """The lab-scale simulator's static gates (session-control.toml, admitted SYNs/s ->
    completed flows/s, from the controller's counters): past 25/s some admitted SYNs are
    retries of SYNs the queue behind the gate dropped, so F < a below the peak (75/s)."""
    pts = [(0.0, 0.0), (25.0, 24.9), (50.0, 46.8), (75.0, 48.5), (100.0, 46.3), (150.0, 36.5)]
    pts.append((655.0, 18.3))  # no gating: 655 SYNs/s admitted
    return piecewise(pts)


#: The lab-scale simulator's static gates over [90, 150) s (session-control.toml, runs
#: 20261127T183924Z-sim-file-62e59ff-dirty and a 55-70/s sweep of the same file): meter rate
#: (SYNs/s) -> (completed flows/s, connected flows/s); 655: no gating.
LAB_FLOWS = [
    (0.0, 0.0, 0.0),
    (25.0, 24.9, 24.9),
    (50.0, 44.2, 44.1),
    (55.0, 44.8, 44.6),
    (60.0, 46.4, 46.4),
    (65.0, 46.5, 47.7),
    (70.0, 46.6, 48.6),
    (75.0, 47.7, 52.1),
    (100.0, 44.6, 61.1),
    (150.0, 37.3, 79.8),
    (655.0, 24.6, 112.1),
]


def lab_flows() -> tuple[Curve, Curve]:
    """(completed, connected) flows/s against the meter rate on the lab-scale simulator:
    flows connect as fast as they complete up to 60/s; past it they pile up (connected >
    completed), while completions still rise to 75/s."""
    return (
        piecewise([(a, f) for a, f, _c in LAB_FLOWS]),
        piecewise([(a, c) for a, _f, c in LAB_FLOWS]),
    )


def flat(offered: float) -> Curve:
    """No overload: every admitted flow completes, F = min(a, offered)."""
    return lambda a: min(a, offered)


@dataclass
class Driver:
    """Feeds a controller windows drawn from ``curve`` at the rate it installs.

    The completion rate follows the installed rate with a first-order lag (``lag`` of the
    previous window's rate carries over) and Gaussian noise of ``noise`` x F per window.
    """

    controller: SessionController
    curve: Curve
    offered_fps: float
    window_s: float = 1.0
    noise: float = 0.05
    lag: float = 0.3
    seed: int = 1
    connected: Curve | None = None  # flows admitted into the network (Poisson), if measured
    settings: list[float | None] = field(default_factory=list)
    true_f: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._setting: float | None = None
        self._f = self.curve(self.offered_fps)

    def effective(self, setting: float | None) -> float:
        return self.offered_fps if setting is None else min(setting, self.offered_fps)

    def step(self) -> float | None:
        a = self.effective(self._setting)
        target = self.curve(a)
        self._f = self.lag * self._f + (1.0 - self.lag) * target
        w = self.window_s
        completions = max(0.0, self._rng.gauss(self._f * w, self.noise * self._f * w))
        connections = None
        if self.connected is not None:
            mean = self.connected(a) * w
            connections = max(0.0, self._rng.gauss(mean, mean**0.5))
        self._setting = self.controller.update(
            a * w, completions, w, self.offered_fps * w, connections
        )
        self.settings.append(self._setting)
        self.true_f.append(target)
        return self._setting

    def run(self, windows: int) -> float | None:
        for _ in range(windows):
            self.step()
        return self._setting
