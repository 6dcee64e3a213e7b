"""Shortest-path IPv4 routes for every switch of a topology (pure).

Each switch gets one /32 route per host: out of the port on a shortest path
(fewest switch hops; ties broken by the lowest port number, so the result is
deterministic), rewriting the source MAC to the switch's and the destination
MAC to the next hop's (the host's on the last hop, the next switch's before).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from fairgate_controller.topology import Topology


@dataclass(frozen=True, order=True)
class Route:
    prefix: str
    port: int
    src_mac: str
    dst_mac: str


def _hops_to(neighbours: dict[str, list[tuple[int, str]]], target: str) -> dict[str, int]:
    """Switch-hop distance of every switch to `target` (BFS)."""
    dist = {target: 0}
    todo = deque([target])
    while todo:
        here = todo.popleft()
        for _port, nb in neighbours.get(here, ()):
            if nb not in dist:
                dist[nb] = dist[here] + 1
                todo.append(nb)
    return dist


def compute_routes(topo: Topology) -> dict[str, list[Route]]:
    # Each switch's neighbours and each host switch's distances are found once (a
    # ``Topology.neighbours`` call walks every port of the topology): the same
    # routes, without a walk per host and switch (the paper parking lot has 360 hosts,
    # and the simulator and every switch's agent compute them)
    neighbours = {name: topo.neighbours(name) for name in topo.switches}
    hops: dict[str, dict[str, int]] = {}
    routes: dict[str, list[Route]] = {name: [] for name in topo.switches}
    for host in topo.hosts.values():
        dist = hops.get(host.switch)
        if dist is None:
            dist = hops[host.switch] = _hops_to(neighbours, host.switch)
        for name, spec in topo.switches.items():
            if name not in dist:
                continue
            if name == host.switch:
                port, dst_mac = host.port, host.mac
            else:
                port, nb = min(
                    (p, nb) for p, nb in neighbours[name] if dist.get(nb) == dist[name] - 1
                )
                dst_mac = topo.switches[nb].mac
            routes[name].append(Route(f"{host.ip}/32", port, spec.mac, dst_mac))
    return {name: sorted(rs) for name, rs in routes.items()}
