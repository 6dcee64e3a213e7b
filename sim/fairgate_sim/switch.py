"""The switch model: the per-packet rules of p4src/fairgate.p4 and its counters.

Ingress (arrival): route (``ipv4_routes``, /32 per host as the controller installs),
refuse SYN+FIN and SYN+RST, SYN admission (``admission_ports`` + ``syn_meter``, red
SYNs dropped, ``session_events``), ``port_arrivals``, then the output queue (drop-tail:
BMv2 counts no queue drops, so drops = arrivals - departures, as on BMv2).
Egress (leaving the queue): ``port_departures``, ``queue_depth_hist`` of enq_qdepth,
``rtt_hist`` of the carried RTT on stampable data, then ``port_feedback``:
``rate = min(rate, fair_rate)`` (fair rate 0 or no entry stamps nothing) and the
congestion flag. Counters are monotonic and read as a ``telemetry.Snapshot``.
With ``ficcrd`` (``ficcrd.SimFiccrd``, what the controller's FICCRD entries install)
the switch also runs FiccrdIngress after routing and FiccrdEgress after the departure
telemetry, in the P4's order; its ports then run egress eagerly, at each ``e_i``.
XCP (p4src/include/xcp.p4): XCP data with an RTT (rtt_us != 0) leaving a port counts in
``rtt_hist`` and, when both log2 terms are present, in ``xcp_ratio_hist`` (bucket of
lg_pos - lg_neg, ``RatioBuckets``); with ``xcp_factors`` installed for the port, the
per-packet feedback of ``fairgate_p4.xcp_math`` (bit-exact with the P4) is min-stamped
into H_feedback. A port without factors stamps nothing; XCP acks are never touched.
"""

from __future__ import annotations

import bisect
import struct
import zlib
from dataclasses import dataclass, field
from typing import Final

from fairgate_controller.telemetry import SIM_QUEUE_DROPS, Buckets, Snapshot
from fairgate_p4 import generated as g
from fairgate_p4.header import (
    _PACKER,
    _XCP_PACKER,
    FIELDS,
    HEADER_BYTES,
    XCP_HEADER_BYTES,
)
from fairgate_p4.xcp_math import LG_NONE, RatioBuckets, stamp, switch_feedback
from fairgate_sim.engine import Clock
from fairgate_sim.ficcrd import SimFiccrd
from fairgate_sim.meter import PacketMeter
from fairgate_sim.packet import TCP, UDP, Packet
from fairgate_sim.port import OutputPort

_bisect_right: Final = bisect.bisect_right

# Module constants are Final: the mypyc build then reads them as C statics instead of
# looking each one up in the module's dict on every packet.
# The rate header's struct, from the codec (fields in fg_rate_t order).
_HEADER: Final = _PACKER
_RTT: Final = FIELDS.index("rtt_us")


def _field_at(name: str) -> tuple[int, struct.Struct]:
    """Byte offset and codec of one fg_rate_t field (the layout P4 generates)."""
    offset = 0
    for field_name, width in g.HEADER_LAYOUTS["fg_rate_t"]:
        if field_name == name:
            return offset // 8, struct.Struct("!" + {8: "B", 16: "H", 32: "I", 64: "Q"}[width])
        offset += width
    raise KeyError(f"fg_rate_t has no field {name}")


# port_feedback rewrites two fields in place: the rest of the header is left as it came
_RATE_AT: Final = _field_at("rate_kbps")[0]
_RATE_FIELD: Final = _field_at("rate_kbps")[1]
_FLAGS_AT: Final = _field_at("flags")[0]
_FLAGS_FIELD: Final = _field_at("flags")[1]


def _fields_view(names: tuple[str, ...]) -> struct.Struct:
    """A struct reading only ``names`` of fg_rate_t (in layout order), the other
    fields skipped as pad bytes."""
    codes = {8: "B", 16: "H", 32: "I", 64: "Q"}
    fmt = "".join(
        codes[width] if name in names else f"{width // 8}x"
        for name, width in g.HEADER_LAYOUTS["fg_rate_t"]
    )
    return struct.Struct("!" + fmt)


