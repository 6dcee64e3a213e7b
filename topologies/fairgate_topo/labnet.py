"""A lab network: a topology description that builds a Mininet net of BMv2
switches and writes the controller's topology file from the same data.

``LabTopology`` is pure (no root, no Mininet): switches, hosts and links with
their egress queues in packets/s. ``LabNet`` (a context manager) builds it:
Mininet hosts and ``Bmv2Switch`` nodes, offloads off everywhere, each host with
a default route via its gateway address and a static ARP entry for the switch
MAC, BMv2 egress queue rate/depth set with Thrift (``switch_cli.set_queue``),
and ``topology.json`` written through ``fairgate_controller.topology``. A host
with ``delay_ms`` reaches its switch through a delay-line node (``delaynodes``:
no netem here). On exit (normal, error or Ctrl-C) it stops the delay lines by
PID, then calls ``net.stop()``, which stops every switch by its PID.

Queues are set in the **data direction** of a link only (``a`` -> ``b``): BMv2
queue rates count packets, so acks (as many packets as the data) would meet a
second bottleneck of the same packet rate on the way back. The controller's
capacity (``capacity_kbps``) is the queue rate times the data frame size.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from fairgate_controller.topology import HostSpec, PortSpec, SwitchSpec, Topology, parse
from fairgate_topo.delaynodes import DelayNodes

DATA_FRAME_BYTES = 1242  # 1200 B UDP payload (rate header included) + 42 B of headers
DEFAULT_DEPTH = 64  # BMv2's default egress queue depth (packets)
ACCESS_KBPS = 100_000  # capacity of unlimited ports (no BMv2 queue rate)


def pps_to_kbps(rate_pps: float, frame_bytes: int = DATA_FRAME_BYTES) -> float:
    return rate_pps * frame_bytes * 8 / 1000


@dataclass(frozen=True)
class LabHost:
    name: str
    index: int  # 1..254: address 10.0.<index>.1, gateway 10.0.<index>.254
    switch: str
    port: int
    rate_pps: int | None = None  # queue of the switch port towards the host
    depth: int | None = None
    admission: bool = False
    delay_ms: float | None = None  # one-way delay of the access link (a delay-line node)

    @property
    def ip(self) -> str:
        return f"10.0.{self.index}.1"

    @property
    def gateway(self) -> str:
        return f"10.0.{self.index}.254"

    @property
    def mac(self) -> str:
        return f"00:00:00:00:{self.index // 256:02x}:{self.index % 256:02x}"


@dataclass(frozen=True)
class LabLink:
    a: str
    a_port: int
    b: str
    b_port: int
    rate_pps: int | None = None  # egress queue of a:a_port (the data direction)
    depth: int | None = None
    admission: bool = False


@dataclass
class LabTopology:
    """Switches, hosts and links with automatic port numbers (1, 2, ... per switch)."""

    frame_bytes: int = DATA_FRAME_BYTES
    switches: list[str] = field(default_factory=list)
    hosts: dict[str, LabHost] = field(default_factory=dict)
    links: list[LabLink] = field(default_factory=list)
    _next_port: dict[str, int] = field(default_factory=dict)

    def switch_mac(self, switch: str) -> str:
        return f"02:fa:00:00:00:{self.switches.index(switch) + 1:02x}"

    def add_switch(self, name: str) -> str:
        if name in self.switches:
            raise ValueError(f"switch {name} added twice")
        self.switches.append(name)
        self._next_port[name] = 1
        return name

    def _port(self, switch: str) -> int:
        if switch not in self._next_port:
            raise ValueError(f"unknown switch {switch}")
        port = self._next_port[switch]
        if port > 15:
            raise ValueError(f"{switch}: more than 15 ports")
        self._next_port[switch] = port + 1
        return port

    def add_host(
        self,
        name: str,
        switch: str,
        rate_pps: int | None = None,
        depth: int | None = None,
        admission: bool = False,
        delay_ms: float | None = None,
    ) -> LabHost:
        """A host on `switch`; `rate_pps` limits the switch port towards it;
        `delay_ms` delays its access link (both ways) with a delay-line node."""
        host = LabHost(
            name,
            len(self.hosts) + 1,
            switch,
            self._port(switch),
            rate_pps,
            depth,
            admission,
            delay_ms,
        )
        self.hosts[name] = host
        return host

    def add_link(
        self,
        a: str,
        b: str,
        rate_pps: int | None = None,
        depth: int | None = None,
        admission: bool = False,
    ) -> LabLink:
        """A link whose a -> b direction has the egress queue `rate_pps`/`depth`."""
        link = LabLink(a, self._port(a), b, self._port(b), rate_pps, depth, admission)
        self.links.append(link)
        return link

    def link(self, a: str, b: str) -> LabLink:
        return next(x for x in self.links if x.a == a and x.b == b)

    def capacity_kbps(self, rate_pps: int | None) -> float:
        return ACCESS_KBPS if rate_pps is None else pps_to_kbps(rate_pps, self.frame_bytes)

    def queues(self) -> list[tuple[str, int, int | None, int | None]]:
        """(switch, port, rate_pps, depth) of every port with a queue setting."""
        out = [
            (h.switch, h.port, h.rate_pps, h.depth)
            for h in self.hosts.values()
            if h.rate_pps is not None or h.depth is not None
        ]
        out += [
            (x.a, x.a_port, x.rate_pps, x.depth)
            for x in self.links
            if x.rate_pps is not None or x.depth is not None
        ]
        return out

    def controller_topology(self, addresses: dict[str, tuple[str, int]]) -> Topology:
        """The controller's model; `addresses` maps switch -> (grpc_addr, thrift_port)."""
        topo = Topology()
        for name in self.switches:
            grpc_addr, thrift = addresses[name]
            topo.switches[name] = SwitchSpec(name, grpc_addr, 0, thrift, self.switch_mac(name))
        for h in self.hosts.values():
            topo.hosts[h.name] = HostSpec(h.name, h.ip, h.mac, h.switch, h.port)
            topo.ports[(h.switch, h.port)] = PortSpec(
                h.switch,
                h.port,
                h.name,
                self.capacity_kbps(h.rate_pps) * 1000 / 8,
                h.rate_pps,
                h.depth,
                h.admission,
            )
        for x in self.links:
            cap = self.capacity_kbps(x.rate_pps) * 1000 / 8
            for sw, port, peer in ((x.a, x.a_port, f"{x.b}:{x.b_port}"), (x.b, x.b_port, None)):
                topo.ports[(sw, port)] = PortSpec(
                    sw,
                    port,
                    peer or f"{x.a}:{x.a_port}",
                    cap,
                    x.rate_pps,
                    x.depth,
                    x.admission and peer is not None,  # the a end only, as the file's
                    queue_end=peer is not None,
                )
        return topo

    def topology_json(self, addresses: dict[str, tuple[str, int]]) -> dict[str, Any]:
        doc = self.controller_topology(addresses).to_json()
        parse(doc)  # the controller must accept what we write
        doc["comment"] = (
            "written by fairgate_topo; queue_rate_pps/queue_depth of a link are set on "
            "its 'a' end only (the data direction); capacity_kbps = queue rate x "
            f"{self.frame_bytes} B frames"
        )
        return doc


