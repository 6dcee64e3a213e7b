"""``capacity_changes``: a port's capacity changed at a time. The plan resolves it (port
label, scale factor, packets/s under ``packet_queues``), BMv2 gets the queue rate its
topology would have had for that capacity, and the simulator's port really serves the new
rate from then on (a short smoke run)."""

from __future__ import annotations

import csv
from pathlib import Path

from fairgate_exp.driver import run
from fairgate_exp.engines.bmv2 import queue_rate_pps
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

NET = """\
switches = ["s1", "s2"]
hosts = [{ name = "c", switch = "s1" }, { name = "srv", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "CAP", buffer = "64pkt" }]
capacity_changes = CHANGES
"""

SCALES = """
[scales.paper]
factor = 1.0

[scales.lab]
factor = 0.5
packet_queues = true
"""


def _file(tmp_path: Path, cap: str, changes: str, rest: str = "") -> Path:
    path = tmp_path / "cap.toml"
    path.write_text(NET.replace("CAP", cap).replace("CHANGES", changes) + rest)
    return path


def test_plan_resolves_port_scale_and_order(tmp_path: Path) -> None:
    changes = (
        '[{ at = "8s", port = "s1->s2", capacity = "line" },'
        ' { at = "3s", port = "s1->s2", capacity = "5Mbit/s" }]'
    )
    path = _file(tmp_path, "10Mbit/s", changes, '\n[experiment]\nduration = "10s"\n' + SCALES)
    file_plan = load(path, "paper")
    first, second = file_plan.capacity_changes
    assert (first.at_s, first.switch, first.label) == (3.0, "s1", "s1->s2")
    assert first.port == file_plan.port_by_label("s1->s2").port
    assert (first.bps, first.pps, first.capacity) == (5e6, None, "5Mbit/s")
    assert (second.at_s, second.bps, second.pps, second.capacity) == (8.0, None, None, "line rate")
    # the lab scale halves every capacity and serves bit/s as packets/s of the data frame
    lab = load(path, "lab")
    frame = lab.frame
    change = lab.capacity_changes[0]
    assert change.bps is None and change.pps == round(2.5e6 / (8 * frame))
    assert change.pps < lab.port_by_label("s1->s2").pps  # halved, as the link's 5 Mbit/s


def test_bmv2_queue_rate_is_the_topology_rounding(tmp_path: Path) -> None:
    path = _file(tmp_path, "10Mbit/s", "[]")
    plan = load(path)
    doc = plan.topology_doc(pps_only=True)
    (link,) = doc["links"]
    port = plan.port_by_label("s1->s2")
    assert queue_rate_pps(port.pps, port.bps, plan.frame) == link["queue_rate_pps"]
    assert queue_rate_pps(None, 5e6, plan.frame) == round(5e6 / (8 * plan.frame))
    assert queue_rate_pps(123.4, None, plan.frame) == 123
    assert queue_rate_pps(None, None, plan.frame) == 0  # line rate: BMv2's "unlimited"


def test_sim_port_serves_the_new_capacity(tmp_path: Path) -> None:
    rest = """
[[tcp]]
name = "bulk"
src = "c"
dst = "srv"
size = "10MB"

[experiment]
duration = "8s"
warmup = "0s"
algorithms = ["none"]
"""
    changes = '[{ at = "4s", port = "s1->s2", capacity = "200pkt/s" }]'
    path = _file(tmp_path, "400pkt/s", changes, rest)
    said: list[str] = []
    run_dir, _ = run(load(path), SimEngine, "sim", tmp_path / "r", say=said.append)
    assert any("t=4 s: s1->s2 now serves 200pkt/s" in m for m in said), said
    rows = [r for r in csv.DictReader((run_dir / "ports.csv").open()) if r["port"] == "s1->s2"]

    def rate(lo: float, hi: float) -> float:
        sel = [r for r in rows if lo < float(r["t"]) <= hi]
        return sum(float(r["departure_pkts"]) for r in sel) / sum(float(r["period_s"]) for r in sel)

    # one bulk TCP flow keeps the bottleneck busy: 400 pkt/s before, 200 after the change
    assert 360 <= rate(2.0, 4.0) <= 410
    assert 180 <= rate(5.0, 8.0) <= 205
