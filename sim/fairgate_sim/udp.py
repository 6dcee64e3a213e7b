"""Host adapters for the sans-IO cores: ``SenderCore`` and ``ReceiverCore`` unchanged,
fed the simulated clock (integer microseconds) and the packets' real header bytes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, cast

from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import Finished, SenderConfig, SenderCore, Transmit
from fairgate_p4 import generated as g
from fairgate_sim.engine import Clock
from fairgate_sim.network import SimHost
from fairgate_sim.packet import UDP, UDP_OVERHEAD, Packet

_FG_PORT: Final = g.FG_UDP_PORT
#: a C static in the mypyc build (a builtin is looked up by name on every call)
_round: Final = round


@dataclass
class UdpReceiver:
    """A receiver agent on ``host`` (UDP port 7471), like ``fairgate_hosts.receiver``."""

    clock: Clock
    host: SimHost
    core: ReceiverCore = field(default_factory=ReceiverCore)
    port: int = g.FG_UDP_PORT

    def __post_init__(self) -> None:
        self.host.bind(self.on_packet, self.port)

    def on_packet(self, pkt: Packet) -> None:
        assert pkt.data is not None
        clock = self.clock
        now_s: float = clock.now  # a C double in the mypyc build (Clock.now is Any)
        now_us = _round(now_s * 1e6)  # clock.now_us(), inlined (per packet)
        for out in self.core.on_datagram(pkt.data, now_us, (pkt.src, pkt.sport)):
            ip, sport = cast(tuple[str, int], out.peer)  # the key on_datagram was given
            data = out.data
            ack = Packet(self.host.ip, ip, self.port, sport, len(data) + UDP_OVERHEAD, UDP, data)
            if out.at_us > now_us:
                clock.at(out.at_us * 1e-6, self.host.send, ack)
            else:
                self.host.send(ack)

    def packets_from(self, ip: str, sport: int) -> int:
        flow = self.core.flows.get((ip, sport))
        return flow.packets if flow is not None else 0


@dataclass
class UdpSender:
    """One flow of ``fairgate_hosts.sender``: its core polled at the times it asks for."""

    clock: Clock
    host: SimHost
    dst_ip: str
    cfg: SenderConfig
    flow_id: str = "flow"
    start_s: float = 0.0
    keep_log: bool = False
    core: SenderCore = field(init=False)
    sport: int = field(init=False)
    log: list[dict[str, Any]] = field(default_factory=list)
    _wake_us: int | None = None
    _token: int = 0

    def __post_init__(self) -> None:
        self.core = SenderCore(self.cfg, flow_id=self.flow_id)
        self.sport = self.host.bind(self.on_packet)
        self.clock.at(self.start_s, self._poll)

    @property
    def finished(self) -> bool:
        return self.core.finished

    def on_packet(self, pkt: Packet) -> None:
        assert pkt.data is not None
        now_s: float = self.clock.now
        self.core.on_datagram(pkt.data, _round(now_s * 1e6))
        self._poll()

    def _wake(self, token: int) -> None:
        if token == self._token:
            self._wake_us = None
            self._poll()
            self._drain_log()

    def _poll(self) -> None:
        core = self.core
        now_s: float = self.clock.now
        now = _round(now_s * 1e6)  # clock.now_us(), inlined (per packet)
        act = core.poll(now)  # not a bound method in a local: mypyc calls it natively
        if type(act) is Transmit:
            host = self.host
            src, dst, sport = host.ip, self.dst_ip, self.sport
            while type(act) is Transmit:
                data = act.data
                host.send(Packet(src, dst, sport, _FG_PORT, len(data) + UDP_OVERHEAD, UDP, data))
                act = core.poll(now)
        if type(act) is Finished:
            self._token += 1
            self.host.unbind(self.sport)
            self._drain_log()
            return
        until = act.until_us  # type: ignore[union-attr]
        if until is None:
            return
        if until <= now:
            until = now + 1
        if self._wake_us is not None and self._wake_us <= until:
            return
        self._token += 1
        self._wake_us = until
        self.clock.at(until * 1e-6, self._wake, self._token)

    def _drain_log(self) -> None:
        recs = self.core.drain_log()
        if self.keep_log:
            self.log.extend(recs)