# what egress reads of a data packet's header, in layout order (the bound methods: a
# call without a method lookup per packet in the mypyc build)
_EGRESS_VIEW: Final = _fields_view(("flags", "rtt_us", "rate_kbps"))
_EGRESS_UNPACK: Final = _EGRESS_VIEW.unpack_from
_PACK_RATE: Final = _RATE_FIELD.pack_into
_PACK_FLAGS: Final = _FLAGS_FIELD.pack_into
#: the largest queue depth whose histogram bucket egress looks up in a table
_TABLE_MAX: Final = 1 << 16
_MAX_PORTS: Final = g.FG_MAX_PORTS
_BUCKET_BITS: Final = g.FG_HIST_BUCKET_BITS
_FG_PORT: Final = g.FG_UDP_PORT
_VERSION: Final = g.FG_VERSION
_KIND_DATA: Final = g.FG_KIND_DATA
_CONGESTED: Final = g.FG_FLAG_CONGESTED
NBUCKETS: Final = g.FG_HIST_BUCKETS
LAST: Final = NBUCKETS - 1
_SYN: Final = g.TCP_FLAG_SYN
_ACK: Final = g.TCP_FLAG_ACK
_RST: Final = g.TCP_FLAG_RST
_FIN: Final = g.TCP_FLAG_FIN
_CTRL: Final = _SYN | _ACK | _RST | _FIN


def bucket_of(bounds: tuple[int, ...], value: int) -> int:
    """The range-table lookup: bucket b holds [bounds[b], bounds[b+1] - 1]; else 31."""
    b = _bisect_right(bounds, value) - 1
    return b if 0 <= b < LAST else LAST


_XCP_MIN_BYTES: Final = HEADER_BYTES + XCP_HEADER_BYTES
_HEADER_BYTES: Final = HEADER_BYTES
_KIND_XCP_DATA: Final = g.FG_KIND_XCP_DATA
_XCP_BUCKET_BITS: Final = g.FG_XCP_HIST_BUCKET_BITS


def bucket_table(bounds: tuple[int, ...]) -> list[int]:
    """``bucket_of(bounds, v)`` for every ``v`` in 0 .. bounds[-1] (every larger value
    falls in the bucket of bounds[-1]); empty when that table would be large."""
    if bounds[-1] > _TABLE_MAX:
        return []
    return [bucket_of(bounds, v) for v in range(bounds[-1] + 1)]


def _used(counts: list[int]) -> dict[int, tuple[int, int]]:
    """A packets-only counter array's non-zero entries, as a read gives them."""
    return {i: (n, 0) for i, n in enumerate(counts) if n}


def _used_pairs(cells: list[list[int]]) -> dict[int, tuple[int, int]]:
    """A (packets, bytes) counter array's non-zero entries, as a read gives them."""
    return {i: (c[0], c[1]) for i, c in enumerate(cells) if c[0] or c[1]}


@dataclass
class SwitchStats:
    no_route: int = 0
    refused_tcp: int = 0
    syn_red: int = 0
    stamped: int = 0
    flagged: int = 0
    queue_drops: int = 0


