"""Cross-check: the packet-level simulator against BMv2 in Mininet on the same file.

``experiments/parking-lot.toml`` (Lestas Figs. 8-9: a long flow over four links and one
cross flow per link, lestas) runs unchanged through both engines of the experiment
runner, the simulator's and the BMv2 lab's, and each flow's mean rate over the file's
measurement window (after its warm-up) must agree within ``TOLERANCE``.

Tolerance 10 %: the simulator is deterministic and lands within about 1 % of max-min; on
BMv2 five switches, ten Python agents and the controller share two cores, so a flow
stalls now and then (docs/labs/parking-lot.md). 10 % is the budget of those stalls plus
the simulator's error; a model that got the shares wrong (e.g. the long flow at half of
link 3 instead of a third) would be off by far more.

Where BMv2, Mininet or root is missing the whole suite is skipped (conftest.py). Run it
serialised with other BMv2 users: ``flock /tmp/fairgate-lab.lock .venv/bin/python -m
pytest tests/mininet/test_sim_crosscheck.py -q``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TOLERANCE = 0.10
FILE = Path(__file__).resolve().parents[2] / "experiments" / "parking-lot.toml"


def window_rates(summary: dict[str, Any]) -> dict[str, float]:
    windows = summary["results"]["lestas"]["windows"]
    (window,) = windows.values()
    return {name: flow["mean_pps"] for name, flow in window["flows"].items()}


def test_parking_lot_rates_agree_between_bmv2_and_simulator(tmp_path: Path) -> None:
    from fairgate_exp.driver import run
    from fairgate_exp.engines.bmv2 import Bmv2Engine
    from fairgate_exp.engines.sim import SimEngine
    from fairgate_exp.load import load

    plan = load(FILE)
    _, bmv2 = run(plan, Bmv2Engine, "bmv2", tmp_path / "bmv2", ["lestas"], print)
    _, sim = run(load(FILE), SimEngine, "sim", tmp_path / "sim", ["lestas"], print)
    got, want = window_rates(bmv2), window_rates(sim)
    print(f"\nparking-lot window mean pps: bmv2 {got}\n                             sim  {want}")
    assert set(got) == set(want) and len(want) == 5
    for name, rate in want.items():
        assert got[name] == pytest.approx(rate, rel=TOLERANCE), (name, got, want)
