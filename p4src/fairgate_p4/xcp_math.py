"""XCP's per-packet arithmetic as the switch does it (xcp.p4), bit-exact.

The single source for the PTF expectations, the simulator's switch and the
controller's histogram estimate. Per packet a switch needs

    H_feedback = min(H_feedback, xi_p * rtt^2 * s / cwnd - xi_n * rtt * s)

and can neither divide nor multiply two runtime values. So the sender
precomputes the logarithms of its two terms (``sender_terms``, signed Q8.8
log2), the controller writes the logarithms of the factors (``encode_factor``),
and the switch adds them and raises 2 to the sum: integer part = a shift, the
fraction = a 256-entry constant table of Q1.15 mantissas (``MANTISSAS``, written
into p4src/include/xcp_pow2.p4 by ``write_or_check``). docs/data-plane.md "XCP"
states the error bound, tests/unit/p4/test_xcp_math.py checks it.

``python -m fairgate_p4.xcp_math [--check]`` (re)writes the P4 table.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from fairgate_p4 import generated as g

LG_ONE = g.FG_XCP_LG_ONE
FRAC_BITS = g.FG_XCP_LG_FRAC_BITS
MANTISSA_BITS = g.FG_XCP_MANTISSA_BITS
#: "no such term", as a signed value (the 16-bit pattern FG_XCP_LG_NONE)
LG_NONE = g.FG_XCP_LG_NONE - (1 << 16)
LG_MIN = LG_NONE + 1
LG_MAX = (1 << 15) - 1
SATURATED = g.FG_XCP_FEEDBACK_UNLIMITED
SATURATE_EXP = g.FG_XCP_SATURATE_EXP
#: key of xcp_ratio_buckets = (lg_pos - lg_neg) + RATIO_KEY_BIAS (never negative)
RATIO_KEY_BIAS = 1 << 16

#: 2^(f/256) in Q1.15 for f = 0..255 (the switch's constant table)
MANTISSAS: tuple[int, ...] = tuple(
    round(2.0 ** (f / LG_ONE) * (1 << MANTISSA_BITS)) for f in range(LG_ONE)
)

POW2_P4 = Path(__file__).resolve().parent.parent / "include" / "xcp_pow2.p4"


def _lg(x: float) -> int:
    """Signed Q8.8 log2 of a positive number, rounded, clamped to the 16-bit range."""
    return max(LG_MIN, min(LG_MAX, round(math.log2(x) * LG_ONE)))


def to_u16(value: int) -> int:
    """A signed Q8.8 logarithm as the 16-bit field carries it."""
    return value & 0xFFFF


def from_u16(value: int) -> int:
    """A 16-bit field as a signed value."""
    value &= 0xFFFF
    return value - (1 << 16) if value & 0x8000 else value


def to_u32(value: int) -> int:
    """A signed feedback as the 32-bit field carries it (two's complement)."""
    return value & 0xFFFFFFFF


def from_u32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def sender_terms(rtt_s: float, size_bytes: float, cwnd_bytes: float) -> tuple[int, int]:
    """(lg_pos, lg_neg), signed: Q8.8 log2(rtt^2 s / cwnd) and log2(rtt s).

    ``rtt_s <= 0`` (unknown) gives (LG_NONE, LG_NONE); the sender then also
    sends rtt_us = 0 and the switch leaves the packet's feedback alone.
    ``size_bytes`` is the Ethernet frame without FCS (IPv4 total length + 14),
    the bytes the switch's counters count.
    """
    if size_bytes <= 0 or cwnd_bytes <= 0:
        raise ValueError(f"XCP terms need s > 0 and cwnd > 0, got s={size_bytes} cwnd={cwnd_bytes}")
    if rtt_s <= 0:
        return LG_NONE, LG_NONE
    return _lg(rtt_s * rtt_s * size_bytes / cwnd_bytes), _lg(rtt_s * size_bytes)


def encode_factor(xi: float | None) -> int:
    """Signed Q8.8 log2 of xi_p or xi_n; None or xi <= 0 -> LG_NONE (no such part)."""
    if xi is None or not xi > 0:  # also NaN
        return LG_NONE
    return LG_MAX if math.isinf(xi) else _lg(xi)


def pow2_term(lg_term: int, lg_xi: int) -> int:
    """round(2^((lg_term + lg_xi)/256)) bytes as the switch computes it, saturating.

    Either operand LG_NONE -> 0. Integer part i, fraction f of the sum:
    M = MANTISSAS[f]; i >= 31 -> SATURATED; i >= 15 -> M << (i - 15);
    -1 <= i < 15 -> (M + 2^(14-i)) >> (15 - i) (round half up); below -> 0.
    """
    if lg_term == LG_NONE or lg_xi == LG_NONE:
        return 0
    exp = lg_term + lg_xi
    whole = exp >> FRAC_BITS
    mantissa = MANTISSAS[exp & (LG_ONE - 1)]
    if whole >= SATURATE_EXP:
        return SATURATED
    if whole >= MANTISSA_BITS:
        return mantissa << (whole - MANTISSA_BITS)
    if whole >= -1:
        return (mantissa + (1 << (MANTISSA_BITS - 1 - whole))) >> (MANTISSA_BITS - whole)
    return 0


def switch_feedback(lg_pos: int, lg_neg: int, lg_xi_p: int, lg_xi_n: int) -> int:
    """The switch's fb = pos - neg (signed bytes); arguments signed (use from_u16 on fields)."""
    return pow2_term(lg_pos, lg_xi_p) - pow2_term(lg_neg, lg_xi_n)


def stamp(feedback_in: int, fb: int) -> int:
    """min-stamp, signed: the H_feedback leaving the switch (signed; to_u32 for the wire)."""
    return min(from_u32(feedback_in), fb)


# ---- the controller's histogram of log2(rtt/cwnd) ----


@dataclass(frozen=True)
class RatioBuckets:
    """Bucket geometry of xcp_ratio_hist: boundaries every ``width`` (Q8.8) from ``low``.

    Bucket 0 takes every key below low + width, bucket n-1 (the default action)
    everything from low + (n-1) width up; the controller installs buckets 0..n-2
    as range entries on the biased key (``entries``).
    """

    low: int = -34 * LG_ONE
    width: int = 96
    count: int = g.FG_XCP_HIST_BUCKETS

    def entries(self) -> list[tuple[int, int, int]]:
        """(bucket, key_lo, key_hi) range entries for buckets 0 .. count-2 (biased keys)."""
        out = []
        for b in range(self.count - 1):
            lo = 0 if b == 0 else self.low + b * self.width + RATIO_KEY_BIAS
            hi = self.low + (b + 1) * self.width + RATIO_KEY_BIAS - 1
            out.append((b, lo, hi))
        return out

    def bucket_of(self, lg_ratio: int) -> int:
        """The bucket the switch picks for log2(rtt/cwnd) = lg_ratio (Q8.8)."""
        b = (lg_ratio - self.low) // self.width
        return max(0, min(self.count - 1, b))

    def representative(self, bucket: int) -> float:
        """Mean of rtt/cwnd (s/byte) over the bucket's octaves, taken as uniform."""
        lo = (self.low + bucket * self.width) / LG_ONE
        hi = lo + self.width / LG_ONE
        return (2.0**hi - 2.0**lo) / ((hi - lo) * math.log(2.0))

    def relative_error_bound(self) -> float:
        """Largest |rep - v| / v for a value v = rtt/cwnd whose key fell in a bucket
        (buckets 1 .. n-2, or any bucket when v lies inside its octaves): the bucket's
        width, widened by the key's rounding (lg_pos, lg_neg each within 1/512 octave)."""
        w = self.width / LG_ONE
        slack = 1.0 / LG_ONE
        mean = (2.0**w - 1.0) / (w * math.log(2.0))  # rep relative to the bucket's low edge
        return max(mean * 2.0**slack - 1.0, 1.0 - mean / 2.0 ** (w + slack))


@dataclass(frozen=True)
class XcpSums:
    packets: int
    sum_s_bytes: int
    sum_rtt_s_over_cwnd: float


def estimate_sums(
    bytes_per_bucket: Sequence[int],
    packets_per_bucket: Sequence[int],
    buckets: RatioBuckets | None = None,
) -> XcpSums:
    """Sum of s_i (exact: byte counters) and of rtt_i s_i / cwnd_i (seconds) over an
    interval, from the deltas of one port's xcp_ratio_hist buckets."""
    geo = buckets or RatioBuckets()
    if len(bytes_per_bucket) != geo.count or len(packets_per_bucket) != geo.count:
        raise ValueError(
            f"xcp_ratio_hist has {geo.count} buckets per port, got "
            f"{len(bytes_per_bucket)} byte and {len(packets_per_bucket)} packet counts"
        )
    total = sum(bytes_per_bucket)
    ratio = sum(n * geo.representative(b) for b, n in enumerate(bytes_per_bucket) if n)
    return XcpSums(sum(packets_per_bucket), total, ratio)


def ratio_key(lg_pos: int, lg_neg: int) -> int:
    """The switch's xcp_ratio_buckets key: log2(rtt/cwnd) in Q8.8, biased."""
    return lg_pos - lg_neg + RATIO_KEY_BIAS


# ---- the P4 constant table ----


def render_pow2_p4() -> str:
    lines = [
        "/* DO NOT EDIT: generated by `python -m fairgate_p4.xcp_math` (make build).",
        " * 2^(f/256) in Q1.15 for the fraction f of an XCP exponent (xcp.p4).",
        " * Each line is XCP_POW2_ENTRY(f, mantissa); the includer defines the macro. */",
    ]
    lines += [f"XCP_POW2_ENTRY({f}, {m})" for f, m in enumerate(MANTISSAS)]
    return "\n".join(lines) + "\n"


def write_or_check(check: bool) -> int:
    text = render_pow2_p4()
    current = POW2_P4.read_text() if POW2_P4.exists() else ""
    if current == text:
        return 0
    if check:
        print(f"{POW2_P4} is stale: run `make build` or `python -m fairgate_p4.xcp_math`")
        return 1
    POW2_P4.write_text(text)
    print(f"wrote {POW2_P4}")
    return 0


# ---- error report (docs/data-plane.md "XCP" quotes its output) ----

#: documented bound of one term: |switch - exact| <= exact * TERM_REL + TERM_ABS (unsaturated)
TERM_REL = 2.0 ** (2 / (2 * LG_ONE)) * (1 + 2.0 ** -(MANTISSA_BITS + 1)) - 1
TERM_ABS = 0.5


def error_report(samples: int = 200_000, seed: int = 14) -> str:
    """Observed errors of the per-packet step against exact arithmetic."""
    import random

    rnd = random.Random(seed)
    worst_rel, worst_round = 0.0, 0.0
    for e in range(-2 * LG_ONE, SATURATE_EXP * LG_ONE):  # values from 1/4 B to 2^31 B
        exact = 2.0 ** (e / LG_ONE)
        err = abs(pow2_term(e, 0) - exact)
        if e >= MANTISSA_BITS * LG_ONE:  # shifted left: the mantissa's error only
            worst_rel = max(worst_rel, err / exact)
        else:  # shifted right: rounded to the byte
            worst_round = max(worst_round, err - exact * 2.0 ** -(MANTISSA_BITS + 1))
    worst_term, worst_abs, n = 0.0, 0.0, 0
    for _ in range(samples):
        rtt = math.exp(rnd.uniform(math.log(1e-5), math.log(10.0)))
        s = rnd.uniform(40, 9000)
        cwnd = math.exp(rnd.uniform(math.log(40), math.log(2**32 - 1)))
        target = math.exp(rnd.uniform(math.log(1e-3), math.log(2**30)))
        xi = target / (rtt * rtt * s / cwnd)
        lg_pos, _lg_neg = sender_terms(rtt, s, cwnd)
        got = pow2_term(lg_pos, encode_factor(xi))
        exact = xi * rtt * rtt * s / cwnd
        if exact >= 1e4:
            worst_term = max(worst_term, abs(got - exact) / exact)
        else:
            worst_abs = max(worst_abs, abs(got - exact) - exact * TERM_REL)
        n += 1
    geo = RatioBuckets()
    return "\n".join(
        [
            f"2^(e/256) by mantissa table + shift, every e from 1/4 B to 2^31 B: relative "
            f"error at most {worst_rel:.2e} from 2^15 B up (bound 2^-16 = {2.0**-16:.2e}), "
            f"below it at most {worst_round:.3f} B beyond that (bound 0.5 B)",
            f"one term xi*rtt^2*s/cwnd, {n} log-uniform samples (rtt 10 us..10 s, s 40..9000 B, "
            f"cwnd 40 B..4 GB): max relative error {100 * worst_term:.3f} % for terms >= 10^4 B "
            f"(bound {100 * TERM_REL:.3f} % + 0.5 B); below 10^4 B at most "
            f"{worst_abs:+.3f} B beyond the relative part",
            f"sum(rtt s/cwnd) from xcp_ratio_hist ({geo.count} buckets of {geo.width / LG_ONE} "
            f"octave from 2^{geo.low / LG_ONE:.0f} s/B): per packet within "
            f"{100 * geo.relative_error_bound():.1f} % inside the buckets' octaves",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="write p4src/include/xcp_pow2.p4")
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    parser.add_argument("--report", action="store_true", help="print the error report")
    args = parser.parse_args(argv)
    if args.report:
        print(error_report())
        return 0
    return write_or_check(args.check)


if __name__ == "__main__":
    sys.exit(main())
