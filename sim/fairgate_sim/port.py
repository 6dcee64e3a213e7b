"""An output port: FIFO queue with a depth in packets (drop-tail), a service rate and
a link with propagation delay to the next node.

The queue is computed, not stepped: packet i leaves the queue (and goes through
egress) at ``e_i = max(arrival_i, e_(i-1) + s_(i-1))``, where ``s`` is its service
time: ``1 / rate_pps`` for a BMv2-style queue rate (packets, whatever their size),
or ``size / rate_Bps`` for a link. It reaches the next node at
``e_i + wire_i + delay``. Only that arrival is an event; egress processing runs
lazily, in order, for every packet whose ``e_i`` has passed, whenever the port is
touched (a send, a delivery, a counter read, a table write), so the switch's egress
rules see the table that was in force at ``e_i``. The hook is given ``e_i`` too. An
``eager`` port (a FICCRD switch's: its egress rules keep state across ports and
enqueue clones) also schedules egress at ``e_i``, so it runs in time order at ``e_i``.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from fairgate_sim.engine import NATIVE, Clock, push
from fairgate_sim.packet import Packet

if TYPE_CHECKING:  # typed for mypyc's native calls; imported at run time by those modules
    from fairgate_sim.network import SimHost
    from fairgate_sim.switch import SimSwitch

#: Final: a C static in the mypyc build (an import is looked up in the module dict per call)
_heappush: Final = heapq.heappush
_next: Final = next

EgressHook = Callable[[int, Packet, int, float], None]
Deliver = Callable[[Packet], None]


@dataclass(frozen=True)
class PortParams:
    """Service: exactly one of ``rate_pps`` (BMv2 queue rate) and ``rate_Bps`` (link)."""

    rate_Bps: float | None = None
    rate_pps: float | None = None
    depth: int = 64
    delay_s: float = 0.0

    def __post_init__(self) -> None:
        if (self.rate_Bps is None) == (self.rate_pps is None):
            raise ValueError("give exactly one of rate_Bps and rate_pps")
        rate = self.rate_Bps if self.rate_Bps is not None else self.rate_pps
        if not rate or rate <= 0:
            raise ValueError(f"port rate must be > 0, got {rate}")
        if self.depth < 1 or self.delay_s < 0:
            raise ValueError("depth >= 1 and delay_s >= 0 required")


@dataclass
class PortStats:
    sent: int = 0
    dropped: int = 0
    dropped_bytes: int = 0
    sent_bytes: int = 0
    max_queue: int = 0


@dataclass
class OutputPort:
    clock: Clock
    params: PortParams
    port: int = 0
    egress: EgressHook | None = None
    deliver: Deliver | None = None
    #: the switch whose egress this port is (``SimSwitch.add_port``): called directly,
    #: a native call in the mypyc build, where ``egress`` is a Python-level call
    switch: SimSwitch | None = None
    #: where packets land, when not ``deliver``: a switch's ingress port, or a host
    to_switch: SimSwitch | None = None
    to_port: int = -1
    to_host: SimHost | None = None
    eager: bool = False
    stats: PortStats = field(default_factory=PortStats)
    _pending: deque[tuple[float, Packet, int]] = field(default_factory=deque)
    _free_at: float = 0.0
    #: packets on their way to the next node: (arrival time, event seq, packet), in order
    #: (time and seq are Any: in the mypyc build a float or int there would be unboxed
    #: when read and boxed again, a new object, for the heap)
    _flight: deque[tuple[Any, Any, Packet]] = field(default_factory=deque)

    def __post_init__(self) -> None:
        self._arrive_cb = self._arrive  # one bound method, not one per packet
        self._land_cb = self._land

    def queue_len(self) -> int:
        """Packets waiting (not yet through egress) at the current time."""
        self.drain(self.clock.now)
        return len(self._pending)

    def send(self, pkt: Packet) -> bool:
        """Enqueue; False when the queue is full (drop-tail)."""
        # The packet path: every packet through every port comes here, so the clock's
        # heap is pushed directly (``Clock.push``, inlined) and egress is inlined.
        clock = self.clock
        now: float = clock.now  # a C double in the mypyc build (Clock.now is Any)
        q = self._pending
        if q and q[0][0] <= now:
            self.drain(now)
        depth = len(q)
        p = self.params
        if depth >= p.depth:
            self.stats.dropped += 1
            self.stats.dropped_bytes += pkt.size
            return False
        rate_pps = p.rate_pps
        if rate_pps is not None:
            service, wire = 1.0 / rate_pps, 0.0
        else:
            rate_Bps = p.rate_Bps  # narrowed: a C double division in the mypyc build
            assert rate_Bps is not None  # PortParams gives exactly one of the two
            service = wire = pkt.size / rate_Bps
        free = self._free_at
        start = free if free > now else now
        self._free_at = start + service
        # The arrival at the next node: an event of its own (time, seq) as ever, but the
        # clock's heap holds only the first of a port's packets in flight (they arrive in
        # the order they were sent), the others wait in ``_flight``: the same events in the
        # same order from a heap of a few hundred entries instead of every packet queued
        # or on a wire (tens of thousands in the paper parking lot).
        arrive: Any = now + (start + wire + p.delay_s - now)  # boxed once, for both tuples
        seq: Any = _next(clock.seq)  # boxed once, for both tuples
        clock.events += 1
        flight = self._flight
        if not flight:
            if NATIVE:  # the compiled heap (engine.NATIVE)
                push(clock.queue, (arrive, seq, self._land_cb, ()))
            else:
                _heappush(clock.queue, (arrive, seq, self._land_cb, ()))
            flight.append((arrive, seq, pkt))
        elif arrive >= flight[-1][0]:
            flight.append((arrive, seq, pkt))
        else:  # never seen (service times keep arrivals in order): an event of its own
            _heappush(clock.queue, (arrive, seq, self._arrive_cb, (pkt,)))
        if start > now:
            q.append((start, pkt, depth))
            stats = self.stats
            if depth + 1 > stats.max_queue:
                stats.max_queue = depth + 1
            if self.eager:
                clock.at(start, self.drain, start)
        else:
            stats = self.stats
            stats.sent += 1
            stats.sent_bytes += pkt.size
            sw = self.switch
            if sw is not None:
                sw.egress(self.port, pkt, depth, now)
            elif self.egress is not None:
                self.egress(self.port, pkt, depth, now)
        return True

    def connect_switch(self, switch: SimSwitch, in_port: int) -> None:
        """Packets land on ``switch``, arriving on its port ``in_port``."""
        self.to_switch, self.to_port = switch, in_port

    def connect_host(self, host: SimHost) -> None:
        """Packets land on ``host``."""
        self.to_host = host

    def drain(self, now: float) -> None:
        """Run egress for every packet that has left the queue by ``now``."""
        q = self._pending
        stats, egress, port, sw = self.stats, self.egress, self.port, self.switch
        while q and q[0][0] <= now:
            t, pkt, depth = q.popleft()
            stats.sent += 1
            stats.sent_bytes += pkt.size
            if sw is not None:
                sw.egress(port, pkt, depth, t)
            elif egress is not None:
                egress(port, pkt, depth, t)

    def _land(self) -> None:
        """The first packet in flight arrives; the next one's event enters the heap."""
        flight = self._flight
        pkt = flight.popleft()[2]
        if flight:
            head = flight[0]
            if NATIVE:  # the compiled heap (engine.NATIVE)
                push(self.clock.queue, (head[0], head[1], self._land_cb, ()))
            else:
                _heappush(self.clock.queue, (head[0], head[1], self._land_cb, ()))
        self._arrive(pkt)

    def _arrive(self, pkt: Packet) -> None:
        q = self._pending
        if q:
            now: float = self.clock.now
            if q[0][0] <= now:
                self.drain(now)
        if pkt.dropped:
            return
        to_switch = self.to_switch
        if to_switch is not None:
            to_switch.receive(pkt, self.to_port)
            return
        to_host = self.to_host
        if to_host is not None:
            to_host.receive(pkt)
            return
        deliver = self.deliver
        if deliver is not None:
            deliver(pkt)
