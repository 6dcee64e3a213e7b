"""Sans-IO receiver: echoes the rate header into acks, answers CM probes, counts goodput.

:meth:`ReceiverCore.on_datagram` takes one datagram, the time and an opaque peer key (the
UDP source address in the agent) and returns :class:`SendAt` actions: "send these bytes to
this peer at time ``at_us``". With ``ack_delay_us`` > 0 acks are held that long, which
emulates propagation delay where the kernel has no netem.

Data -> ack: kind ACK, same flags (congestion flag echoed), seq, rtt and rate (as stamped by
the switches), ``ts_echo_us`` = the data's ``ts_us``, ``ts_us`` = receiver time, and ``ack`` =
cumulative next sequence expected.

XCP data -> XCP ack: as data -> ack, kind XCP_ACK, and the XCP header (H_cwnd, H_feedback as
the switches stamped it, the log2 terms) copied after the rate header.

Probe -> probe-ack (Congestion Manager, paper 001 Fig. 5): ``seq`` = this probe, ``ack`` = the
last probe answered before it, ``ts_echo_us`` = the probe's ``ts_us``, followed by 8 bytes
(network order) holding the data bytes received from that host since the last answered probe.

Run as ``python -m fairgate_hosts.receiver`` for the UDP agent.
"""

from __future__ import annotations

import struct
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any, Final

from fairgate_hosts.wire import u32, unwrap
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, XCP_HEADER_BYTES, HeaderError, RateHeader

PROBE_COUNT = struct.Struct("!Q")
# Final: C statics in the simulator's compiled build (scripts/sim_ext.py), not a
# module attribute lookup per packet
_KIND_DATA: Final = g.FG_KIND_DATA
_KIND_ACK: Final = g.FG_KIND_ACK
_KIND_XCP_DATA: Final = g.FG_KIND_XCP_DATA
_KIND_XCP_ACK: Final = g.FG_KIND_XCP_ACK
_KIND_PROBE: Final = g.FG_KIND_PROBE
_KIND_PROBE_ACK: Final = g.FG_KIND_PROBE_ACK
_CONGESTED: Final = g.FG_FLAG_CONGESTED
PROBE_ACK_BYTES = HEADER_BYTES + PROBE_COUNT.size


def peer_name(peer: Hashable) -> str:
    if isinstance(peer, tuple) and len(peer) >= 2:
        return f"{peer[0]}:{peer[1]}"
    return str(peer)


@dataclass(frozen=True, slots=True)
class SendAt:
    at_us: int
    data: bytes
    peer: Hashable

    def __init__(self, at_us: int, data: bytes, peer: Hashable) -> None:
        # Written out: a dataclass's generated __init__ is Python even in the simulator's
        # mypyc build (one SendAt per ack); object.__setattr__ as the generated one does.
        object.__setattr__(self, "at_us", at_us)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "peer", peer)


@dataclass(slots=True)
class FlowStats:
    """Per-peer-flow receive state and goodput accounting."""

    next_expected: int = 0
    above: set[int] = field(default_factory=set)
    first_us: int = 0
    last_us: int = 0
    packets: int = 0
    bytes: int = 0
    unique_bytes: int = 0
    duplicates: int = 0
    out_of_order: int = 0
    congested: int = 0

    def goodput_kbps(self) -> float:
        span = self.last_us - self.first_us
        return self.unique_bytes * 8000.0 / span if span > 0 else 0.0

    def record(self, peer: Hashable) -> dict[str, Any]:
        return {
            "peer": peer_name(peer),
            "packets": self.packets,
            "bytes": self.bytes,
            "unique_bytes": self.unique_bytes,
            "duplicates": self.duplicates,
            "out_of_order": self.out_of_order,
            "congested": self.congested,
            "next_expected": self.next_expected,
            "duration_us": self.last_us - self.first_us,
            "goodput_kbps": round(self.goodput_kbps(), 3),
        }


@dataclass(slots=True)
class _ProbeState:
    last_probe: int = 0
    nrecd: int = 0


@dataclass(slots=True)
class ReceiverStats:
    malformed: int = 0
    ignored: int = 0
    acks: int = 0
    probe_acks: int = 0
    expired_flows: int = 0
    dropped: int = 0


