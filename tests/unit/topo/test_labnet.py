"""The lab's topology model as the controller sees it (fairgate_topo.labnet)."""

from __future__ import annotations

from fairgate_controller.topology import parse
from fairgate_topo.labnet import LabTopology

ADDRESSES = {"s1": ("127.0.0.1:50001", 9090), "s2": ("127.0.0.1:50002", 9091)}


def test_a_gated_link_gates_its_a_end_only() -> None:
    """Gating the s1 -> s2 link puts admission on s1's port towards s2 only, in the
    model and in the topology file written for the controller (the file's rule)."""
    lab = LabTopology()
    for name in ("s1", "s2"):
        lab.add_switch(name)
    lab.add_host("client", "s1")
    lab.add_host("server", "s2")
    link = lab.add_link("s1", "s2", rate_pps=500, depth=64, admission=True)
    topo = lab.controller_topology(ADDRESSES)
    gated = {(p.switch, p.port) for p in topo.ports.values() if p.admission}
    assert gated == {("s1", link.a_port)}
    written = parse(lab.topology_json(ADDRESSES))
    assert {(p.switch, p.port) for p in written.ports.values() if p.admission} == gated
