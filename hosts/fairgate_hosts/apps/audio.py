"""Layered audio over the CM: pick the best encoding the CM's rate allows (paper 001, 3).

The sender does not watch the network itself: it opens a CM flow, and on every
``change_rate`` callback switches to the highest layer not above the flow's rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field

LAYERS_KBPS: tuple[int, ...] = (10, 20, 40, 80, 160, 320)


def choose_layer(rate_Bps: float, layers_kbps: tuple[int, ...] = LAYERS_KBPS) -> int:
    """Highest layer (kbit/s) not above ``rate_Bps``; the lowest layer when none fits."""
    kbps = rate_Bps * 8 / 1000
    fitting = [layer for layer in sorted(layers_kbps) if layer <= kbps]
    return fitting[-1] if fitting else min(layers_kbps)


@dataclass
class LayeredAudio:
    """Holds the current layer; ``change_rate`` is the CM callback."""

    layers_kbps: tuple[int, ...] = LAYERS_KBPS
    layer_kbps: int = LAYERS_KBPS[0]
    history: list[tuple[float, int]] = field(default_factory=list)

    def change_rate(self, rate_Bps: float) -> None:
        self.layer_kbps = choose_layer(rate_Bps, self.layers_kbps)
        self.history.append((rate_Bps, self.layer_kbps))

    def frame_bytes(self, frame_ms: float = 20.0) -> int:
        """Bytes of one audio frame at the current layer."""
        return max(1, int(self.layer_kbps * frame_ms / 8))
