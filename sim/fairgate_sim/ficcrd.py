"""FICCRD in the switch model: the per-packet rules of ``p4src/include/ficcrd.p4``.

``SimFiccrd`` is one switch's FICCRD state: the three tables and the clone sessions the
controller installs (``install``, from the controller's own entities), the registers
(per-flow hash slots at the edge, MAPR and the queue depth seen per port) and the two
counters ``ficcrd_edge_events`` / ``ficcrd_core_events`` with the P4's indices
(``port << FG_FICCRD_EVENT_BITS | event``), so the agent's FICCRD record fields fill.

- ``ingress`` (``FiccrdIngress``, after routing): the port roles, RD validity, the
  turnaround of a forward RD routed to an edge port (back out of the port it came in
  by, addresses and ports swapped, kind RD_BACKWARD), the queue an RD's core update
  uses. Returns the egress port; the roles go with the packet (``Packet.fc``) to
  egress, as P4 metadata does.
- ``egress`` (``FiccrdEgress``, when the packet leaves the queue, at its ``e_i``):
  MAPR on forward RDs, ER = min(ER, MAPR x DPF >> 10) on backward RDs, the queue depth
  seen, and at the edge the flow slot (APR by the per-packet exponential average
  ``apr_update``, RD every k-th packet as an egress-to-egress clone into the same queue,
  handshake RTT), RD consumption and the receive-window rewrite of ACKs going back to a
  sender.

Same integer arithmetic as the P4 (32-bit registers wrap, ``>>`` for division, the
window floor ``FG_FICCRD_MIN_WINDOW``); the flow key is BMv2's crc32 over the 13 bytes
{src IP, dst IP, protocol, src port, dst port}. Not modelled: checksums (the sim has
none), Ethernet addresses, TTL, malformed or truncated RDs (the sim makes none).
"""

from __future__ import annotations

import struct
import zlib
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, RateHeader
from fairgate_sim.packet import TCP, UDP, UDP_OVERHEAD, Packet

M32 = 0xFFFFFFFF
QDEPTH_MASK = (1 << 19) - 1  # enq_qdepth and ficcrd_queue_seen are bit<19>
PACKETS_MASK = 0xFFFF  # ficcrd_flow_packets is bit<16>
RD_BYTES = HEADER_BYTES + g.FG_RD_HEADER_BYTES  # UDP payload of an RD
RD_FRAME_BYTES = UDP_OVERHEAD + RD_BYTES  # 78: FG_RD_FRAME_BYTES of ficcrd.p4
_RD = struct.Struct("!II")  # fg_rd_t: flow_key, apr_kbps
_SYN, _ACK, _RST = g.TCP_FLAG_SYN, g.TCP_FLAG_ACK, g.TCP_FLAG_RST
_SAR = _SYN | _ACK | _RST
_FWD, _BWD = g.FG_KIND_RD_FORWARD, g.FG_KIND_RD_BACKWARD
_UNLIMITED = g.FG_RATE_UNLIMITED
_NFLOWS, _FLOW_MASK = g.FG_FICCRD_FLOWS, g.FG_FICCRD_FLOW_MASK
_EV = g.FG_FICCRD_EVENT_BITS


@dataclass(slots=True)
class FcMeta:
    """The per-hop metadata FiccrdIngress sets (``meta.fc_*``)."""

    source: bool = False
    rd_interval: int = 0
    edge: bool = False
    rtt_min_us: int = 0
    edge_port: int = 0
    rd_valid: bool = False
    turned: bool = False
    consume: bool = False
    queue_port: int = -1


def flow_key(src: str, dst: str, sport: int, dport: int, proto: int = TCP) -> int:
    """BMv2's crc32 over {src, dst, protocol, sport, dport} (13 bytes)."""
    data = (
        bytes(map(int, src.split(".")))
        + bytes(map(int, dst.split(".")))
        + struct.pack("!BHH", proto, sport, dport)
    )
    return zlib.crc32(data) & M32


def rd_bytes(hdr: RateHeader, key: int, apr_kbps: int) -> bytearray:
    """The UDP payload of an RD: the rate header, then fg_rd_t."""
    buf = bytearray(RD_BYTES)
    hdr.pack_into(buf, 0)
    _RD.pack_into(buf, HEADER_BYTES, key, apr_kbps)
    return buf


