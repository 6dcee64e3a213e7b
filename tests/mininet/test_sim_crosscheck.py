"""Cross-check: the packet-level simulator against BMv2 in Mininet on the same scenario.

The parking-lot smoke (Lestas Figs. 8-9, 4 links at 400/400/200/400 pkt/s, one long
flow and one cross flow per link, lestas, 9 s) runs once through ``fairgate_topo.lab``
on BMv2 and once through ``python -m fairgate_sim`` at lab scale, and each flow's
equilibrium rate (the summary's ``final_pps``: receiver-measured mean over the second
half of the run) must agree within ``TOLERANCE``.

Tolerance 10 %: the simulator is deterministic and lands within 1.5 % of max-min; on
BMv2 the same flows sit up to a few percent off (docs/labs/parking-lot.md: smoke 98.2 /
302 / 302 / 102 / 302) because five BMv2 switches, ten Python agents and the controller
share two cores, so a flow stalls now and then (the two-bottleneck lab loses 5-8 % to
such stalls). 10 % is the budget of those stalls plus the simulator's error; it is
still well inside the lab's own 15 % tolerance to max-min, and a model that got the
shares wrong (e.g. the long flow at C/2 of link 3 = 100 vs 200, or equal shares at
the other links) would be off by far more.

Where BMv2, Mininet or root is missing the whole suite is skipped (conftest.py). Run it
serialised with other BMv2 users: ``flock /tmp/fairgate-lab.lock .venv/bin/python -m
pytest tests/mininet/test_sim_crosscheck.py -q``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

TOLERANCE = 0.10


def test_parking_lot_rates_agree_between_bmv2_and_simulator(tmp_path: Path) -> None:
    from fairgate_sim.__main__ import main as sim_main
    from fairgate_topo import lab

    args = ["--exp", "parking-lot", "--algo", "lestas", "--smoke"]
    assert lab.main([*args, "--results", str(tmp_path / "bmv2"), "--run-id", "t"]) == 0
    bmv2 = json.loads((tmp_path / "bmv2" / "parking-lot" / "t" / "summary.json").read_text())
    assert sim_main([*args, "--out", str(tmp_path / "sim")]) == 0
    sim = json.loads((tmp_path / "sim" / "summary.json").read_text())
    got, want = bmv2["lestas"]["final_pps"], sim["lestas"]["final_pps"]
    print(f"\nparking-lot smoke final_pps: bmv2 {got}\n                             sim  {want}")
    assert set(got) == set(want)
    for name, rate in want.items():
        assert got[name] == pytest.approx(rate, rel=TOLERANCE), (name, got, want)
