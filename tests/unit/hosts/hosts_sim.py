"""Deterministic discrete-event link between a sender core and a receiver core."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field

from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import Finished, SenderCore, Transmit, Wait

Mangle = Callable[[bytes, int], bytes | None]


@dataclass
class Link:
    """Sender <-> receiver with a one-way delay; ``forward``/``backward`` may drop or
    rewrite packets (return None to drop). Times are integer microseconds."""

    sender: SenderCore
    receiver: ReceiverCore
    one_way_us: int = 5_000
    forward: Mangle = lambda data, now: data
    backward: Mangle = lambda data, now: data
    events: list[tuple[int, int, str, bytes]] = field(default_factory=list)
    sent: list[tuple[int, int, bool]] = field(default_factory=list)
    _n: int = 0

    def _push(self, at: int, kind: str, data: bytes) -> None:
        self._n += 1
        heapq.heappush(self.events, (at, self._n, kind, data))

    def run(self, until_us: int, start_us: int = 1_000_000) -> int:
        now = start_us
        while now <= until_us:
            act = self.sender.poll(now)
            if isinstance(act, Transmit):
                self.sent.append((now, act.seq, act.retransmission))
                out = self.forward(act.data, now)
                if out is not None:
                    self._push(now + self.one_way_us, "data", out)
                continue
            if isinstance(act, Finished):
                return now
            assert isinstance(act, Wait)
            nxt = act.until_us if act.until_us is not None else until_us + 1
            if self.events and self.events[0][0] <= nxt:
                at, _, kind, data = heapq.heappop(self.events)
                now = max(now, at)
                if kind == "data":
                    for a in self.receiver.on_datagram(data, now, ("10.0.0.1", 5000)):
                        back = self.backward(a.data, a.at_us)
                        if back is not None:
                            self._push(a.at_us + self.one_way_us, "ack", back)
                else:
                    self.sender.on_datagram(data, now)
            else:
                now = max(now + 1, nxt) if nxt <= now else nxt
        return now