def parse_rd(pkt: Packet) -> tuple[RateHeader, int, int] | None:
    """(rate header, flow key, APR) of a well-formed RD (classify.p4's checks), else None."""
    data = pkt.data
    if pkt.proto != UDP or data is None or not pkt.fg_port or len(data) < RD_BYTES:
        return None
    if data[0] != g.FG_VERSION or data[1] not in (_FWD, _BWD):
        return None
    key, apr = _RD.unpack_from(data, HEADER_BYTES)
    return RateHeader.unpack(data, strict=False), key, apr


def _apr_step(step: int, gap: int, shift: int) -> int:
    """c(T) x step for a gap below K: c = (1 - e^-x)/x (x = T/K) at each octave's
    middle, by shifts (1, 0.953, 0.906, 0.844, 0.719)."""
    if gap >= 1 << (shift - 1):
        return step - (step >> 2) - (step >> 5)
    if gap >= 1 << (shift - 2):
        return step - (step >> 3) - (step >> 5)
    if gap >= 1 << (shift - 3):
        return step - (step >> 4) - (step >> 5)
    if gap >= 1 << (shift - 4):
        return step - (step >> 5) - (step >> 6)
    return step


def apr_update(apr: int, gap_us: int, length: int, shift: int = g.FG_FICCRD_APR_SHIFT) -> int:
    """The source edge's per-packet arrival rate (kbit/s) after a packet of ``length``
    bytes that came ``gap_us`` after the flow's previous one: the paper's Eqn. (1)
    (CSFQ's exponential average, time constant K = 2^shift us) by shifts and compares,
    ficcrd.p4's integers exactly (docs/ficcrd.md "Arrival rate"):

    - T < K: APR += c(T) x (length x 8000 - T x APR) / K, rounded toward zero;
    - K <= T < 2K: APR = APR/4 + 0.531 x length x 8000 / K;
    - 2K <= T < 4K: APR = APR/16 + 0.328 x length x 8000 / K;
    - T >= 4K: APR = 0.1875 x length x 8000 / K."""
    k = 1 << shift
    gain = length * 8000  # kbit/s x us
    if gap_us >= 4 * k:
        return ((gain >> 3) + (gain >> 4)) >> shift
    if gap_us >= 2 * k:
        return ((apr >> 4) + (((gain >> 2) + (gain >> 4) + (gain >> 6)) >> shift)) & M32
    if gap_us >= k:
        return ((apr >> 2) + (((gain >> 1) + (gain >> 5)) >> shift)) & M32
    loss = gap_us * apr
    if gain >= loss:
        return (apr + (_apr_step(gain - loss, gap_us, shift) >> shift)) & M32
    return (apr - (_apr_step(loss - gain, gap_us, shift) >> shift)) & M32


@dataclass(frozen=True)
class DpfRange:
    lo: int
    hi: int
    dpf: int
    above_q0: bool


@dataclass
class FiccrdStats:
    """What the switch did (beyond the P4's counters), for tests and reports."""

    clones_dropped: int = 0  # the RD clone found its queue full


