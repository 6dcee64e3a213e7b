"""The simulator's copy of the BMv2 lab's parking-lot network (sim/fairgate_sim/labdata/,
read without importing the lab) is the network the lab builds."""

from __future__ import annotations

import pytest

pytest.importorskip("fairgate_topo.scenarios.parking_lot", reason="lab scenarios not importable")

from fairgate_sim import parking_lot
from fairgate_sim.topo import from_lab
from fairgate_topo.scenarios import parking_lot as pl


def test_parking_lot_labdata_is_the_labs_network() -> None:
    lab = pl.ParkingLot().topology(True)
    spec, ports = parking_lot.lab_spec()
    assert spec == from_lab(lab)
    assert ports == [(f"s{i}", lab.link(f"s{i}", f"s{i + 1}").a_port) for i in range(1, 5)]
    assert parking_lot.lab(True).duration_s == pl.ParkingLot().duration(True)
    assert parking_lot.LAB_LINK_DELAY_S == pl.LINK_DELAY_MS / 1000
    assert parking_lot.LAB_Q_REF_1500 == pl.Q_REF_1500
