"""One seeded random topology (issue 13) on BMv2: the experiment driver's BMv2 engine
runs it unchanged and every flow lands within 10 % of max-min, as in the simulator.

Seed 22: a tree of 4 switches, 3 flows crossing 2-3 switch links of 101 pkt/s both ways
(``symmetric_pps``: the controller's topology file has one capacity per link, and on a
packet-rate queue an ack costs a packet, which the oracle counts). The simulator puts
every flow within 2 % of max-min here (``tests/unit/exp``); BMv2 on two cores loses a few
percent to stalls (see test_sim_crosscheck.py), so 10 % is the issue's tolerance.
Serialise with other BMv2 users: ``flock /tmp/fairgate-lab.lock .venv/bin/python -m pytest
tests/mininet/test_exp_random_bmv2.py -q``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "experiments") not in sys.path:
    sys.path.insert(0, str(ROOT / "experiments"))

SEED = 22
TOLERANCE = 0.10


@pytest.mark.parametrize("algo", ["qfcp", "lestas"])
def test_random_topology_on_bmv2_within_maxmin(algo: str, tmp_path: Path) -> None:
    from fairgate_exp.check import check
    from fairgate_exp.driver import run_algo
    from fairgate_exp.engines.bmv2 import Bmv2Engine
    from fairgate_exp.load import validate
    from fairgate_exp.plan import build_plan
    from fairgate_exp.randtopo import random_experiment

    doc = random_experiment(SEED, [algo], symmetric_pps=True)
    exp = validate(doc, tmp_path / "random.toml")
    check(exp)
    plan = build_plan(exp, tmp_path / "random.toml", None)
    res = run_algo(plan, Bmv2Engine(), algo, tmp_path / algo, print)
    (verdict,) = res["verdicts"]
    assert verdict.metric == "maxmin"
    print(verdict.line(), verdict.detail)
    assert float(verdict.measured) <= TOLERANCE, verdict.detail
