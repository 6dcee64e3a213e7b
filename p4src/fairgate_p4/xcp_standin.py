"""Exact-arithmetic stand-in for ``fairgate_p4.xcp_math`` (same API), until the data
plane's bit-exact model lands: Q8.8 log2 fields, the factor encoding, the per-packet
feedback computed with exact powers of two and rounded to whole bytes."""

from __future__ import annotations

import math

Q = 256  # Q8.8: 8 fractional bits
LG_MIN, LG_MAX = -(1 << 15), (1 << 15) - 1  # a signed 16-bit field
FACTOR_ZERO = LG_MIN  # the encoding of a factor of 0 (2^-128 is below a byte)
FEEDBACK_MAX = (1 << 31) - 1  # 0x7fffffff: "no limit"
FEEDBACK_MIN = -(1 << 31)


def _lg(x: float) -> int:
    if not x > 0 or not math.isfinite(x):
        return LG_MIN
    return max(LG_MIN, min(LG_MAX, round(Q * math.log2(x))))


def encode_factor(xi: float) -> int:
    """Q8.8 log2 of a non-negative factor; 0 (or less, or NaN) encodes as FACTOR_ZERO."""
    return FACTOR_ZERO if not xi > 0 else _lg(xi)


def sender_terms(rtt_s: float, size_bytes: int, cwnd_bytes: int) -> tuple[int, int]:
    """(lg_pos, lg_neg) = Q8.8 log2 of (rtt^2 * s / cwnd, rtt * s)."""
    cwnd = max(1, cwnd_bytes)
    return _lg(rtt_s * rtt_s * size_bytes / cwnd), _lg(rtt_s * size_bytes)


def _term(lg: int, lg_xi: int) -> float:
    if lg_xi == FACTOR_ZERO or lg == LG_MIN:
        return 0.0
    return 2.0 ** ((lg + lg_xi) / Q)


def switch_feedback(lg_pos: int, lg_neg: int, lg_xi_p: int, lg_xi_n: int) -> int:
    """Bytes of window change for one packet: xi_p*rtt^2*s/cwnd - xi_n*rtt*s."""
    fb = _term(lg_pos, lg_xi_p) - _term(lg_neg, lg_xi_n)
    return max(FEEDBACK_MIN, min(FEEDBACK_MAX, math.floor(fb + 0.5)))


def stamp(feedback_in: int, fb: int) -> int:
    """H_feedback = min(H_feedback, fb)."""
    return min(feedback_in, fb)


# ---- the XCP header after the rate header (contract with the data plane) -------------------
import struct  # noqa: E402

from fairgate_p4 import generated as _g  # noqa: E402

KIND_XCP_DATA: int = getattr(_g, "FG_KIND_XCP_DATA", 7)
KIND_XCP_ACK: int = getattr(_g, "FG_KIND_XCP_ACK", 8)
XCP_HEADER = struct.Struct("!Iihh")  # cwnd_bytes, feedback, lg_pos, lg_neg (fg_xcp_t)
XCP_HEADER_BYTES: int = getattr(_g, "FG_XCP_HEADER_BYTES", XCP_HEADER.size)
