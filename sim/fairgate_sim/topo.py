"""Network descriptions the simulator builds: the controller's ``Topology`` (routes,
capacities, admission) plus the service model of every output port.

``NetBuilder`` builds both from byte-rate links (paper scale); ``from_lab`` converts a
lab's ``LabTopology`` (BMv2 queue rates in packets/s on the data direction only, every
other port at BMv2's own speed), so a lab scenario runs on the same network.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fairgate_controller.topology import Topology, parse
from fairgate_sim.port import PortParams

DATA_FRAME_BYTES = 1242  # 1200 B UDP payload (rate header included) + 42 B headers
FAST_BPS = 100e6 / 8  # ports without a queue rate (lab: BMv2's own speed)
UPLINK_DEPTH = 10_000  # host NIC queues (the senders pace; never the bottleneck)


@dataclass
class NetSpec:
    """``ports[(switch, port)]`` and ``uplinks[host]`` (host -> its switch)."""

    topo: Topology
    ports: dict[tuple[str, int], PortParams]
    uplinks: dict[str, PortParams]
    frame_bytes: int = DATA_FRAME_BYTES


@dataclass
class NetBuilder:
    """Switches, hosts and links with automatic port numbers (1, 2, ... per switch)."""

    frame_bytes: int = DATA_FRAME_BYTES
    switches: list[str] = field(default_factory=list)
    _hosts: list[dict[str, Any]] = field(default_factory=list)
    _links: list[dict[str, Any]] = field(default_factory=list)
    _ports: dict[tuple[str, int], PortParams] = field(default_factory=dict)
    _uplinks: dict[str, PortParams] = field(default_factory=dict)
    _next: dict[str, int] = field(default_factory=dict)

    def add_switch(self, name: str) -> str:
        self.switches.append(name)
        self._next[name] = 1
        return name

    def _port(self, switch: str) -> int:
        port = self._next[switch]
        if port > 15:
            raise ValueError(f"{switch}: more than 15 ports")
        self._next[switch] = port + 1
        return port

    def add_host(
        self,
        name: str,
        switch: str,
        rate_Bps: float = FAST_BPS,
        delay_s: float = 0.0,
        depth: int = 64,
        admission: bool = False,
    ) -> int:
        """A host on ``switch``; the access link has ``rate_Bps`` and ``delay_s`` each way."""
        port = self._port(switch)
        idx = len(self._hosts) + 1
        self._hosts.append(
            {
                "name": name,
                "ip": f"10.{idx // 250}.{idx % 250}.1",
                "mac": f"00:00:00:00:{idx // 256:02x}:{idx % 256:02x}",
                "switch": switch,
                "port": port,
                "capacity_kbps": rate_Bps * 8 / 1000,
                "queue_depth": depth,
                "admission": admission,
            }
        )
        self._ports[(switch, port)] = PortParams(rate_Bps=rate_Bps, depth=depth, delay_s=delay_s)
        self._uplinks[name] = PortParams(rate_Bps=rate_Bps, depth=UPLINK_DEPTH, delay_s=delay_s)
        return port

    def add_link(
        self,
        a: str,
        b: str,
        rate_Bps: float,
        delay_s: float = 0.0,
        depth: int = 64,
        reverse_Bps: float | None = None,
        admission: bool = False,
    ) -> tuple[int, int]:
        """Link a <-> b; a -> b has ``rate_Bps`` and ``depth``; b -> a ``reverse_Bps``."""
        pa, pb = self._port(a), self._port(b)
        self._links.append(
            {
                "a": f"{a}:{pa}",
                "b": f"{b}:{pb}",
                "capacity_kbps": rate_Bps * 8 / 1000,
                "queue_depth": depth,
                "admission": admission,
            }
        )
        self._ports[(a, pa)] = PortParams(rate_Bps=rate_Bps, depth=depth, delay_s=delay_s)
        back = reverse_Bps if reverse_Bps is not None else rate_Bps
        self._ports[(b, pb)] = PortParams(rate_Bps=back, depth=depth, delay_s=delay_s)
        return pa, pb

    def build(self) -> NetSpec:
        doc = {
            "switches": [
                {
                    "name": s,
                    "grpc_addr": f"sim:{i + 1}",
                    "device_id": 0,
                    "mac": f"02:fa:00:00:00:{i + 1:02x}",
                }
                for i, s in enumerate(self.switches)
            ],
            "hosts": self._hosts,
            "links": self._links,
        }
        return NetSpec(parse(doc), dict(self._ports), dict(self._uplinks), self.frame_bytes)


def from_lab(lab: Any, delay_s: float = 0.0) -> NetSpec:
    """A BMv2 lab's ``LabTopology`` (topologies/) as the lab builds it: the controller's
    topology file and BMv2 queue rates (packets/s) where the lab sets them."""
    addresses = {name: (f"sim:{i}", 0) for i, name in enumerate(lab.switches)}
    topo = lab.controller_topology(addresses)
    queues = {(sw, port): (rate, depth) for sw, port, rate, depth in lab.queues()}
    ports: dict[tuple[str, int], PortParams] = {}
    for key in topo.ports:
        rate, depth = queues.get(key, (None, None))
        ports[key] = (
            PortParams(rate_pps=rate, depth=depth or 64, delay_s=delay_s)
            if rate is not None
            else PortParams(rate_Bps=FAST_BPS, depth=depth or 64, delay_s=delay_s)
        )
    uplinks = {h: PortParams(rate_Bps=FAST_BPS, depth=UPLINK_DEPTH) for h in topo.hosts}
    return NetSpec(topo, ports, uplinks, lab.frame_bytes)