class LabNet:
    """Builds a LabTopology in Mininet with BMv2 switches; ``net.stop()`` on exit."""

    def __init__(
        self,
        topology: LabTopology,
        run_dir: Path,
        switch_bin: str | None = None,
        host_sysctls: dict[str, str] | None = None,
        switch_cls: type | None = None,
    ) -> None:
        self.topology = topology
        self.switch_cls = switch_cls  # a Bmv2Switch subclass (None: Bmv2Switch)
        self.run_dir = Path(run_dir)
        self.switch_bin = switch_bin or os.environ.get("SWITCH", "simple_switch_grpc")
        self.host_sysctls = dict(host_sysctls or {})
        self.net: Any = None
        self.topo_path = self.run_dir / "topology.json"
        self.delays = DelayNodes(self.run_dir)

    def __enter__(self) -> LabNet:
        try:
            self._build()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def host(self, name: str) -> Any:
        return self.net.get(name)

    def _build(self) -> None:
        from mininet.net import Mininet

        from fairgate_topo.bmv2 import Bmv2Switch, free_tcp_ports
        from fairgate_topo.switch_cli import set_queue

        self.run_dir.mkdir(parents=True, exist_ok=True)
        topo = self.topology
        self.net = Mininet(controller=None, build=False, autoSetMacs=False)
        addresses: dict[str, tuple[str, int]] = {}
        ports = iter(free_tcp_ports(2 * len(topo.switches)))  # all distinct
        for name in topo.switches:
            sw = self.net.addSwitch(
                name,
                cls=self.switch_cls or Bmv2Switch,
                device_id=0,
                grpc_port=next(ports),
                thrift_port=next(ports),
                log_dir=self.run_dir / "switches",
                sw_path=self.switch_bin,
            )
            addresses[name] = (sw.grpc_address, sw.thrift_port)
        for h in topo.hosts.values():
            node = self.net.addHost(h.name, ip=f"{h.ip}/24", mac=h.mac)
            if h.delay_ms is None:
                self.net.addLink(node, self.net.get(h.switch), port2=h.port)
            else:
                self.delays.add(self.net, node, self.net.get(h.switch), h.port, h.delay_ms)
        for x in topo.links:
            self.net.addLink(self.net.get(x.a), self.net.get(x.b), port1=x.a_port, port2=x.b_port)
        self.net.build()
        for h in topo.hosts.values():
            self._configure_host(h)
        self.net.start()
        self.delays.start()
        for sw, port, rate, depth in topo.queues():
            set_queue(addresses[sw][1], port, rate, depth)
        self.topo_path.write_text(json.dumps(topo.topology_json(addresses), indent=2) + "\n")

    def _configure_host(self, h: LabHost) -> None:
        node = self.net.get(h.name)
        intf = node.defaultIntf()
        node.cmd(f"ethtool -K {intf} tx off rx off tso off gso off gro off")
        node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
        node.cmd(f"ip route add default via {h.gateway}")
        node.setARP(h.gateway, self.topology.switch_mac(h.switch))
        for key, value in self.host_sysctls.items():
            node.cmd(f"sysctl -qw {shlex.quote(f'{key}={value}')}")

    def stop_delay_lines(self) -> dict[str, dict[str, Any]]:
        """Stops the delay lines (by PID); their exit counts per host."""
        return self.delays.stop()

    def stop(self) -> None:
        if self.net is not None:
            net, self.net = self.net, None
            try:
                self.delays.stop()
            finally:
                net.stop()
