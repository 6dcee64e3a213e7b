"""Seeded random topologies (trees and graphs with cycles, uneven capacities both ways,
2-12 flows with staggered starts) in the simulator: every flow within 10 % of max-min,
for qfcp, lestas and rcp (RCP was 21-55 % off before its bounded step, issue 14).

XCP is held to 20 %: on graphs with several bottlenecks it leaves spare capacity at a link
whose flows are partly limited elsewhere (those flows cannot take their share of the link's
positive feedback, so its efficiency controller settles at phi ~ h > 0, i.e. S > 0: the
equilibrium Low, Andrew and Wydrowski describe for XCP, INFOCOM 2005). Measured: seed 1
10.8 %, seed 2 17.5 % (seed 1: s4's port 7 with 15 % of C unused, phi 1028 B ~ h 905 B);
the trees (5, 6) are within 10 %."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.check import check
from fairgate_exp.driver import run_algo
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import validate
from fairgate_exp.plan import build_plan
from fairgate_exp.randtopo import random_experiment

SEEDS = (1, 2, 5, 6)  # graphs with cycles (1, 2) and trees (5, 6)
TOLERANCE = 0.10
TOLERANCE_XCP_CYCLIC = 0.20
CYCLIC = (1, 2)


def run_seed(seed: int, algo: str, tmp_path: Path) -> tuple[float, dict[str, object]]:
    doc = random_experiment(seed, [algo])
    exp = validate(doc, tmp_path / "random.toml")
    check(exp)
    plan = build_plan(exp, tmp_path / "random.toml", None)
    res = run_algo(plan, SimEngine(), algo, tmp_path / algo, lambda _m: None)
    (verdict,) = res["verdicts"]
    assert verdict.metric == "maxmin"
    return float(verdict.measured), verdict.detail


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
@pytest.mark.parametrize("algo", ["qfcp", "lestas", "rcp", "xcp"])
def test_random_topology_maxmin(seed: int, algo: str, tmp_path: Path) -> None:
    worst, detail = run_seed(seed, algo, tmp_path)
    loose = algo == "xcp" and seed in CYCLIC
    assert worst <= (TOLERANCE_XCP_CYCLIC if loose else TOLERANCE), detail
