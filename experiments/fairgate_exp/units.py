"""Quantities with explicit units, as experiment files write them.

Rates: ``"8Mbit/s"``, ``"500kbit/s"``, ``"1Gbit/s"``, ``"12000bit/s"``, ``"2MB/s"`` (bytes) or
``"500pkt/s"`` (packets, BMv2's queue unit). Times: ``"10ms"``, ``"2s"``, ``"250us"``.
Sizes: ``"64pkt"`` (buffers), ``"1242B"``, ``"10kB"``. A bare number is refused: the unit is
part of the value. Every parser raises ``ValueError`` with a one-line message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

_NUM = r"([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)"
_Q = re.compile(rf"^\s*{_NUM}\s*([A-Za-z/]+)\s*$")

_BIT_RATES = {"bit/s": 1.0, "kbit/s": 1e3, "Mbit/s": 1e6, "Gbit/s": 1e9}
_BYTE_RATES = {"B/s": 8.0, "kB/s": 8e3, "MB/s": 8e6, "GB/s": 8e9}
_TIMES = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
_BYTES = {"B": 1, "kB": 1000, "MB": 1_000_000}


def _split(text: object, what: str, examples: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, str):
        raise ValueError(f"{what} needs a unit, e.g. {examples} (got {text!r})")
    m = _Q.match(text)
    if m is None:
        raise ValueError(f"{what} {text!r} is not <number><unit>, e.g. {examples}")
    return float(m.group(1)), m.group(2)


@dataclass(frozen=True)
class Rate:
    """A capacity or flow rate: bits/s or packets/s (never mixed silently)."""

    value: float
    unit: Literal["bit/s", "pkt/s"]

    def bps(self, frame_bytes: int) -> float:
        return self.value if self.unit == "bit/s" else self.value * frame_bytes * 8

    def pps(self, frame_bytes: int) -> float:
        return self.value if self.unit == "pkt/s" else self.value / (frame_bytes * 8)

    def scaled(self, factor: float) -> Rate:
        return Rate(self.value * factor, self.unit)

    def __str__(self) -> str:
        if self.unit == "pkt/s":
            return f"{self.value:g}pkt/s"
        for unit, mult in (("Gbit/s", 1e9), ("Mbit/s", 1e6), ("kbit/s", 1e3)):
            if self.value >= mult:
                return f"{self.value / mult:g}{unit}"
        return f"{self.value:g}bit/s"


def parse_rate(text: object, what: str = "rate") -> Rate:
    examples = '"8Mbit/s" or "500pkt/s"'
    value, unit = _split(text, what, examples)
    if unit == "pkt/s":
        rate = Rate(value, "pkt/s")
    elif unit in _BIT_RATES:
        rate = Rate(value * _BIT_RATES[unit], "bit/s")
    elif unit in _BYTE_RATES:
        rate = Rate(value * _BYTE_RATES[unit], "bit/s")
    else:
        units = ", ".join([*_BIT_RATES, *_BYTE_RATES, "pkt/s"])
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (use one of {units})")
    if not rate.value > 0:
        raise ValueError(f"{what} {text!r} must be > 0")
    return rate


def parse_time(text: object, what: str = "time", allow_zero: bool = True) -> float:
    """Seconds."""
    value, unit = _split(text, what, '"10ms" or "2s"')
    if unit not in _TIMES:
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (use s, ms or us)")
    secs = value * _TIMES[unit]
    if not allow_zero and secs <= 0:
        raise ValueError(f"{what} {text!r} must be > 0")
    return secs


def parse_packets(text: object, what: str = "buffer") -> int:
    value, unit = _split(text, what, '"64pkt"')
    if unit != "pkt":
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (buffers are in pkt)")
    if value != int(value) or value < 1:
        raise ValueError(f"{what} {text!r} must be a whole number of packets >= 1")
    return int(value)


def parse_bytes(text: object, what: str = "size") -> int:
    value, unit = _split(text, what, '"1242B" or "10kB"')
    if unit not in _BYTES:
        raise ValueError(f"{what} {text!r}: unknown unit {unit!r} (use B, kB or MB)")
    n = value * _BYTES[unit]
    if n != int(n) or n < 1:
        raise ValueError(f"{what} {text!r} must be a whole number of bytes >= 1")
    return int(n)


def fmt_time(secs: float) -> str:
    if secs == 0:
        return "0s"
    if secs >= 1 and secs == int(secs):
        return f"{secs:g}s"
    ms = secs * 1000
    return f"{round(ms, 6):g}ms"
