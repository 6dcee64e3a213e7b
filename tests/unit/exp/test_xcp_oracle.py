"""XCP's equilibrium (fairgate_exp.xcp_oracle) against cases solved by hand."""

from __future__ import annotations

import math

import pytest

from fairgate_exp.oracle import fill
from fairgate_exp.xcp_oracle import ALPHA, GAMMA, fill_xcp, port_rate

A, B = ("s1", 1), ("s2", 1)


def test_one_link_is_max_min() -> None:
    cap = {A: 10.0}
    paths = {"a": (A,), "b": (A,), "c": (A,)}
    got = fill_xcp(cap, {A: 0.0}, paths)
    assert got == pytest.approx(fill(cap, paths, dict.fromkeys(paths, math.inf)), rel=1e-6)
    assert got["a"] == pytest.approx(10 / 3, rel=1e-6)


def test_a_flow_limited_elsewhere_leaves_spare_capacity() -> None:
    """b crosses A (10) and B (2), a only A. Max-min: b = 2, a = 8. XCP: A has N = 2,
    so a = r_A = ((a + 2) / 2) * 0.1 u / (0.1 u - 0.4 (10 - u)) with u = a + 2:
    0.45 u^2 - 5 u + 8 = 0, u = (5 + sqrt(10.6)) / 0.9 = 9.1731, a = 7.1731 (A at 91.7 %)."""
    cap = {A: 10.0, B: 2.0}
    got = fill_xcp(cap, {A: 0.0, B: 0.0}, {"a": (A,), "b": (A, B)})
    u = (5 + math.sqrt(10.6)) / 0.9
    assert got["b"] == pytest.approx(2.0, rel=1e-6)
    assert got["a"] == pytest.approx(u - 2, rel=1e-6)
    assert port_rate(10.0, got["a"] + got["b"], 0.0, 2) == pytest.approx(got["a"], rel=1e-6)


def test_utilisation_never_below_alpha_over_alpha_plus_gamma() -> None:
    """Low et al.'s lower bound: with h > 0, alpha S < gamma y, so y > 0.8 C; many flows
    limited elsewhere push a link towards it."""
    cap = {A: 10.0}
    paths = {"a": (A,)}
    for i in range(50):
        cap[("x", i)] = 0.001
        paths[f"e{i}"] = (A, ("x", i))
    got = fill_xcp(cap, dict.fromkeys(cap, 0.0), paths)
    y = sum(got[n] for n in paths)
    bound = 10.0 * ALPHA / (ALPHA + GAMMA)
    assert bound < y < bound * 1.03


def test_port_rate_edges() -> None:
    assert port_rate(10.0, 0.0, 0.0, 0) == math.inf
    assert port_rate(10.0, 1.0, 0.0, 1) == math.inf  # phi >= gamma y: no shuffling, no limit
    assert port_rate(10.0, 12.0, 0.0, 3) == pytest.approx(4.0)  # full: D / N
    # acks are load but not XCP data: they make y, not D
    assert port_rate(10.0, 8.0, 2.0, 2) == pytest.approx(4.0)
