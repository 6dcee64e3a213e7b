"""Lab networks as data (JSON), for the simulator runs that need a BMv2 lab's exact
network (port numbers, queue rates, access delays) without importing the lab package;
``tests/unit/sim/test_labdata.py`` checks each file against the lab's own topology."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources
from typing import Any

from fairgate_controller.topology import HostSpec, PortSpec, SwitchSpec, Topology
from fairgate_sim.port import PortParams
from fairgate_sim.topo import FAST_BPS, UPLINK_DEPTH, NetSpec


def load(name: str) -> tuple[NetSpec, dict[str, Any]]:
    """``<name>.json`` as the simulator's network, the way ``topo.from_lab`` converts a
    lab (queue rates in packets/s where the lab sets them, every other port at BMv2's
    own speed), each host's access delay on its link both ways; and the raw document."""
    doc = json.loads(resources.files(__name__).joinpath(f"{name}.json").read_text())
    topo = Topology()
    for s in doc["switches"]:
        topo.switches[s["name"]] = SwitchSpec(**s)
    for h in doc["hosts"]:
        topo.hosts[h["name"]] = HostSpec(**h)
    for p in doc["ports"]:
        topo.ports[(p["switch"], p["port"])] = PortSpec(**p)
    queues = {(sw, port): (rate, depth) for sw, port, rate, depth in doc["queues"]}
    ports: dict[tuple[str, int], PortParams] = {}
    for key in topo.ports:
        rate, depth = queues.get(key, (None, None))
        ports[key] = (
            PortParams(rate_pps=rate, depth=depth or 64, delay_s=0.0)
            if rate is not None
            else PortParams(rate_Bps=FAST_BPS, depth=depth or 64, delay_s=0.0)
        )
    uplinks = {h: PortParams(rate_Bps=FAST_BPS, depth=UPLINK_DEPTH) for h in topo.hosts}
    spec = NetSpec(topo, ports, uplinks, doc["frame_bytes"])
    for host, ms in doc.get("host_delays_ms", {}).items():
        hs = topo.hosts[host]
        key = (hs.switch, hs.port)
        spec.ports[key] = replace(spec.ports[key], delay_s=ms / 1000)
        spec.uplinks[host] = replace(spec.uplinks[host], delay_s=ms / 1000)
    return spec, doc


def link_port(spec: NetSpec, a: str, b: str) -> int:
    """The port of switch ``a`` toward switch ``b``."""
    return next(
        port for (sw, port), p in spec.topo.ports.items() if sw == a and p.peer.startswith(f"{b}:")
    )
