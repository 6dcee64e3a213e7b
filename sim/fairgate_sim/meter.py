"""BMv2's packets-mode meter as the SYN gate uses it (two-rate three-colour, RFC 2698).

A packet is red when the peak bucket (PIR, PBS) has no token, yellow when only the
committed bucket (CIR, CBS) is empty, green otherwise. Buckets start full and fill at
their rate; an unconfigured meter is green. The controller writes cir = pir, so the
admit rate is the PIR (docs/data-plane.md, SYN gating).
"""

from __future__ import annotations

from dataclasses import dataclass

from fairgate_p4 import generated as g


@dataclass
class PacketMeter:
    cir: float = 0.0
    cburst: int = 0
    pir: float = 0.0
    pburst: int = 0
    configured: bool = False
    _ptokens: float = 0.0
    _ctokens: float = 0.0
    _last: float = 0.0

    def configure(self, cir: float, cburst: int, pir: float, pburst: int, now: float) -> None:
        self.cir, self.cburst, self.pir, self.pburst = cir, cburst, pir, pburst
        self.configured = True
        self._ptokens, self._ctokens, self._last = float(pburst), float(cburst), now

    def reset(self) -> None:
        self.configured = False

    def execute(self, now: float) -> int:
        """Colour of one packet at ``now`` (consumes tokens when not red)."""
        if not self.configured:
            return g.FG_METER_GREEN
        dt = now - self._last
        self._last = now
        self._ptokens = min(float(self.pburst), self._ptokens + dt * self.pir)
        self._ctokens = min(float(self.cburst), self._ctokens + dt * self.cir)
        if self._ptokens < 1.0:
            return g.FG_METER_RED
        self._ptokens -= 1.0
        if self._ctokens < 1.0:
            return g.FG_METER_YELLOW
        self._ctokens -= 1.0
        return g.FG_METER_GREEN