@dataclass
class SimFiccrd:
    """One switch's FICCRD tables, registers and counters."""

    sources: dict[int, int] = field(default_factory=dict)  # ingress port -> k
    edges: dict[int, int] = field(default_factory=dict)  # egress port -> rtt_min_us
    dpf: dict[int, list[DpfRange]] = field(default_factory=dict)  # port -> sorted ranges
    sessions: dict[int, int] = field(default_factory=dict)  # clone session -> port
    stats: FiccrdStats = field(default_factory=FiccrdStats)

    def __post_init__(self) -> None:
        n = _NFLOWS
        self.flow_key = [0] * n
        self.flow_last_us = [0] * n
        self.flow_apr = [0] * n
        self.flow_packets = [0] * n
        self.flow_er = [0] * n
        self.flow_rtt = [0] * n
        self.flow_wscale = [0] * n
        self.flow_syn_us = [0] * n
        self.flow_base_rtt = [0] * n
        self.mapr = [0] * g.FG_MAX_PORTS
        self.queue_seen = [0] * g.FG_MAX_PORTS
        self.edge_events = [[0, 0] for _ in range(g.FG_FICCRD_EVENT_ENTRIES)]
        self.core_events = [0] * g.FG_FICCRD_EVENT_ENTRIES
        self._keys: dict[tuple[str, str, int, int], int] = {}
        self._lows: dict[int, list[int]] = {}

    # ---- control plane -----------------------------------------------------------
    def install(self, entries: Iterable[Any], sessions: Iterable[Any] = ()) -> None:
        """The controller's FICCRD table entries (``ficcrd.table_entries``) and clone
        sessions (``ficcrd.clone_sessions``), as finsy entities; replaces what was there."""
        self.sources, self.edges, self.dpf = {}, {}, {}
        for e in entries:
            match, args = dict(e.match), e.action.args
            if e.table_id == g.TABLE_FICCRD_SOURCES:
                self.sources[int(match["ingress_port"])] = int(args["rd_interval"])
            elif e.table_id == g.TABLE_FICCRD_EDGES:
                self.edges[int(match["egress_port"])] = int(args["rtt_min_us"])
            elif e.table_id == g.TABLE_FICCRD_DPF:
                lo, hi = (int(x) for x in str(match["queue_depth"]).split("..."))
                rng = DpfRange(lo, hi, int(args["dpf"]), bool(int(args["above_q0"])))
                self.dpf.setdefault(int(match["port"]), []).append(rng)
        for ranges in self.dpf.values():
            ranges.sort(key=lambda r: r.lo)
        self._lows = {p: [r.lo for r in rs] for p, rs in self.dpf.items()}
        self.sessions = {s.session_id: int(s.replicas[0].port) for s in sessions if s.replicas}

    def dpf_lookup(self, port: int, depth: int) -> DpfRange | None:
        lows = self._lows.get(port)
        if not lows:
            return None
        i = bisect_right(lows, depth) - 1
        if i < 0:
            return None
        rng = self.dpf[port][i]
        return rng if depth <= rng.hi else None

    def counters(self) -> dict[str, dict[int, tuple[int, int]]]:
        """The two counter arrays, as a Snapshot holds them."""
        return {
            g.COUNTER_FICCRD_EDGE_EVENTS: {i: (p, b) for i, (p, b) in enumerate(self.edge_events)},
            g.COUNTER_FICCRD_CORE_EVENTS: {i: (n, 0) for i, n in enumerate(self.core_events)},
        }

    def _key(self, src: str, dst: str, sport: int, dport: int) -> int:
        k = (src, dst, sport, dport)
        key = self._keys.get(k)
        if key is None:
            key = self._keys[k] = flow_key(src, dst, sport, dport)
        return key

    # ---- ingress -----------------------------------------------------------------
    def ingress(self, pkt: Packet, in_port: int, out_port: int) -> int:
        """FiccrdIngress for a packet routed to ``out_port`` (< FG_MAX_PORTS); returns
        the egress port (the ingress port for a turned-around RD)."""
        tcp = pkt.proto == TCP
        rd = None if tcp else parse_rd(pkt)
        if not tcp and rd is None:
            pkt.fc = None
            return out_port
        m = FcMeta()
        if tcp:
            k = self.sources.get(in_port)
            if k is not None:
                m.source, m.rd_interval = True, k
        rtt_min = self.edges.get(out_port)
        if rtt_min is not None:
            m.edge, m.rtt_min_us, m.edge_port = True, rtt_min, out_port
        if rd is not None:
            m.rd_valid = True
            if rd[0].kind == _FWD:
                if m.edge and 0 <= in_port < g.FG_MAX_PORTS:
                    m.turned, m.queue_port = True, out_port
                    data = pkt.data
                    assert data is not None
                    buf = bytearray(data)
                    buf[1] = _BWD
                    pkt.data = buf
                    pkt.src, pkt.dst = pkt.dst, pkt.src
                    pkt.sport, pkt.dport = pkt.dport, pkt.sport
                    out_port = in_port
                else:
                    m.queue_port = out_port
            else:
                m.queue_port = in_port
                m.consume = m.edge
        pkt.fc = m
        return out_port

    # ---- egress ------------------------------------------------------------------
    def egress(self, port: int, pkt: Packet, enq_depth: int, t: float, send: Any) -> None:
        """FiccrdEgress for a packet leaving ``port`` at ``t``; ``send(port, rd)``
        enqueues an RD clone (False: the queue was full)."""
        now_us = round(t * 1e6) & M32
        m: FcMeta | None = pkt.fc
        clone = pkt.e2e_clone
        edge_event = -1
        edge_port = port
        if clone:
            pkt.e2e_clone = False
            edge_event = g.FG_EDGE_RD_EMITTED
            rd_valid, queue_port, turned = True, port, False
        elif m is not None:
            rd_valid, queue_port, turned = m.rd_valid, m.queue_port, m.turned
        else:
            return
        if rd_valid and 0 <= queue_port < g.FG_MAX_PORTS:
            self._core(port, pkt, enq_depth, queue_port, turned)
        self.queue_seen[port] = enq_depth & QDEPTH_MASK
        if clone:
            pass
        elif m is None:
            return
        elif m.consume:
            edge_event = self._consume(pkt, now_us)
            pkt.dropped = True
        elif m.turned:
            edge_event = g.FG_EDGE_RD_TURNED
            edge_port = m.edge_port
        elif pkt.proto == TCP and m.source and not m.edge:
            edge_event = self._source(port, pkt, m, now_us, send)
        elif pkt.proto == TCP and m.edge and not m.source:
            edge_event = self._to_sender(pkt, m)
        if edge_event >= 0 and edge_port < g.FG_MAX_PORTS:
            c = self.edge_events[(edge_port << _EV) | edge_event]
            c[0] += 1
            c[1] += pkt.size

    def _core(self, port: int, pkt: Packet, enq_depth: int, qport: int, turned: bool) -> None:
        depth = enq_depth & QDEPTH_MASK if qport == port else self.queue_seen[qport]
        level = self.dpf_lookup(qport, depth)
        if level is None:
            return  # not a core queue
        data = pkt.data
        assert data is not None
        kind = data[1]
        apr_rd = _RD.unpack_from(data, HEADER_BYTES)[1]
        mapr = self.mapr[qport]
        event = g.FG_CORE_MAPR_HELD
        if kind == _FWD or turned:
            if apr_rd == 0:
                event = g.FG_CORE_APR_UNKNOWN
            elif mapr == 0:
                mapr = apr_rd  # first sample: start from it
                event = g.FG_CORE_MAPR_UPDATED
            elif apr_rd < mapr:
                mapr = mapr - ((mapr - apr_rd) >> 4)
                event = g.FG_CORE_MAPR_UPDATED
            elif not level.above_q0:
                mapr = mapr + ((apr_rd - mapr) >> 4)
                event = g.FG_CORE_MAPR_UPDATED
            self.mapr[qport] = mapr
        if kind == _BWD:
            if mapr == 0:
                event = g.FG_CORE_MAPR_UNKNOWN
            else:
                hdr = RateHeader.unpack(data, strict=False)
                er = (mapr * level.dpf) >> g.FG_DPF_SHIFT
                if er < hdr.rate_kbps:
                    hdr.rate_kbps = er
                    buf = bytearray(data)
                    hdr.pack_into(buf, 0)
                    pkt.data = buf
                    event = g.FG_CORE_ER_LOWERED
                else:
                    event = g.FG_CORE_ER_KEPT
        self.core_events[(qport << _EV) | event] += 1

    def _consume(self, pkt: Packet, now_us: int) -> int:
        """Source edge: keep ER and the RD round trip if the slot holds the flow."""
        data = pkt.data
        assert data is not None
        hdr = RateHeader.unpack(data, strict=False)
        key = _RD.unpack_from(data, HEADER_BYTES)[0]
        idx = key & _FLOW_MASK
        if self.flow_key[idx] != key:
            return g.FG_EDGE_RD_STALE
        self.flow_er[idx] = hdr.rate_kbps
        self.flow_rtt[idx] = (now_us - hdr.ts_us) & M32
        return g.FG_EDGE_RD_CONSUMED

    def _source(self, port: int, pkt: Packet, m: FcMeta, now_us: int, send: Any) -> int:
        """Source edge: a TCP segment entering the network."""
        event = -1
        key = self._key(pkt.src, pkt.dst, pkt.sport, pkt.dport)
        idx = key & _FLOW_MASK
        syn = bool(pkt.tcp_flags & _SYN)
        if self.flow_key[idx] != key or syn:
            # start_flow: a new flow (or connection) takes the slot
            self.flow_key[idx] = key
            self.flow_last_us[idx] = now_us
            self.flow_apr[idx] = apr = 0
            self.flow_er[idx] = _UNLIMITED
            self.flow_rtt[idx] = rtt = 0
            self.flow_wscale[idx] = 0
            self.flow_syn_us[idx] = now_us if syn else 0
            self.flow_base_rtt[idx] = 0
            packets = 0
            event = g.FG_EDGE_FLOW_STARTED
        else:
            apr, rtt, packets = self.flow_apr[idx], self.flow_rtt[idx], self.flow_packets[idx]
            apr = apr_update(apr, (now_us - self.flow_last_us[idx]) & M32, pkt.size)
            self.flow_apr[idx] = apr
            self.flow_last_us[idx] = now_us
            syn_us = self.flow_syn_us[idx]
            if self.flow_base_rtt[idx] == 0 and syn_us != 0:
                base = (now_us - syn_us) & M32
                self.flow_base_rtt[idx] = base or 1  # 0 us reads as 1: "known"
                event = g.FG_EDGE_BASE_RTT_LEARNED
        packets = (packets + 1) & PACKETS_MASK
        if m.rd_interval != 0 and packets >= m.rd_interval and not syn:
            packets = 0
            self._clone_rd(port, pkt, key, apr, rtt, now_us, send)
        self.flow_packets[idx] = packets
        return event

    def _clone_rd(
        self, port: int, pkt: Packet, key: int, apr: int, rtt: int, now_us: int, send: Any
    ) -> None:
        """clone_preserving_field_list(E2E, 64 + port): the clone enters the session's
        queue now and its egress pass (build_rd) makes it a 78-byte forward RD stamped
        with its enqueue time."""
        out = self.sessions.get(g.FG_RD_SESSION_BASE + port)
        if out is None:
            return  # no clone session: BMv2 clones nothing
        hdr = RateHeader(kind=_FWD, ts_us=now_us, rtt_us=rtt, rate_kbps=_UNLIMITED)
        rd = Packet(
            pkt.src,
            pkt.dst,
            g.FG_UDP_PORT,
            g.FG_UDP_PORT,
            RD_FRAME_BYTES,
            UDP,
            rd_bytes(hdr, key, apr),
        )
        rd.e2e_clone = True
        if not send(out, rd):
            self.stats.clones_dropped += 1

    def _to_sender(self, pkt: Packet, m: FcMeta) -> int:
        """Source edge: a segment going back to a TCP sender (reverse 5-tuple)."""
        key = self._key(pkt.dst, pkt.src, pkt.dport, pkt.sport)
        idx = key & _FLOW_MASK
        if self.flow_key[idx] != key:
            return -1
        flags = pkt.tcp_flags & _SAR
        if flags == _SYN | _ACK:
            shift = 0
            if pkt.wscale is not None:
                shift = min(pkt.wscale, g.FG_TCP_MAX_WSCALE)
            self.flow_wscale[idx] = shift
            return g.FG_EDGE_WSCALE_LEARNED
        er = self.flow_er[idx]
        if flags != _ACK or er == _UNLIMITED:
            return -1
        rtt = (self.flow_rtt[idx] + self.flow_base_rtt[idx]) & M32
        if rtt < m.rtt_min_us:
            rtt = m.rtt_min_us
        wide = (er * rtt) >> 13  # bytes = ER[kbit/s] x RTT[us] / 8000, 2.3 % low
        if wide < g.FG_FICCRD_MIN_WINDOW:
            wide = g.FG_FICCRD_MIN_WINDOW
        wide >>= self.flow_wscale[idx]
        if wide == 0:
            wide = 1
        if wide < pkt.window:
            pkt.window = wide
            return g.FG_EDGE_WINDOW_REWRITTEN
        return -1