@dataclass(slots=True)
class ReceiverCore:
    """Receiver state for any number of peers.

    ``host_of`` maps a peer key to the host key used for CM probe accounting (default: the
    first element of a tuple address). A flow idle for ``flow_idle_us`` is forgotten, so a
    new flow from the same address starts afresh.

    ``stamp_kbps`` / ``stamp_congested`` emulate a switch in front of the receiver (for labs
    without one): data rates are min-stamped with ``stamp_kbps`` and the congestion flag is
    set before the header is echoed. Both may be changed at any time. ``drop_every`` = N > 0
    discards every N-th data packet before it is counted (deterministic loss, no netem needed).
    """

    ack_delay_us: int = 0
    drop_every: int = 0
    stamp_kbps: int | None = None
    stamp_congested: bool = False
    max_reorder: int = 1 << 20
    flow_idle_us: int = 5_000_000
    stats: ReceiverStats = field(default_factory=ReceiverStats)
    flows: dict[Hashable, FlowStats] = field(default_factory=dict)
    finished: list[dict[str, Any]] = field(default_factory=list)
    _probes: dict[Hashable, _ProbeState] = field(default_factory=dict)
    _data_seen: int = 0

    def __post_init__(self) -> None:
        if self.ack_delay_us < 0:
            raise ValueError("ack_delay_us must be >= 0")

    @staticmethod
    def host_of(peer: Hashable) -> Hashable:
        return peer[0] if isinstance(peer, tuple) and peer else peer

    def on_datagram(
        self, buf: bytes | bytearray | memoryview, now_us: int, peer: Hashable
    ) -> list[SendAt]:
        try:
            hdr = RateHeader.unpack(buf)
        except HeaderError:
            self.stats.malformed += 1
            return []
        xcp = hdr.kind == _KIND_XCP_DATA
        if xcp and len(buf) < HEADER_BYTES + XCP_HEADER_BYTES:
            self.stats.malformed += 1
            return []
        if hdr.kind == _KIND_DATA or xcp:
            self._data_seen += 1
            if self.drop_every > 0 and self._data_seen % self.drop_every == 0:
                self.stats.dropped += 1
                return []
            extra = bytes(buf[HEADER_BYTES : HEADER_BYTES + XCP_HEADER_BYTES]) if xcp else b""
            return [self._on_data(hdr, len(buf), now_us, peer, extra)]
        if hdr.kind == _KIND_PROBE:
            return [self._on_probe(hdr, now_us, peer)]
        self.stats.ignored += 1
        return []

    def expire(self, now_us: int) -> list[dict[str, Any]]:
        """Forget flows idle for ``flow_idle_us``; returns their final records."""
        gone = [p for p, f in self.flows.items() if now_us - f.last_us > self.flow_idle_us]
        out = []
        for peer in gone:
            rec = self.flows.pop(peer).record(peer)
            out.append(rec)
            self.finished.append(rec)
            self.stats.expired_flows += 1
        return out

    def _on_data(
        self, hdr: RateHeader, size: int, now_us: int, peer: Hashable, xcp: bytes = b""
    ) -> SendAt:
        flow = self.flows.get(peer)
        if flow is not None and now_us - flow.last_us > self.flow_idle_us:
            self.finished.append(self.flows.pop(peer).record(peer))
            flow = None
        if flow is None:
            flow = FlowStats(first_us=now_us)
            self.flows[peer] = flow
        flow.packets += 1
        flow.bytes += size
        flow.last_us = now_us
        if hdr.congested:
            flow.congested += 1
        seq = unwrap(hdr.seq, flow.next_expected)
        data = max(0, size - HEADER_BYTES - len(xcp))
        if seq < flow.next_expected or seq in flow.above:
            flow.duplicates += 1
        elif seq - flow.next_expected > self.max_reorder:
            flow.duplicates += 1  # absurd jump: do not let it grow the reorder set
        else:
            flow.unique_bytes += data
            probe = self._probes.get(self.host_of(peer))
            if probe is not None:
                probe.nrecd += data
            if seq == flow.next_expected:
                flow.next_expected += 1
                while flow.next_expected in flow.above:
                    flow.above.discard(flow.next_expected)
                    flow.next_expected += 1
            else:
                flow.out_of_order += 1
                flow.above.add(seq)
        rate = hdr.rate_kbps
        if self.stamp_kbps is not None:
            rate = min(rate, self.stamp_kbps)
        flags = hdr.flags | (_CONGESTED if self.stamp_congested else 0)
        ack = RateHeader(
            kind=_KIND_XCP_ACK if xcp else _KIND_ACK,
            flags=flags,
            seq=hdr.seq,
            ack=u32(flow.next_expected),
            ts_us=u32(now_us),
            ts_echo_us=hdr.ts_us,
            rtt_us=hdr.rtt_us,
            rate_kbps=rate,
        )
        self.stats.acks += 1
        return SendAt(now_us + self.ack_delay_us, ack.pack() + xcp, peer)

    def _on_probe(self, hdr: RateHeader, now_us: int, peer: Hashable) -> SendAt:
        host = self.host_of(peer)
        st = self._probes.get(host)
        if st is None:
            st = self._probes[host] = _ProbeState(last_probe=u32(hdr.seq - 1))
        resp = RateHeader(
            kind=_KIND_PROBE_ACK,
            flags=hdr.flags,
            seq=hdr.seq,
            ack=st.last_probe,
            ts_us=u32(now_us),
            ts_echo_us=hdr.ts_us,
            rtt_us=hdr.rtt_us,
            rate_kbps=hdr.rate_kbps,
        )
        data = resp.pack() + PROBE_COUNT.pack(min(st.nrecd, (1 << 64) - 1))
        st.last_probe = hdr.seq
        st.nrecd = 0
        self.stats.probe_acks += 1
        return SendAt(now_us + self.ack_delay_us, data, peer)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m fairgate_hosts.receiver`` (the UDP agent)."""
    from fairgate_hosts.udp_receiver import main as agent_main

    return agent_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
