"""Seeded random topologies (trees and graphs with cycles, uneven capacities both ways,
2-12 flows with staggered starts) in the simulator: every flow within 10 % of max-min,
for qfcp, lestas and rcp (RCP was 21-55 % off before its bounded step, issue 14).

XCP is within 10 % of its own equilibrium (``fairgate_exp.xcp_oracle``, the algorithm of
Low, Andrew and Wydrowski, INFOCOM 2005), which is max-min at a single link but not in a
network: a port whose flows are partly limited elsewhere settles with spare capacity,
because those flows get their share of its positive feedback and cannot use it. Where
that equilibrium is max-min (seeds 2, 5: within 1 %) XCP is also held to 10 % of max-min;
where it is not (seed 1: 10.4 % from max-min; seed 6: 6.9 %; seed 8: 27.5 %, f5 at 51.3
pkt/s instead of 70.8, measured 52.0), the flows it shortchanges must measure nearer to it
than to max-min (``python -m fairgate_exp.xcp_oracle SEED --run`` prints them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.check import check
from fairgate_exp.driver import run_algo
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import validate
from fairgate_exp.plan import Plan, build_plan
from fairgate_exp.randtopo import random_experiment
from fairgate_exp.xcp_oracle import xcp_equilibrium_pps

SEEDS = (1, 2, 5, 6)  # graphs with cycles (1, 2) and trees (5, 6)
XCP_SEEDS = (*SEEDS, 8)  # seed 8: XCP's equilibrium gives f5 27.5 % less than max-min
TOLERANCE = 0.10
SAME = 0.01  # XCP's equilibrium "is" max-min when no flow differs by more than this


def plan_of(seed: int, algo: str, tmp_path: Path) -> Plan:
    exp = validate(random_experiment(seed, [algo]), tmp_path / "random.toml")
    check(exp)
    return build_plan(exp, tmp_path / "random.toml", None)


def run_seed(seed: int, algo: str, tmp_path: Path) -> tuple[float, dict[str, object]]:
    plan = plan_of(seed, algo, tmp_path)
    res = run_algo(plan, SimEngine(), algo, tmp_path / algo, lambda _m: None)
    (verdict,) = res["verdicts"]
    assert verdict.metric == "maxmin"
    return float(verdict.measured), verdict.detail


def off(got: float, want: float) -> float:
    """The verdict's error: relative to the share, never to less than 1 pkt/s."""
    return abs(got - want) / max(want, 1.0)


def test_generator_shapes() -> None:
    docs = [random_experiment(s) for s in range(40)]
    sizes = {len(d["switches"]) for d in docs}
    assert min(sizes) >= 3 and max(sizes) <= 8 and len(sizes) >= 4
    flows = [len(d["flows"]) for d in docs]
    assert min(flows) >= 2 and max(flows) <= 12
    cyclic = [d for d in docs if len(d["links"]) >= len(d["switches"])]
    trees = [d for d in docs if len(d["links"]) == len(d["switches"]) - 1]
    assert cyclic and trees
    assert len({f["start"] for d in docs for f in d["flows"]}) > 5  # staggered
    assert random_experiment(7) == random_experiment(7)  # seeded


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("algo", ["qfcp", "lestas", "rcp"])
def test_random_topology_maxmin(seed: int, algo: str, tmp_path: Path) -> None:
    worst, detail = run_seed(seed, algo, tmp_path)
    assert worst <= TOLERANCE, detail


@pytest.mark.parametrize("seed", XCP_SEEDS)
def test_random_topology_xcp_reaches_its_equilibrium(seed: int, tmp_path: Path) -> None:
    eq = xcp_equilibrium_pps(plan_of(seed, "xcp", tmp_path))
    worst, detail = run_seed(seed, "xcp", tmp_path)
    flows: dict[str, dict[str, float]] = detail["flows"]  # type: ignore[assignment]
    got = {n: f["measured_pps"] for n, f in flows.items()}
    maxmin = {n: f["maxmin_pps"] for n, f in flows.items()}
    assert max(off(got[n], eq[n]) for n in got) <= TOLERANCE, (eq, detail)
    if max(off(eq[n], maxmin[n]) for n in got) <= SAME:
        assert worst <= TOLERANCE, detail
    else:  # XCP's property, not noise: the shortchanged flows sit at XCP's equilibrium
        short = [n for n in got if eq[n] < (1 - 0.05) * maxmin[n]]
        assert short, (eq, maxmin)
        for n in short:
            assert abs(got[n] - eq[n]) < abs(got[n] - maxmin[n]), (n, eq[n], detail)
