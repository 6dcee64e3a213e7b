"""The TNA pipeline's FICCRD arithmetic (fairgate_p4.tna_math, the model of
what the switch computes) against the exact v1model arithmetic, with the error
bounds docs/hardware.md states."""

from __future__ import annotations

import random

import pytest

from fairgate_p4 import generated as g
from fairgate_p4 import tna_math as t

#: docs/hardware.md, "Design changes".
WINDOW_REL = 0.055
WINDOW_ABS = 2
ER_REL = 0.055
ER_ABS = 2
APR_REL = 0.00058
APR_ABS = 3


def _edges() -> list[int]:
    """Both ends of every log-table bucket: where quantisation errors peak."""
    return sorted({x for _v, _m, lo, hi in t.log_buckets(32) for x in (lo, hi - 1)})


def test_generated_tables_are_fresh() -> None:
    assert t.main(["--check"]) == 0, "run `python -m fairgate_p4.tna_math`"


@pytest.mark.parametrize("width", [16, 32])
def test_log_buckets_cover_every_input_once(width: int) -> None:
    buckets = sorted(t.log_buckets(width), key=lambda b: b[2])
    assert buckets[0][2] == 1
    assert buckets[-1][3] == 1 << width
    for (_v1, _m1, _lo1, hi1), (_v2, _m2, lo2, _hi2) in zip(buckets, buckets[1:], strict=False):
        assert hi1 == lo2
    for value, mask, lo, hi in buckets:
        # the ternary entry matches exactly [lo, hi)
        assert value & mask == value
        assert lo & mask == value and (hi - 1) & mask == value
        assert (hi - lo) == ((~mask) & ((1 << width) - 1)) + 1


def test_log_value_of_every_bucket_is_its_rounded_centre() -> None:
    for _value, _mask, lo, hi in t.log_buckets(32):
        assert t.log_q(lo) == t.log_q(hi - 1) == t.bucket_log(lo, hi)


def _check_window(er: int, rtt: int, shift: int) -> None:
    exact = t.window_exact(er, rtt, shift)
    tna = t.window_tna(er, rtt, shift)
    assert abs(tna - exact) <= WINDOW_REL * exact + WINDOW_ABS, (er, rtt, shift, exact, tna)


def test_window_error_bound_on_bucket_edges() -> None:
    edges = _edges()
    for shift in (0, 3, 7, 14):
        for er in edges[::3]:
            for rtt in edges[::9]:
                _check_window(er, rtt, shift)


def test_window_error_bound_random() -> None:
    rng = random.Random(21)
    for _ in range(100_000):
        er = rng.randrange(1, 1 << 32)
        rtt = rng.randrange(1, 1 << rng.randrange(1, 33))
        _check_window(er, rtt, rng.randrange(0, g.FG_TCP_MAX_WSCALE + 1))


def test_switch_window_key_equals_the_clamped_model() -> None:
    """The switch takes max(RTT, rtt_min) after the logs and folds the window
    scale in before the maxima: the same key as clamping first, exhaustively
    over bucket edges and randomly over the full 32-bit range."""
    rng = random.Random(7)
    edges = _edges()
    cases = [
        (rng.choice(edges), rng.choice(edges), rng.choice(edges), rng.randrange(15))
        for _ in range(50_000)
    ] + [
        (rng.randrange(1 << 32), rng.randrange(1 << 32), rng.randrange(1 << 32), rng.randrange(15))
        for _ in range(50_000)
    ]
    cases += [(0, 0, 0, 0), (1, 0, 0, 14), (5, 0, 1, 3), (7, 100, 0, 0)]
    for er, rtt, rtt_min, shift in cases:
        key = t.window_key_switch(er, rtt, rtt_min, shift)
        assert key == t.window_key(er, max(rtt, rtt_min), shift), (er, rtt, rtt_min, shift)
        # in the switch's unsigned 16-bit field, never below the exp table's
        # keys (above them its default, the largest window, applies)
        assert t.window_keys().start <= key < 1 << 16


def test_window_floor_and_ceiling() -> None:
    # far below the floor: 2920 >> shift (1 at shift 14), within the bound
    for shift in range(g.FG_TCP_MAX_WSCALE + 1):
        _check_window(1, 1, shift)
    assert t.window_tna(1, 1, 14) == 1
    # far above 16 bits: both give the largest window
    assert t.window_tna(1 << 31, 1 << 31, 0) == t.window_exact(1 << 31, 1 << 31, 0) == 0xFFFF


def _check_er(mapr: int, dpf: int) -> None:
    exact = min(t.er_exact(mapr, dpf), 0xFFFFFFFF)
    tna = t.er_tna(mapr * t.MAPR_SAMPLES, dpf)
    assert abs(tna - exact) <= ER_REL * exact + ER_ABS, (mapr, dpf, exact, tna)


def test_er_error_bound() -> None:
    edges = [e for e in _edges() if e <= t.APR_MAX]
    for dpf in list(range(1, 64)) + list(range(64, 1 << 16, 97)):
        for mapr in edges[::5]:
            _check_er(mapr, dpf)


def test_er_error_bound_random() -> None:
    rng = random.Random(4)
    for _ in range(100_000):
        _check_er(rng.randrange(1, t.APR_MAX + 1), rng.randrange(1, 1 << 16))


def test_apr_within_bound() -> None:
    # exhaustive below 2^20 bytes per window (125 Mbit/s), then a stride to 2^32
    for b in list(range(1 << 20)) + list(range(1 << 20, 1 << 32, 4093 * 1021)):
        exact = t.apr_exact(b)
        tna = t.apr_tna(b)
        assert abs(exact - tna) <= APR_REL * exact + APR_ABS, (b, exact, tna)
