"""Session control's counts taken at the next switch: flows through a gated link
counted *after* its queue (``--session-completions downstream``).

The switch counts SYNs and FINs per egress port at ingress (``session_events``), before
the queue. A gated port s1:P whose link leads to s2:P' therefore sees every copy of a
client FIN that waits in, and may be dropped from, its congested queue; and the servers'
FINs and SYN-ACKs on the reverse path are retransmitted whenever the client's ACK of
them is dropped in that queue. At s2, the clients' SYNs and FINs that survived s1's
queue are counted under s2's ports towards the servers (every port but P'): a flow's
FIN there means it got all its packets through the bottleneck once, a SYN there that a
server got the handshake (its SYN-ACK returns on the uncongested path, so the client
does not retry it). No P4 change: s2 counts them already; only the agents must share
the counts, which they do through one ``SessionBoard`` (``app.build_agents`` and the
simulator's ``SimController`` make one for all the agents of a topology).

The board holds each switch's last-read cumulative ``session_events`` (the whole
counter, as read). A gated port's agent keeps the neighbour's totals it last used and
counts the difference at each of its own periods: summed over a measurement window the
differences telescope, so the neighbour's read being up to one period older shifts the
window's ends by that much and loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fairgate_controller.telemetry import Snapshot
from fairgate_controller.topology import Topology
from fairgate_p4 import generated as g

# A flow's SYN as the next switch counts it: passed its gate (if any) or ungated.
DOWNSTREAM_SYN_EVENTS = (g.FG_EVENT_SYN_ADMITTED, g.FG_EVENT_SYN_UNGATED)

Cells = dict[int, tuple[int, int]]


@dataclass(frozen=True)
class Downstream:
    """Where a gated port's flows are counted after its queue: the peer switch and
    the peer's ports towards the flows' destinations (all but the link's far end)."""

    switch: str
    ports: tuple[int, ...]


def downstream_of(topo: Topology, switch: str, port: int) -> Downstream | None:
    """The switch at the far end of `switch`:`port` and its other ports, or None when
    the port leads to a host (nothing counts the flows after the queue)."""
    spec = topo.ports[(switch, port)]
    peer = spec.peer_switch
    if peer is None:
        return None
    peer_port = int(spec.peer.split(":")[1])
    return Downstream(peer, tuple(p.port for p in topo.switch_ports(peer) if p.port != peer_port))


def totals(cells: Cells, ports: tuple[int, ...]) -> tuple[int, int]:
    """(FINs, SYNs) counted so far under `ports` in one switch's ``session_events``."""
    fins = syns = 0
    for p in ports:
        base = p << g.FG_SESSION_EVENT_BITS
        fins += cells.get(base | g.FG_EVENT_FIN, (0, 0))[0]
        for event in DOWNSTREAM_SYN_EVENTS:
            syns += cells.get(base | event, (0, 0))[0]
    return fins, syns


def step(before: tuple[int, int] | None, now: tuple[int, int]) -> tuple[int, int]:
    """The (FINs, SYNs) counted since `before`: (0, 0) for the first reading or when a
    total went backwards (the neighbour restarted and its counters with it)."""
    if before is None or now[0] < before[0] or now[1] < before[1]:
        return 0, 0
    return now[0] - before[0], now[1] - before[1]


@dataclass
class SessionBoard:
    """Each switch's last-read ``session_events`` cells, shared by the agents."""

    cells: dict[str, Cells] = field(default_factory=dict)

    def publish(self, switch: str, snap: Snapshot) -> None:
        self.cells[switch] = snap.get(g.COUNTER_SESSION_EVENTS, {})

    def totals(self, where: Downstream) -> tuple[int, int] | None:
        """(FINs, SYNs) so far at `where`, None before its switch was first read."""
        cells = self.cells.get(where.switch)
        return None if cells is None else totals(cells, where.ports)
