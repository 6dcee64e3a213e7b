"""32-bit wire arithmetic shared by the cores (sequence numbers and timestamps wrap)."""

from __future__ import annotations

from typing import Final

from fairgate_p4 import generated as g

# Final: C statics in the simulator's compiled build (scripts/sim_ext.py)
U32: Final = 1 << 32
HALF: Final = 1 << 31
RATE_UNLIMITED: Final = g.FG_RATE_UNLIMITED
#: Bytes of Ethernet + IPv4 + UDP headers around the rate header; pacing counts frames.
FRAME_OVERHEAD: Final = 14 + 20 + 8


def u32(value: int) -> int:
    """Value modulo 2**32 (what a 32-bit header field carries)."""
    return value & (U32 - 1)


def diff32(a: int, b: int) -> int:
    """Signed distance a - b of two 32-bit wrapping values, in [-2**31, 2**31)."""
    d = (a - b) & (U32 - 1)
    return d - U32 if d >= HALF else d


def unwrap(wire: int, near: int) -> int:
    """The unbounded integer congruent to ``wire`` mod 2**32 closest to ``near``."""
    return near + diff32(wire, u32(near))
