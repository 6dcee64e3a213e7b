"""Seeded flow workload: Poisson arrivals, Pareto sizes with a given shape and mean, sans-IO.

Pareto (type I) with shape a > 1 and mean m has scale x_m = m (a - 1) / a; a size is
``x_m / U**(1/a)`` for U uniform in (0, 1]. Sizes are rounded up to whole bytes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class FlowSpec:
    index: int
    start_s: float
    size_bytes: int


@dataclass
class Workload:
    rate_per_s: float
    shape: float = 1.5
    mean_bytes: float = 10_000.0
    seed: int = 1
    max_bytes: int | None = None
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0 or not self.shape > 1 or not self.mean_bytes > 0:
            raise ValueError("need rate > 0, shape > 1 (finite mean) and mean > 0")
        self._rng = random.Random(self.seed)

    @property
    def scale_bytes(self) -> float:
        return self.mean_bytes * (self.shape - 1) / self.shape

    def size(self) -> int:
        u = 1.0 - self._rng.random()  # (0, 1]
        x = math.ceil(self.scale_bytes / u ** (1.0 / self.shape))
        return min(x, self.max_bytes) if self.max_bytes else x

    def flows(self, duration_s: float) -> Iterator[FlowSpec]:
        t, i = 0.0, 0
        while True:
            t += self._rng.expovariate(self.rate_per_s)
            if t >= duration_s:
                return
            yield FlowSpec(i, t, self.size())
            i += 1
