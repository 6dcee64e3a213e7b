"""Builds a simulated network from a ``NetSpec``: switches (routes from the
controller's own ``compute_routes``), hosts, and the output ports between them."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from fairgate_controller.routes import compute_routes
from fairgate_controller.telemetry import Buckets, queue_buckets, rtt_buckets
from fairgate_sim.engine import Clock
from fairgate_sim.packet import Packet
from fairgate_sim.port import OutputPort
from fairgate_sim.switch import SimSwitch
from fairgate_sim.topo import NetSpec

Handler = Callable[[Packet], None]


@dataclass
class SimHost:
    """A host: one NIC towards its switch; delivers packets by local (UDP/TCP) port.

    With ``jitter_s`` > 0 every packet the host sends reaches its NIC after a random delay,
    uniform in [0, jitter_s], in order (a packet never overtakes the one sent before it):
    the processing noise of a real host. A jitter-free model lets a drop-tail queue sort
    its drops by arrival phase: a sender whose packets arrive in a fixed phase with the
    port's departures (ack-clocked TCP, a paced rate) always or never finds the queue full
    (Floyd and Jacobson 1992, who remove the effect with random delays of up to one
    bottleneck service time). ``send`` then says only that the packet was handed on: a
    drop at the uplink, later, counts in the uplink's stats."""

    name: str
    ip: str
    uplink: OutputPort
    handlers: dict[int, Handler] = field(default_factory=dict)
    unhandled: int = 0
    _next_port: int = 40000
    jitter_s: float = 0.0
    rng: random.Random | None = None  # draws the jitter (jitter_s > 0)
    _tx_at: float = 0.0  # when the latest jittered packet reaches the NIC

    def __post_init__(self) -> None:
        if self.jitter_s < 0:
            raise ValueError(f"{self.name}: jitter_s must be >= 0, got {self.jitter_s}")
        if self.jitter_s > 0 and self.rng is None:
            raise ValueError(f"{self.name}: a jitter_s > 0 needs an rng")

    def send(self, pkt: Packet) -> bool:
        rng = self.rng
        if self.jitter_s <= 0 or rng is None:
            return self.uplink.send(pkt)
        clock = self.uplink.clock
        at = max(clock.now + rng.uniform(0.0, self.jitter_s), self._tx_at)
        self._tx_at = at
        clock.at(at, self.uplink.send, pkt)
        return True

    def bind(self, handler: Handler, port: int | None = None) -> int:
        if port is None:
            port = self._next_port
            self._next_port += 1
        if port in self.handlers:
            raise ValueError(f"{self.name}: port {port} already bound")
        self.handlers[port] = handler
        return port

    def unbind(self, port: int) -> None:
        self.handlers.pop(port, None)

    def receive(self, pkt: Packet) -> None:
        handler = self.handlers.get(pkt.dport)
        if handler is None:
            self.unhandled += 1
            return
        handler(pkt)


@dataclass
class Network:
    spec: NetSpec
    clock: Clock = field(default_factory=Clock)
    qbuckets: Buckets | None = None
    rbuckets: Buckets | None = None
    host_jitter_s: float = 0.0  # every host's NIC jitter (``SimHost.jitter_s``)
    seed: int | str = 1  # seeds each host's jitter

    def __post_init__(self) -> None:
        topo = self.spec.topo
        depth = max((p.queue_depth or 64 for p in topo.ports.values()), default=64)
        qb = self.qbuckets or queue_buckets(depth)
        rb = self.rbuckets or rtt_buckets()
        self.switches = {s: SimSwitch(s, self.clock, qb, rb) for s in topo.switches}
        self.hosts: dict[str, SimHost] = {}
        self.by_ip: dict[str, SimHost] = {}
        for name, h in topo.hosts.items():
            sw = self.switches[h.switch]
            up = OutputPort(self.clock, self.spec.uplinks[name], 0)
            up.connect_switch(sw, h.port)
            rng = random.Random(f"{self.seed}-host-{name}") if self.host_jitter_s > 0 else None
            host = SimHost(name, h.ip, up, jitter_s=self.host_jitter_s, rng=rng)
            self.hosts[name] = host
            self.by_ip[h.ip] = host
        for (sw_name, port), pspec in topo.ports.items():
            sw = self.switches[sw_name]
            out = OutputPort(self.clock, self.spec.ports[(sw_name, port)], port)
            peer = pspec.peer_switch
            if peer is None:
                out.connect_host(self.hosts[pspec.peer])
            else:
                in_port = int(pspec.peer.split(":")[1])
                out.connect_switch(self.switches[peer], in_port)
            sw.add_port(out)
        for sw_name, routes in compute_routes(topo).items():
            self.switches[sw_name].routes = {r.prefix.split("/")[0]: r.port for r in routes}

    def ip(self, host: str) -> str:
        return self.hosts[host].ip

    def port_to(self, switch: str, peer: str) -> OutputPort:
        """The output port of ``switch`` towards ``peer`` (a host or a switch name)."""
        for (s, port), pspec in self.spec.topo.ports.items():
            if s == switch and (pspec.peer == peer or pspec.peer_switch == peer):
                return self.switches[s].ports[port]
        raise KeyError(f"{switch} has no port to {peer}")

    def run(self, until: float) -> None:
        self.clock.run(until)
