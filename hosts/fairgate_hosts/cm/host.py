"""The Congestion Manager's host side, sans-IO: what a host running CM apps does with the
core's events, written once for the real host (``apps.cmhost.CMHost``, a selectors loop on
UDP sockets) and the simulator (``fairgate_sim.cmhost.SimCMHost``, simulated ports and time).

``CMHostCore`` owns the ``CongestionManager`` and the host's flows to one destination (one
macroflow). It builds the rate-header DATA packets a grant sends (a due probe rides on one:
``take_probe``), counts what was sent and reports it with ``notify`` after the events of a
batch are handled, sends probes of their own before grants, hands ``change_rate`` to the
app, and passes the acks' explicit rate (the rate field the switches min-stamp) to
``update``; probe responses to probes on data come back on the flow's socket with its acks.
Subclasses do the I/O: ``_send_data`` (one DATA packet of a flow) and ``_send_probe``;
``_app_of`` says which app a flow's events go to (default: the one app the loop runs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fairgate_hosts.cm.core import (
    AppNotify,
    ChangeRate,
    CMConfig,
    CongestionManager,
    Event,
    SendProbe,
)
from fairgate_hosts.wire import RATE_UNLIMITED, u32
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, HeaderError, RateHeader


class CMApp(Protocol):
    def on_grant(self, host: Any, flow: Any, nbytes: int, now_us: int) -> None: ...

    def on_rate(self, host: Any, flow: Any, rate_Bps: float, now_us: int) -> None: ...

    def on_timer(self, host: Any, now_us: int) -> None: ...


@dataclass
class CMFlow:
    """One CM flow of the host: its own UDP port (the receiver agent's name for it)."""

    fid: int
    weight: float
    seq: int = 0
    sent_bytes: int = 0  # application bytes (after the rate header)
    sent_packets: int = 0
    rate_Bps: float = 0.0
    explicit_kbps: int | None = None
    acks: int = 0
    sport: int = 0


@dataclass
class CMHostCore:
    dst: str  # the receiver agent's IP
    port: int = g.FG_UDP_PORT  # the receiver agent's UDP port
    cfg: CMConfig = field(default_factory=CMConfig)
    explicit: bool = True
    cm: CongestionManager = field(init=False)
    flows: dict[int, Any] = field(default_factory=dict)
    probes_sent: int = 0  # on their own or on data
    probes_on_data: int = 0
    send_errors: int = 0
    # Grants for flows that are not this host's (TCP/CM connections sharing the CM,
    # apps.audio --tcp-flows): handed over; the events of their notifies come back.
    foreign_grant: Callable[[int, int, int], list[Event]] | None = None
    _notify: list[tuple[int, int]] = field(default_factory=list)
    _in_handle: bool = False

    def __post_init__(self) -> None:
        self.cm = CongestionManager(self.cfg)

    # ------------------------------------------------------------------ I/O (subclasses)
    def _send_data(self, flow: Any, data: bytes) -> bool:
        """Send one DATA packet of ``flow``; False when it could not go (ENOBUFS)."""
        raise NotImplementedError

    def _send_probe(self, dst: str, data: bytes) -> bool:
        raise NotImplementedError

    def _app_of(self, fid: int, app: CMApp | None) -> CMApp | None:
        """The app that gets ``fid``'s grants and rate changes."""
        return app

    # ------------------------------------------------------------------ what apps call
    def data_packet(self, flow: Any, payload_bytes: int, now_us: int) -> bytes:
        """One DATA packet of ``flow``; a probe that is due rides on it (``take_probe``):
        flag ``FG_FLAG_PROBE``, the probe's number in ``ack``."""
        mf = self.cm.macroflows.get(self.dst)
        pending = sum(n for fid, n in self._notify if fid in self.flows)
        probe = self.cm.take_probe(self.dst, now_us, pending)
        hdr = RateHeader(
            kind=g.FG_KIND_DATA,
            flags=g.FG_FLAG_PROBE if probe is not None else 0,
            seq=u32(flow.seq),
            ack=u32(probe) if probe is not None else 0,
            ts_us=u32(now_us),
            rtt_us=u32(int(mf.aimd.srtt_us) if mf is not None else 0),
            rate_kbps=RATE_UNLIMITED,
        )
        if probe is not None:
            self.probes_sent += 1
            self.probes_on_data += 1
        return hdr.pack() + bytes(payload_bytes)

    def send(self, flow: Any, payload_bytes: int, now_us: int) -> int:
        """One DATA packet carrying ``payload_bytes`` after the header; returns bytes sent
        (0 when the host could not send it). ``notify`` follows with the batch."""
        if not self._send_data(flow, self.data_packet(flow, payload_bytes, now_us)):
            self.send_errors += 1
            return 0
        flow.seq += 1
        flow.sent_packets += 1
        flow.sent_bytes += payload_bytes
        self._notify.append((flow.fid, payload_bytes))
        return payload_bytes

    def stats(self) -> dict[str, object]:
        mf = self.cm.macroflows.get(self.dst)
        out: dict[str, object] = {
            "probes_sent": self.probes_sent,
            "probes_on_data": self.probes_on_data,
            "send_errors": self.send_errors,
        }
        tot = self.cm.probe_totals.get(self.dst)
        if tot is not None:  # what the answered probes covered: the CM's own losses
            out |= {"probed_bytes": tot.sent_bytes, "probe_lost_bytes": tot.lost_bytes}
        if mf is not None:
            a = mf.aimd
            out |= {"losses": a.losses, "timeouts": a.timeouts, "agings": a.agings}
            out["rate_kbps"] = round(mf.rate_Bps * 8 / 1000, 2)
        return out

    # ------------------------------------------------------------------ events
    def handle(self, events: list[Event], app: CMApp | None, now_us: int) -> None:
        """Carry out the core's events, then ``notify`` what the grants sent (whose events
        are carried out in turn)."""
        outer, self._in_handle = self._in_handle, True
        try:
            self._handle(list(events), app, now_us)
        finally:
            self._in_handle = outer

    def _handle(self, todo: list[Event], app: CMApp | None, now_us: int) -> None:
        while todo or self._notify:
            # Probes first: a probe's byte count was taken when the CM made it, before
            # the grants of the same batch were sent and notified. Sent after them, it
            # would trail bytes it does not count, and the receiver (which counts what
            # arrives before the probe) would make the next interval look lossy.
            todo.sort(key=lambda ev: not isinstance(ev, SendProbe))
            more: list[Event] = []
            for ev in todo:
                if isinstance(ev, AppNotify) and ev.flow not in self.flows and self.foreign_grant:
                    more += self.foreign_grant(ev.flow, ev.nbytes, now_us)
                elif isinstance(ev, AppNotify):
                    self._grant(ev, app, now_us)
                elif isinstance(ev, ChangeRate):
                    self._rate(ev, app, now_us)
                elif self._send_probe(ev.dst, ev.data):
                    self.probes_sent += 1
                else:
                    self.send_errors += 1
            todo = more
            pending, self._notify = self._notify, []
            for fid, n in pending:
                if fid in self.cm.flows:
                    todo.extend(self.cm.notify(fid, n, now_us))

    def _grant(self, ev: AppNotify, app: CMApp | None, now_us: int) -> None:
        target = self._app_of(ev.flow, app)
        if ev.flow in self.flows and target is not None:
            target.on_grant(self, self.flows[ev.flow], ev.nbytes, now_us)

    def _rate(self, ev: ChangeRate, app: CMApp | None, now_us: int) -> None:
        target = self._app_of(ev.flow, app)
        if ev.flow in self.flows and target is not None:
            self.flows[ev.flow].rate_Bps = ev.rate_Bps
            target.on_rate(self, self.flows[ev.flow], ev.rate_Bps, now_us)

    def on_ack(self, flow: Any, data: bytes, now_us: int) -> list[Event]:
        """An ack for ``flow``: with ``explicit``, a changed rate field goes to ``update``;
        a probe response (to a probe that rode on the flow's data) goes to the CM."""
        if len(data) < HEADER_BYTES:
            flow.acks += 1
            return []
        try:
            hdr = RateHeader.unpack(data)
        except HeaderError:
            flow.acks += 1
            return []
        if hdr.kind == g.FG_KIND_PROBE_ACK:
            return self.cm.on_probe_response(self.dst, data, now_us)
        flow.acks += 1
        if not self.explicit or hdr.kind != g.FG_KIND_ACK or hdr.rate_kbps == flow.explicit_kbps:
            return []
        flow.explicit_kbps = hdr.rate_kbps
        return self.cm.update(flow.fid, 0, False, None, now_us, explicit_rate_kbps=hdr.rate_kbps)