@dataclass
class SimSwitch:
    name: str
    clock: Clock
    qbuckets: Buckets
    rbuckets: Buckets
    routes: dict[str, int] = field(default_factory=dict)  # destination IP -> port
    ports: dict[int, OutputPort] = field(default_factory=dict)
    feedback: dict[int, tuple[int, bool]] = field(default_factory=dict)
    admission: set[int] = field(default_factory=set)
    meters: dict[int, PacketMeter] = field(default_factory=dict)
    stats: SwitchStats = field(default_factory=SwitchStats)
    ficcrd: SimFiccrd | None = None
    xcp_factors: dict[int, tuple[int, int]] = field(default_factory=dict)
    xbuckets: RatioBuckets = field(default_factory=RatioBuckets)
    xcp_stamped: int = 0  # XCP data whose H_feedback this switch lowered

    def __post_init__(self) -> None:
        n = g.FG_MAX_PORTS
        self.arrivals = [[0, 0] for _ in range(n)]
        self.departures = [[0, 0] for _ in range(n)]
        self.qhist = [0] * g.FG_HIST_ENTRIES
        self.rhist = [0] * g.FG_HIST_ENTRIES
        self.events = [0] * g.FG_SESSION_ENTRIES
        self.xhist = [[0, 0] for _ in range(g.FG_XCP_HIST_ENTRIES)]
        self._qb = self.qbuckets.bounds
        self._rb = self.rbuckets.bounds
        #: queue depth -> queue_depth_hist bucket (the depths are small: a list index
        #: per packet instead of a bisection)
        self._qtable = bucket_table(self._qb)
        #: admission.p4's FIN filter: per slot the last FIN seen, as (flow, sequence
        #: number); the slot is a CRC-32 of the addresses and ports
        self._fins: list[tuple[bytes, int] | None] = [None] * g.FG_FIN_FILTER_SLOTS

    # ---- control plane -----------------------------------------------------------
    def add_port(self, port: OutputPort) -> None:
        port.switch = self
        port.eager = self.ficcrd is not None
        self.ports[port.port] = port

    def enable_ficcrd(self, ficcrd: SimFiccrd) -> None:
        """FICCRD on: its tables, registers and counters; egress runs at each e_i."""
        self._drain_all()
        self.ficcrd = ficcrd
        for p in self.ports.values():
            p.eager = True

    def _send_clone(self, port: int, pkt: Packet) -> bool:
        out = self.ports.get(port)
        return out is not None and out.send(pkt)

    def set_feedback(self, port: int, rate_kbps: int, congested: bool) -> None:
        """MODIFY of a port_feedback entry (packets already past egress keep the old one)."""
        self._drain_all()
        self.feedback[port] = (rate_kbps, congested)

    def set_xcp_factors(self, port: int, lg_xi_p: int, lg_xi_n: int) -> None:
        """MODIFY of an ``xcp_factors`` entry (Q8.8 log2 of xi_p and xi_n)."""
        self._drain_all()
        self.xcp_factors[port] = (lg_xi_p, lg_xi_n)

    def port_snapshot(self, port: int) -> Snapshot:
        """What XCP's per-port timer reads: ``port``'s entries of the counters
        ``telemetry.xcp_sample`` uses (a read of those indices only)."""
        self._drain_all()
        hb = port << _BUCKET_BITS
        xb = port << _XCP_BUCKET_BITS
        return {
            g.COUNTER_PORT_ARRIVALS: {port: tuple(self.arrivals[port])},  # type: ignore[dict-item]
            g.COUNTER_PORT_DEPARTURES: {port: tuple(self.departures[port])},  # type: ignore[dict-item]
            g.COUNTER_QUEUE_DEPTH_HIST: {i: (self.qhist[i], 0) for i in range(hb, hb + NBUCKETS)},
            g.COUNTER_RTT_HIST: {i: (self.rhist[i], 0) for i in range(hb, hb + NBUCKETS)},
            g.COUNTER_XCP_RATIO_HIST: {
                i: (self.xhist[i][0], self.xhist[i][1])
                for i in range(xb, xb + g.FG_XCP_HIST_BUCKETS)
            },
        }

    def set_meter(self, port: int, pir: float | None, pburst: int = 0) -> None:
        """syn_meter[port]: None = unconfigured (green); else cir = pir (the controller's)."""
        meter = self.meters.setdefault(port, PacketMeter())
        if pir is None:
            meter.reset()
        else:
            meter.configure(pir, pburst, pir, pburst, self.clock.now)

    def snapshot(self) -> Snapshot:
        """A wildcard read of every counter array, as the agent's read_snapshot returns it."""
        self._drain_all()
        snap: Snapshot = {
            g.COUNTER_PORT_ARRIVALS: {i: (p, b) for i, (p, b) in enumerate(self.arrivals)},
            g.COUNTER_PORT_DEPARTURES: {i: (p, b) for i, (p, b) in enumerate(self.departures)},
            g.COUNTER_QUEUE_DEPTH_HIST: {i: (n, 0) for i, n in enumerate(self.qhist)},
            g.COUNTER_RTT_HIST: {i: (n, 0) for i, n in enumerate(self.rhist)},
            g.COUNTER_SESSION_EVENTS: {i: (n, 0) for i, n in enumerate(self.events)},
            # Not a P4 counter: what the simulator knows and BMv2 cannot count.
            SIM_QUEUE_DROPS: {
                i: (p.stats.dropped, p.stats.dropped_bytes) for i, p in self.ports.items()
            },
        }
        if self.xcp_factors:  # the agent reads xcp_ratio_hist only when it runs XCP
            snap[g.COUNTER_XCP_RATIO_HIST] = {i: (p, b) for i, (p, b) in enumerate(self.xhist)}
        if self.ficcrd is not None:
            snap.update(self.ficcrd.counters())
        return snap

    def read(self) -> Snapshot:
        """What the control loop reads each period: ``snapshot()`` without the entries
        that never counted anything. The agent reads a missing entry as (0, 0)
        (``counter_deltas`` and every measurement take ``.get(index, (0, 0))``) and the
        counters are monotonic, so its deltas, decisions and records are the same; a
        period's ``counter_deltas`` then walks the few hundred used entries of a switch
        rather than all ~1200 (the paper parking lot: 5 % of them are used)."""
        self._drain_all()
        snap: Snapshot = {
            g.COUNTER_PORT_ARRIVALS: _used_pairs(self.arrivals),
            g.COUNTER_PORT_DEPARTURES: _used_pairs(self.departures),
            g.COUNTER_QUEUE_DEPTH_HIST: _used(self.qhist),
            g.COUNTER_RTT_HIST: _used(self.rhist),
            g.COUNTER_SESSION_EVENTS: _used(self.events),
            SIM_QUEUE_DROPS: {
                i: (p.stats.dropped, p.stats.dropped_bytes) for i, p in self.ports.items()
            },
        }
        if self.xcp_factors:
            snap[g.COUNTER_XCP_RATIO_HIST] = _used_pairs(self.xhist)
        if self.ficcrd is not None:
            snap.update(self.ficcrd.counters())
        return snap

    def _drain_all(self) -> None:
        now: float = self.clock.now
        for p in self.ports.values():
            p.drain(now)

    # ---- ingress -----------------------------------------------------------------
    def receive(self, pkt: Packet, in_port: int = -1) -> None:
        """A packet arriving on ``in_port`` (-1: unknown, e.g. injected by a test)."""
        port = self.routes.get(pkt.dst)
        if port is None:
            self.stats.no_route += 1
            return
        counted = port < _MAX_PORTS
        if self.ficcrd is not None:
            pkt.fc = None
            if counted:
                port = self.ficcrd.ingress(pkt, in_port, port)
        if pkt.proto == TCP:
            flags = pkt.tcp_flags
            if flags & _SYN and flags & (_FIN | _RST):
                self.stats.refused_tcp += 1
                return
            ctrl = flags & _CTRL
            base = port << g.FG_SESSION_EVENT_BITS
            if ctrl == _SYN:
                event = g.FG_EVENT_SYN_UNGATED
                if port in self.admission:
                    meter = self.meters.get(port)
                    red = meter is not None and meter.execute(self.clock.now) == g.FG_METER_RED
                    event = g.FG_EVENT_SYN_DROPPED if red else g.FG_EVENT_SYN_ADMITTED
                if counted:
                    self.events[base | event] += 1
                if event == g.FG_EVENT_SYN_DROPPED:
                    self.stats.syn_red += 1
                    return
            elif ctrl == _SYN | _ACK:
                if counted:
                    self.events[base | g.FG_EVENT_SYNACK] += 1
            elif ctrl & _RST:
                if counted:
                    self.events[base | g.FG_EVENT_RST] += 1
            elif ctrl & _FIN and counted:
                self.events[base | self._fin_event(pkt)] += 1
        out = self.ports.get(port)
        if out is None:
            self.stats.no_route += 1
            return
        if counted:
            c = self.arrivals[port]
            c[0] = c[0] + 1  # not ``+=``: mypyc adds list items generically then
            c[1] = c[1] + pkt.size
        if not out.send(pkt):
            self.stats.queue_drops += 1

    def _fin_event(self, pkt: Packet) -> int:
        """FG_EVENT_FIN for a FIN's first copy, FG_EVENT_FIN_REPEAT for a retransmission
        (admission.p4's filter). The simulator's sequence numbers start at 0 in every
        flow where Linux's are random, so a slot compares the flow too: what a random
        initial sequence number makes of the P4 filter's sequence-only compare."""
        # the simulator's ports are connection numbers, which outgrow 16 bits
        key = f"{pkt.src} {pkt.dst} {pkt.sport} {pkt.dport}".encode()
        slot = zlib.crc32(key) % g.FG_FIN_FILTER_SLOTS
        entry = (key, pkt.seq)
        if self._fins[slot] == entry:
            return g.FG_EVENT_FIN_REPEAT
        self._fins[slot] = entry
        return g.FG_EVENT_FIN

    # ---- egress ------------------------------------------------------------------
    def egress(self, port: int, pkt: Packet, enq_depth: int, t: float | None = None) -> None:
        """A packet leaving ``port``'s queue at ``t`` (default: now)."""
        # Every packet through every port comes here: globals are bound once
        # (module constants), the bucket lookups inlined and only the three fields
        # used read from the rate header (no ``RateHeader``; stamping writes two).
        counted = port < _MAX_PORTS
        base = port << _BUCKET_BITS
        if counted and not pkt.e2e_clone:  # an RD clone never arrived: not counted
            c = self.departures[port]
            c[0] = c[0] + 1  # not ``+=``: mypyc adds list items generically then
            c[1] = c[1] + pkt.size
            table = self._qtable
            if 0 <= enq_depth < len(table):
                b = table[enq_depth]
            elif table and enq_depth > 0:
                b = table[-1]
            else:
                b = _bisect_right(self._qb, enq_depth) - 1
                b = b if 0 <= b < LAST else LAST
            qhist = self.qhist
            qhist[base | b] = qhist[base | b] + 1
        if self.ficcrd is not None and counted and (pkt.fc is not None or pkt.e2e_clone):
            when = self.clock.now if t is None else t
            self.ficcrd.egress(port, pkt, enq_depth, when, self._send_clone)
        data = pkt.data
        if (
            data is None
            or pkt.proto != UDP
            or (pkt.dport != _FG_PORT and pkt.sport != _FG_PORT)
            or len(data) < _HEADER_BYTES
        ):
            return
        if data[0] != _VERSION:
            return
        if data[1] == _KIND_XCP_DATA:
            if counted and len(data) >= _XCP_MIN_BYTES:
                self._xcp_egress(port, pkt, data)
            return
        if data[1] != _KIND_DATA:
            return  # only stampable data packets are counted and stamped
        flags: int
        rtt_us: int
        rate_kbps: int
        flags, rtt_us, rate_kbps = _EGRESS_UNPACK(data, 0)
        if rate_kbps == 0:
            return  # FG_RATE_ZERO: forwarded unchanged
        if rtt_us != 0 and counted:
            b = _bisect_right(self._rb, rtt_us) - 1
            i = base | (b if 0 <= b < LAST else LAST)
            rhist = self.rhist
            rhist[i] = rhist[i] + 1
        entry = self.feedback.get(port)
        if entry is None:
            return
        fair, congested = entry
        stamp = fair != 0 and rate_kbps > fair
        flag = congested and not flags & _CONGESTED
        if not (stamp or flag):
            return
        # the two fields written into a copy (what packing a modified RateHeader gives,
        # without building one per stamped packet)
        buf = bytearray(data)
        if stamp:
            _PACK_RATE(buf, _RATE_AT, fair)
            self.stats.stamped += 1
        if flag:
            _PACK_FLAGS(buf, _FLAGS_AT, flags | _CONGESTED)
            self.stats.flagged += 1
        pkt.data = buf

    def _xcp_egress(self, port: int, pkt: Packet, data: bytes | bytearray) -> None:
        """XcpFeedback (xcp.p4) and the XCP part of DepartureTelemetry for XCP data."""
        rtt_us = _HEADER.unpack_from(data, 0)[_RTT]
        if rtt_us == 0:
            return  # RTT unknown: neither counted nor stamped
        base = port << _BUCKET_BITS
        b = _bisect_right(self._rb, rtt_us) - 1
        self.rhist[base | (b if 0 <= b < LAST else LAST)] += 1
        cwnd, feedback, lg_pos, lg_neg = _XCP_PACKER.unpack_from(data, HEADER_BYTES)
        if lg_pos != LG_NONE and lg_neg != LG_NONE:
            bucket = self.xbuckets.bucket_of(lg_pos - lg_neg)
            cell = self.xhist[(port << _XCP_BUCKET_BITS) | bucket]
            cell[0] += 1
            cell[1] += pkt.size
        factors = self.xcp_factors.get(port)
        if factors is None:
            return
        new = stamp(feedback, switch_feedback(lg_pos, lg_neg, factors[0], factors[1]))
        if new < feedback:
            buf = bytearray(data)
            _XCP_PACKER.pack_into(buf, HEADER_BYTES, cwnd, new, lg_pos, lg_neg)
            pkt.data = buf
            self.xcp_stamped += 1
