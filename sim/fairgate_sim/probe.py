"""The exact queue of chosen ports, sampled on the simulated clock (``measure.queue =
"exact"`` of an experiment file: the true queue where the switch reports a histogram)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fairgate_sim.network import Network


@dataclass
class QueueProbe:
    """The exact queue of some ports (packets waiting), sampled every ``every_s``."""

    net: Network
    ports: list[tuple[str, int]]
    every_s: float = 0.005
    samples: dict[tuple[str, int], list[tuple[float, int]]] = field(default_factory=dict)

    def start(self) -> None:
        for key in self.ports:
            self.samples[key] = []
        self.net.clock.after(self.every_s, self._sample)

    def _sample(self) -> None:
        now = self.net.clock.now
        for key, out in self.samples.items():
            out.append((now, self.net.switches[key[0]].ports[key[1]].queue_len()))
        self.net.clock.after(self.every_s, self._sample)

    def period_means(
        self, key: tuple[str, int], ends: list[float], periods: list[float]
    ) -> list[float]:
        """Mean queue over each period (t - period, t]."""
        samples = self.samples[key]
        out, i, n = [], 0, len(samples)
        for t, period in zip(ends, periods, strict=True):
            while i < n and samples[i][0] <= t - period:
                i += 1
            j, acc, cnt = i, 0, 0
            while j < n and samples[j][0] <= t:
                acc += samples[j][1]
                cnt += 1
                j += 1
            out.append(acc / cnt if cnt else 0.0)
        return out
