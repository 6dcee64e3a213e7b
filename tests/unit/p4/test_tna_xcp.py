"""XCP's per-packet step as the TNA pipeline computes it (fairgate_p4.tna_xcp, the
model of p4src/tna/xcp.p4) against v1model's arithmetic (fairgate_p4.xcp_math,
bit-exact with p4src/include/xcp.p4) and against exact arithmetic, over the
full input range (docs/hardware.md "XCP per packet")."""

from __future__ import annotations

import random

import pytest

from fairgate_p4 import tna_xcp as tx
from fairgate_p4 import xcp_math as xm

U16 = 1 << 16
#: lg_xi values that cover both signs, the extremes and NONE.
XI_EDGES = (0, 1, 255, 256, 7935, 7936, 32767, -1, -255, -256, -257, -7936, -32767, xm.LG_NONE)


def test_generated_tables_are_fresh() -> None:
    assert tx.main(["--check"]) == 0, "run `python -m fairgate_p4.tna_xcp`"


def test_table_entries_are_v1models_values_and_within_the_bound_of_exact() -> None:
    """Every entry the control plane installs: the value xcp_math.pow2_term gives
    (so both targets stamp the same bytes), within 2^-16 relative + 0.5 byte of
    2^(e/256), never a key twice."""
    for positive in (True, False):
        entries = tx.table_entries(positive)
        assert len(entries) == 2 * 32 * xm.LG_ONE
        assert len({(s, k) for s, k, _v in entries}) == len(entries)
        for sign, key, value in entries:
            e = key - tx.KEY_BIAS - (sign << 16)
            term = value - (tx.SIGN if positive else 0)
            assert term == xm.pow2_term(e, 0), (sign, key)
            exact = 2.0 ** (e / xm.LG_ONE)
            assert exact < 2**31
            assert abs(term - exact) <= exact * 2.0**-16 + 0.5, (e, term, exact)
            assert key < 1 << tx.KEY_BITS


def test_saturation_gateway_on_the_high_bits_is_the_compare() -> None:
    for sign in (0, 1):
        assert tx.key_sat(sign) % 256 == 0
        for key in range(1 << tx.KEY_BITS):
            assert tx.saturates(key, sign) == (key >= tx.key_sat(sign))


def _term_matches_v1model(lg: int, xi: int) -> None:
    got = tx.term(xm.to_u16(lg), xm.to_u16(xi))
    assert got == xm.pow2_term(lg, xi), (lg, xi, got)


def test_term_equals_v1model_for_every_lg_on_edge_factors() -> None:
    """Every 16-bit lg (including NONE) against factors of both signs and the extremes."""
    for xi in XI_EDGES:
        for lg in range(xm.LG_NONE, xm.LG_MAX + 1):
            _term_matches_v1model(lg, xi)


def test_term_equals_v1model_for_every_factor_on_edge_terms() -> None:
    for lg in XI_EDGES:
        for xi in range(xm.LG_NONE, xm.LG_MAX + 1):
            _term_matches_v1model(lg, xi)


def test_term_equals_v1model_on_random_pairs() -> None:
    rnd = random.Random(21)
    for _ in range(300_000):
        _term_matches_v1model(
            rnd.randint(xm.LG_NONE, xm.LG_MAX), rnd.randint(xm.LG_NONE, xm.LG_MAX)
        )


def _v1model_stamp(feedback: int, lg_pos: int, lg_neg: int, xi_p: int, xi_n: int) -> int:
    fb = xm.switch_feedback(lg_pos, lg_neg, xi_p, xi_n)
    return xm.to_u32(xm.stamp(feedback, fb))


def test_stamp_equals_v1models_signed_min() -> None:
    """The biased unsigned compare (saturating subtract) is the signed min, for
    random packets and for every pair of extreme feedbacks."""
    rnd = random.Random(7)
    feedbacks = (0, 1, 0x7FFFFFFF, 0x80000000, 0x80000001, 0xFFFFFFFF, 0x7FFFFFFE)
    lgs = (xm.LG_NONE, -32767, -257, -256, 0, 7935, 7936, 32767)
    for feedback in feedbacks:
        for lg_pos in lgs:
            for lg_neg in lgs:
                args = (feedback, xm.to_u16(lg_pos), xm.to_u16(lg_neg), 0, 0)
                assert tx.stamp(*args) == _v1model_stamp(feedback, lg_pos, lg_neg, 0, 0), args
    for _ in range(200_000):
        feedback = rnd.choice((rnd.getrandbits(32), rnd.choice(feedbacks)))
        lg_pos, lg_neg, xi_p, xi_n = (rnd.randint(xm.LG_NONE, xm.LG_MAX) for _ in range(4))
        if rnd.random() < 0.5:  # keep many terms in the table's range
            lg_pos, lg_neg = rnd.randint(-3000, 8000), rnd.randint(-3000, 8000)
            xi_p, xi_n = rnd.randint(-2000, 2000), rnd.randint(-2000, 2000)
        got = tx.stamp(feedback, *(xm.to_u16(v) for v in (lg_pos, lg_neg, xi_p, xi_n)))
        assert got == _v1model_stamp(feedback, lg_pos, lg_neg, xi_p, xi_n)


def test_stamp_against_exact_arithmetic() -> None:
    """fb = 2^((lg_pos + xi_p)/256) - 2^((lg_neg + xi_n)/256) within the two terms'
    bound (docs/data-plane.md "XCP": 2^-16 relative + 0.5 byte each), as a signed min."""
    rnd = random.Random(3)
    for _ in range(100_000):
        lg_pos, lg_neg = rnd.randint(-3000, 7900), rnd.randint(-3000, 7900)
        exact = 2.0 ** (lg_pos / 256) - 2.0 ** (lg_neg / 256)
        bound = (2.0 ** (lg_pos / 256) + 2.0 ** (lg_neg / 256)) * 2.0**-16 + 1.0
        out = xm.from_u32(tx.stamp(0x7FFFFFFF, xm.to_u16(lg_pos), xm.to_u16(lg_neg), 0, 0))
        assert abs(out - exact) <= bound, (lg_pos, lg_neg, out, exact)


@pytest.mark.parametrize("lg_pos", [xm.LG_MIN, -1, 0, 1, xm.LG_MAX])
def test_ratio_key_equals_v1model_and_fits_the_range_match(lg_pos: int) -> None:
    for lg_neg in range(xm.LG_MIN, xm.LG_MAX + 1, 7):
        key = tx.ratio_key(xm.to_u16(lg_pos), xm.to_u16(lg_neg))
        assert key == xm.ratio_key(lg_pos, lg_neg)
        assert 0 < key < 1 << 20  # a Tofino range key of 5 nibbles
