"""The switch model's FICCRD rules against p4src/include/ficcrd.p4, one test per PTF
test of ptf-tests/tests/ficcrd.py (same set-up: hosts H1 behind port 1, the network and
H2 behind port 2; the roles are the controller's own entities, installed as the
simulator's controller installs them). Registers are read directly (the PTF tests read
them over Thrift); counters through the switch's snapshot."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from fairgate_controller import ficcrd as fc
from fairgate_controller.telemetry import queue_buckets, rtt_buckets
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
from fairgate_sim.engine import Clock
from fairgate_sim.ficcrd import (
    RD_FRAME_BYTES,
    SimFiccrd,
    apr_update,
    flow_key,
    parse_rd,
    rd_bytes,
)
from fairgate_sim.packet import TCP, UDP, Packet, udp_packet
from fairgate_sim.port import OutputPort, PortParams
from fairgate_sim.switch import SimSwitch

HOST, NET = 1, 2
H1, H2 = "10.0.1.1", "10.0.2.2"
UNLIMITED = g.FG_RATE_UNLIMITED
SYN, ACK = g.TCP_FLAG_SYN, g.TCP_FLAG_ACK
FAST = 1e9  # bytes/s: no queueing unless a test wants it


@dataclass
class Rig:
    """One switch with FICCRD on; what leaves each port is collected."""

    clock: Clock = field(default_factory=Clock)
    out: dict[int, list[Packet]] = field(default_factory=lambda: {HOST: [], NET: []})
    entries: list[Any] = field(default_factory=list)
    sessions: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sw = SimSwitch("s1", self.clock, queue_buckets(64), rtt_buckets())
        self.fc = SimFiccrd()
        self.sw.enable_ficcrd(self.fc)
        for port in (HOST, NET):
            params = PortParams(rate_Bps=FAST, depth=64)
            self.sw.add_port(OutputPort(self.clock, params, port, deliver=self.out[port].append))
        self.sw.routes = {H1: HOST, H2: NET}

    # ---- what the controller writes ------------------------------------------------
    def _install(self) -> None:
        self.fc.install(self.entries, self.sessions)

    def set_source(self, port: int, k: int) -> None:
        self.entries.append(fc.source_entry(port, k))
        self._install()

    def set_edge(self, port: int, rtt_min_us: int = 0) -> None:
        self.entries.append(fc.edge_entry(port, rtt_min_us))
        self._install()

    def set_dpf(self, port: int, lo: int, hi: int, dpf: int, above_q0: bool) -> None:
        self.entries = [
            e
            for e in self.entries
            if not (e.table_id == g.TABLE_FICCRD_DPF and int(dict(e.match)["port"]) == port)
        ]
        self.entries += fc.dpf_entries(port, [fc.DpfLevel(lo, hi, dpf, above_q0)])
        self._install()

    def clone_session(self, port: int) -> None:
        self.sessions.append(fc.clone_session(port))
        self._install()

    # ---- traffic --------------------------------------------------------------------
    def send(self, port: int, pkt: Packet, at: float | None = None) -> None:
        """``pkt`` arrives on ``port`` (at ``at``), and has left 1 us later."""
        if at is not None and at > self.clock.now:
            self.clock.run(at)
        self.sw.receive(pkt, in_port=port)
        self.clock.run(self.clock.now + 1e-6)

    def collect(self, port: int) -> list[Packet]:
        self.clock.run(self.clock.now + 0.01)
        got, self.out[port][:] = list(self.out[port]), []
        return got

    def events(self, counter: str, port: int) -> dict[int, int]:
        snap = self.sw.snapshot()[counter]
        base = port << g.FG_FICCRD_EVENT_BITS
        return {e: snap[base | e][0] for e in range(1 << g.FG_FICCRD_EVENT_BITS)}


def tcp_seg(
    flags: int = ACK,
    sport: int = 40000,
    dport: int = 80,
    src: str = H1,
    dst: str = H2,
    payload: int = 0,
    window: int = 65535,
    wscale: int | None = None,
) -> Packet:
    pkt = Packet(src, dst, sport, dport, 66 + payload, TCP, tcp_flags=flags, length=payload)
    pkt.window, pkt.wscale = window, wscale
    return pkt


def rd(
    kind: int = g.FG_KIND_RD_FORWARD,
    src: str = H2,
    dst: str = H1,
    key: int = 0x12345678,
    apr: int = 10_000,
    er: int = UNLIMITED,
    ts: int = 0,
    rtt: int = 0,
) -> Packet:
    hdr = RateHeader(kind=kind, ts_us=ts, rtt_us=rtt, rate_kbps=er)
    pkt = udp_packet(src, dst, g.FG_UDP_PORT, g.FG_UDP_PORT, rd_bytes(hdr, key, apr))
    assert pkt.size == RD_FRAME_BYTES == 78
    return pkt


def rds_of(pkts: list[Packet]) -> list[tuple[RateHeader, int, int]]:
    out = []
    for p in pkts:
        parsed = parse_rd(p)
        if parsed is not None:
            out.append(parsed)
    return out


# docs/ficcrd.md "Arrival rate": c(T) x step below K, by octave of T/K (shift pairs)
_C_SHIFTS = ((1, (2, 5)), (2, (3, 5)), (3, (4, 5)), (4, (5, 6)))


def apr_step(apr: int, gap: int, frame: int) -> int:
    """One step of the source edge's APR, transcribed from docs/ficcrd.md's table
    (not from the model)."""
    s = g.FG_FICCRD_APR_SHIFT
    k = 1 << s
    gain = frame * 8000
    if gap >= 4 * k:
        return ((gain >> 3) + (gain >> 4)) >> s
    if gap >= 2 * k:
        return (apr >> 4) + (((gain >> 2) + (gain >> 4) + (gain >> 6)) >> s)
    if gap >= k:
        return (apr >> 2) + (((gain >> 1) + (gain >> 5)) >> s)
    d = abs(gain - gap * apr)
    for octave, (a, b) in _C_SHIFTS:
        if gap >= k >> octave:
            d = d - (d >> a) - (d >> b)
            break
    return apr + (d >> s) if gain >= gap * apr else apr - (d >> s)


def apr_after(gaps_us: list[int], frame: int) -> int:
    """APR after a flow's first packet (APR 0) and one packet per gap."""
    apr = 0
    for gap in gaps_us:
        apr = apr_step(apr, gap, frame)
    return apr


def test_rd_emission_proportional() -> None:
    """k = 4: flows of 24, 8 and 3 packets give 6, 2 and 0 RDs of 78 B each (flow key,
    APR, ER all-ones, the flow's addresses); the data packets leave unchanged."""
    r = Rig()
    k = 4
    r.set_source(HOST, k)
    r.clone_session(NET)
    flows = {40001: 24, 40002: 8, 40003: 3}
    for i in range(max(flows.values())):
        for sport, n in flows.items():
            if i < n:
                r.send(HOST, tcp_seg(sport=sport, payload=200))
    out = r.collect(NET)
    tcp = [p for p in out if p.proto == TCP]
    assert len(tcp) == sum(flows.values()) and all(p.window == 65535 for p in tcp)
    per_flow: dict[int, int] = {}
    for p in out:
        if p.proto != UDP:
            continue
        parsed = parse_rd(p)
        assert parsed is not None
        hdr, key, _apr = parsed
        assert p.size == 78 and (p.src, p.dst) == (H1, H2)
        assert (hdr.kind, hdr.rate_kbps, p.sport, p.dport) == (
            g.FG_KIND_RD_FORWARD,
            UNLIMITED,
            g.FG_UDP_PORT,
            g.FG_UDP_PORT,
        )
        per_flow[key] = per_flow.get(key, 0) + 1
    assert per_flow == {flow_key(H1, H2, s, 80): n // k for s, n in flows.items() if n >= k}
    ev = r.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)
    assert ev[g.FG_EDGE_RD_EMITTED] == sum(n // k for n in flows.values())
    assert ev[g.FG_EDGE_FLOW_STARTED] == 3
    # A clone never arrived: port_departures counts the data only.
    assert r.sw.departures[NET][0] == sum(flows.values())


def test_rd_carries_per_packet_arrival_rate() -> None:
    """k = 9: eight frames 1 ms apart, a 400 ms pause (between K and 2K), a ninth: its
    RD carries the per-packet average after all nine: a quarter of the burst's estimate
    plus 0.531 of one frame per K."""
    r = Rig()
    r.set_source(HOST, 9)
    r.clone_session(NET)
    frame = 66 + 500
    for i in range(8):
        r.send(HOST, tcp_seg(sport=41000, payload=500), at=0.001 * (i + 1))
    r.send(HOST, tcp_seg(sport=41000, payload=500), at=0.407)
    (hdr, _key, apr), *rest = rds_of(r.collect(NET))
    assert not rest
    idx = flow_key(H1, H2, 41000, 80) & g.FG_FICCRD_FLOW_MASK
    burst = apr_after([1000] * 7, frame)
    assert apr == r.fc.flow_apr[idx] == apr_after([1000] * 7 + [400_000], frame)
    k = 1 << g.FG_FICCRD_APR_SHIFT
    assert apr == (burst >> 2) + (((frame * 8000 >> 1) + (frame * 8000 >> 5)) >> 18)
    assert abs(apr - (burst * math.exp(-400_000 / k) + frame * 8000 * 0.535 / k)) < 0.15 * burst
    # The RD is stamped with the time it entered the queue (the 9th packet's egress).
    assert hdr.ts_us == 407_000


def test_rd_arrival_rate_mid_stream() -> None:
    """k = 12: twelve frames 2 ms apart; the RD's APR is the average after eleven 2 ms
    gaps, climbing towards frame x 8000 / 2000 kbit/s (not there yet: 22 ms << K)."""
    r = Rig()
    r.set_source(HOST, 12)
    r.clone_session(NET)
    frame = 66 + 1000
    for i in range(12):
        r.send(HOST, tcp_seg(sport=41001, payload=1000), at=0.002 * (i + 1))
    ((_hdr, _key, apr),) = rds_of(r.collect(NET))
    assert apr == apr_after([2000] * 11, frame)
    assert 0 < apr < frame * 8000 // 2000


def test_rd_interval_zero_emits_nothing() -> None:
    r = Rig()
    r.set_source(HOST, 0)
    r.clone_session(NET)
    for _ in range(6):
        r.send(HOST, tcp_seg(sport=42000, payload=100))
    out = r.collect(NET)
    assert len(out) == 6 and all(p.proto == TCP for p in out)
    assert r.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)[g.FG_EDGE_FLOW_STARTED] == 1


def test_turnaround_at_destination_edge() -> None:
    """A forward RD routed to an edge port goes back out of the port it came in by:
    addresses and ports swapped, kind RD_BACKWARD, everything else unchanged."""
    r = Rig()
    r.set_edge(HOST)
    r.send(NET, rd(src=H2, dst=H1, apr=1234, er=5678, ts=424242, rtt=99))
    assert r.collect(HOST) == []
    (back,) = r.collect(NET)
    hdr, key, apr = parse_rd(back)  # type: ignore[misc]
    assert (back.src, back.dst) == (H1, H2)
    assert (hdr.kind, hdr.rate_kbps, hdr.ts_us, hdr.rtt_us) == (
        g.FG_KIND_RD_BACKWARD,
        5678,
        424242,
        99,
    )
    assert (key, apr) == (0x12345678, 1234)
    assert r.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_RD_TURNED] == 1
    # counted where it goes now: arrivals of port NET
    assert r.sw.arrivals[NET][0] == 1


def test_core_mapr_update() -> None:
    """Forward RDs through core queue NET: the first APR is taken, then MAPR +=
    (APR - MAPR) >> 4 both ways while Q <= Q0; APR 0 is ignored; the RD is unchanged."""
    r = Rig()
    r.set_dpf(NET, 0, 1000, g.FG_DPF_ONE, above_q0=False)
    mapr = 0
    for apr in (16_000, 32_000, 32_000, 8_000, 0, 100_000):
        r.send(HOST, rd(src=H1, dst=H2, apr=apr))
        (hdr, _k, out_apr), *_ = rds_of(r.collect(NET))
        assert (hdr.kind, hdr.rate_kbps, out_apr) == (g.FG_KIND_RD_FORWARD, UNLIMITED, apr)
        if apr == 0:
            pass
        elif mapr == 0:
            mapr = apr
        elif apr < mapr:
            mapr -= (mapr - apr) >> 4
        else:
            mapr += (apr - mapr) >> 4
        assert r.fc.mapr[NET] == mapr, f"after APR {apr}"
    ev = r.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
    assert ev[g.FG_CORE_MAPR_UPDATED] == 5 and ev[g.FG_CORE_APR_UNKNOWN] == 1


def test_core_mapr_only_down_above_q0() -> None:
    r = Rig()
    r.set_dpf(NET, 0, 1000, g.FG_DPF_ONE, above_q0=False)
    r.send(HOST, rd(src=H1, dst=H2, apr=20_000))
    assert r.fc.mapr[NET] == 20_000
    r.set_dpf(NET, 0, 1000, 512, above_q0=True)
    r.send(HOST, rd(src=H1, dst=H2, apr=40_000))
    assert r.fc.mapr[NET] == 20_000
    r.send(HOST, rd(src=H1, dst=H2, apr=4_000))
    assert r.fc.mapr[NET] == 20_000 - (16_000 >> 4)
    r.send(NET, rd(src=H2, dst=H1, apr=4_000))  # port HOST has no DPF: no core queue
    r.collect(NET)
    r.collect(HOST)
    assert r.fc.mapr[HOST] == 0
    assert r.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)[g.FG_CORE_MAPR_HELD] == 1


def test_core_er_min_dpf_mapr() -> None:
    """A backward RD in through core queue NET: ER = min(ER, MAPR x DPF >> 10), DPF from
    the entry of its depth (the controller's own table at Q = 0 among them)."""
    r = Rig()
    levels = fc.dpf_levels(buffer_pkts=64, bur=0.5, alpha=1.15)
    q0_level = next(lv for lv in levels if lv.lo == 0)
    r.set_dpf(NET, 0, 0, q0_level.dpf, q0_level.above_q0)
    mapr = 10_000
    r.send(HOST, rd(src=H1, dst=H2, apr=mapr))
    r.collect(NET)
    assert r.fc.mapr[NET] == mapr
    for dpf, er in [(q0_level.dpf, UNLIMITED), (q0_level.dpf, 5_000), (512, 9_000), (0, 100)]:
        r.set_dpf(NET, 0, 0, dpf, dpf < g.FG_DPF_ONE)
        r.send(NET, rd(kind=g.FG_KIND_RD_BACKWARD, src=H2, dst=H1, er=er))
        (hdr, _k, _a), *_ = rds_of(r.collect(HOST))
        assert hdr.rate_kbps == min(er, (mapr * dpf) >> g.FG_DPF_SHIFT)
    assert q0_level.dpf > g.FG_DPF_ONE
    ev = r.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
    assert ev[g.FG_CORE_ER_LOWERED] == 3 and ev[g.FG_CORE_ER_KEPT] == 1


def test_core_er_needs_mapr() -> None:
    r = Rig()
    r.set_dpf(NET, 0, 1000, 1178, above_q0=False)
    r.send(NET, rd(kind=g.FG_KIND_RD_BACKWARD, er=7_000))
    (hdr, _k, _a), *_ = rds_of(r.collect(HOST))
    assert hdr.rate_kbps == 7_000
    assert r.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)[g.FG_CORE_MAPR_UNKNOWN] == 1


def _handshake_and_rd(r: Rig, sport: int, wscale: int | None, er: int) -> None:
    """SYN, SYN-ACK (the receiver's shift), one data packet (k = 1) and its RD, which
    comes back with ``er`` and is consumed."""
    r.send(HOST, tcp_seg(SYN, sport=sport, wscale=7 if wscale is not None else None))
    r.send(NET, tcp_seg(SYN | ACK, sport=80, dport=sport, src=H2, dst=H1, wscale=wscale))
    assert len(r.collect(HOST)) == 1
    r.send(HOST, tcp_seg(sport=sport, payload=100))
    (fwd, key, apr), *_ = rds_of(r.collect(NET))
    back = rd(g.FG_KIND_RD_BACKWARD, src=H2, dst=H1, key=key, apr=apr, er=er, ts=fwd.ts_us)
    r.send(NET, back)
    assert r.collect(HOST) == []  # consumed


def test_window_rewrite() -> None:
    """The edge learns the receiver's shift from the SYN-ACK and ER from the consumed RD,
    and lowers the window of ACKs to the sender to max(ER x max(RTT, rtt_min) >> 13,
    2920) >> wscale; a window already below the limit is untouched."""
    r = Rig()
    rtt_min = 2_000_000
    r.set_source(HOST, 1)
    r.set_edge(HOST, rtt_min)
    r.clone_session(NET)
    cases = [(43001, 7, 8_000), (43002, None, 200), (43003, 0, 100), (43004, 14, 800_000)]
    rewritten = 0
    for sport, wscale, er in cases:
        _handshake_and_rd(r, sport, wscale, er)
        limit = max(max((er * rtt_min) >> 13, g.FG_FICCRD_MIN_WINDOW) >> (wscale or 0), 1)
        for window in (65535, 40000, limit, max(limit - 1, 0)):
            r.send(NET, tcp_seg(ACK, sport=80, dport=sport, src=H2, dst=H1, window=window))
            (ack,) = r.collect(HOST)
            assert ack.window == min(window, limit)
            rewritten += window > limit
    ev = r.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)
    assert ev[g.FG_EDGE_WINDOW_REWRITTEN] == rewritten > 4
    assert ev[g.FG_EDGE_WSCALE_LEARNED] == len(cases)
    assert ev[g.FG_EDGE_RD_CONSUMED] == len(cases)


def test_window_counts_handshake_rtt() -> None:
    """RTT = RD round trip + handshake (SYN leaving -> the sender's next segment leaving,
    a retransmitted SYN restarting it); a flow first seen mid-connection has none."""
    r = Rig()
    er = 200
    r.set_source(HOST, 1)
    r.set_edge(HOST, 1000)
    r.clone_session(NET)
    sport = 43100
    slot = flow_key(H1, H2, sport, 80) & g.FG_FICCRD_FLOW_MASK
    r.send(HOST, tcp_seg(SYN, sport=sport), at=1.0)
    r.send(HOST, tcp_seg(SYN, sport=sport), at=1.2)  # retransmitted
    r.send(NET, tcp_seg(SYN | ACK, sport=80, dport=sport, src=H2, dst=H1), at=1.25)
    assert len(r.collect(HOST)) == 1
    r.send(HOST, tcp_seg(sport=sport, payload=100), at=1.5)
    assert r.fc.flow_base_rtt[slot] == 300_000
    (fwd, key, apr), *_ = rds_of(r.collect(NET))
    r.send(NET, rd(g.FG_KIND_RD_BACKWARD, H2, H1, key, apr, er, fwd.ts_us), at=1.54)
    assert r.fc.flow_rtt[slot] == 40_000
    r.send(NET, tcp_seg(ACK, sport=80, dport=sport, src=H2, dst=H1))
    (ack,) = r.collect(HOST)
    assert ack.window == max((er * (40_000 + 300_000)) >> 13, g.FG_FICCRD_MIN_WINDOW) == 8300
    # first seen mid-connection: the RD round trip alone
    mid = 43101
    r.send(HOST, tcp_seg(sport=mid, payload=100), at=2.0)
    (fwd, key, apr), *_ = rds_of(r.collect(NET))
    r.send(NET, rd(g.FG_KIND_RD_BACKWARD, H2, H1, key, apr, er, fwd.ts_us), at=2.5)
    assert r.fc.flow_base_rtt[key & g.FG_FICCRD_FLOW_MASK] == 0
    r.send(NET, tcp_seg(ACK, sport=80, dport=mid, src=H2, dst=H1))
    (ack,) = r.collect(HOST)
    assert ack.window == max((er * 500_000) >> 13, g.FG_FICCRD_MIN_WINDOW)
    assert r.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)[g.FG_EDGE_BASE_RTT_LEARNED] == 1
    assert r.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_WINDOW_REWRITTEN] == 2


def test_untouched_traffic() -> None:
    """UDP (plain and rate-header data), TCP from a port without a source entry and ACKs
    of flows the edge never classified pass unchanged, with no RD."""
    r = Rig()
    r.set_source(HOST, 1)
    r.set_edge(HOST, 100_000)
    r.clone_session(NET)
    r.clone_session(HOST)
    r.set_dpf(NET, 0, 1000, 1178, above_q0=False)
    r.set_dpf(HOST, 0, 1000, 1178, above_q0=False)
    data = RateHeader(rate_kbps=5000).pack() + bytes(40)
    for _ in range(3):
        r.send(HOST, udp_packet(H1, H2, 5000, 6000, bytes(80)))
        r.send(HOST, udp_packet(H1, H2, 40000, g.FG_UDP_PORT, data))
        r.send(NET, tcp_seg(sport=80, dport=44000, src=H1, dst=H2, payload=1))
    out = r.collect(NET)
    assert len(out) == 9 and not rds_of(out)
    r.send(NET, tcp_seg(ACK, sport=80, dport=45000, src=H2, dst=H1, window=60000))
    (ack,) = r.collect(HOST)
    assert ack.window == 60000
    assert r.fc.mapr == [0] * g.FG_MAX_PORTS


def test_malformed_and_stale_rds() -> None:
    """An RD kind cut short (no room for fg_rd_t) passes unchanged, never turned or
    consumed; a backward RD for a key the edge does not hold is dropped as stale."""
    r = Rig()
    r.set_edge(HOST)
    r.set_edge(NET)
    r.set_dpf(NET, 0, 1000, 1178, above_q0=False)
    for kind in (g.FG_KIND_RD_FORWARD, g.FG_KIND_RD_BACKWARD):
        cut = rd(kind=kind, src=H2, dst=H1)
        assert cut.data is not None
        cut.data = bytes(cut.data[: len(cut.data) - 4])
        sent = bytes(cut.data)
        r.send(NET, cut)
        (out,) = r.collect(HOST)
        assert out.data == sent and (out.src, out.dst) == (H2, H1)
    assert r.collect(NET) == []
    r.send(NET, rd(kind=g.FG_KIND_RD_BACKWARD, src=H2, dst=H1, key=0xDEADBEEF, er=1))
    assert r.collect(HOST) == []
    assert r.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_RD_STALE] == 1
    assert r.fc.flow_er[0xDEADBEEF & g.FG_FICCRD_FLOW_MASK] == 0


def test_clone_queues_behind_and_sees_its_own_depth() -> None:
    """The RD clone enters the flow's queue behind what is there (E2E clone into the
    session's port): at a slow port the RD leaves after the queued data and updates the
    MAPR with its own enq depth; it is stamped with its enqueue time."""
    r = Rig()
    r.sw.ports[NET].params = PortParams(rate_Bps=1e5, depth=64)  # 1 ms per 100 B
    r.set_source(HOST, 4)
    r.clone_session(NET)
    r.set_dpf(NET, 0, 3, g.FG_DPF_ONE, above_q0=False)  # depths 0-3 only: a miss above
    for _ in range(8):  # at once: 1000 B frames, 10 ms each
        r.sw.receive(tcp_seg(sport=40010, payload=934), in_port=HOST)
    r.clock.run(1.0)
    out = r.out[NET]
    kinds = ["rd" if p.proto == UDP else "tcp" for p in out]
    # the 4th packet leaves at 30 ms with 4 queued: its RD (depth 4, no DPF entry) queues
    # behind them; the 8th leaves at 70 ms and its RD sees depth 1 (the first RD)
    assert kinds == ["tcp"] * 8 + ["rd"] * 2
    ev = r.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
    assert sum(ev.values()) == 1  # only the RD that saw depth <= 3 is a core event
    (first, _k, _a), _second = rds_of(out)
    assert first.ts_us == 30_000


def test_apr_update_fixed_point_is_the_rate() -> None:
    """At a steady rate (one frame every T < K) the average settles within its rounding
    dead band (2^18 / T kbit/s, over c(T)) of frame x 8000 / T, the exact rate: c(T)
    scales the step, not the point it moves to."""
    k = 1 << g.FG_FICCRD_APR_SHIFT
    for frame, gap in ((1514, 1_000), (4_066, 33_000), (78, 100), (1514, 200_000)):
        apr = 0
        for _ in range(200 * k // gap):
            apr = apr_update(apr, gap, frame)
        exact = frame * 8000 / gap
        assert abs(apr - exact) <= 1.5 * k / gap + 1, (frame, gap, apr, exact)


def test_apr_update_follows_csfq() -> None:
    """Against CSFQ's exact formula (the paper's Eqn. 1) from the same start, over gaps
    from 50 us to 2 s: below K one step is off by at most 13 % of the exact step (c(T)
    is constant per octave); from K up by at most 12 % of the old estimate and 20 % of
    one frame per K (w and g constant per octave)."""
    k = 1 << g.FG_FICCRD_APR_SHIFT
    for apr0 in (0, 300, 5_000, 40_000):
        for frame in (78, 1514, 4_066):
            for gap in (50, 2_000, 20_000, 40_000, 70_000, 100_000, 150_000, 250_000,
                        300_000, 500_000, 700_000, 1_000_000, 2_000_000):  # fmt: skip
                w = math.exp(-gap / k)
                exact = (1 - w) * frame * 8000 / gap + w * apr0
                got = apr_update(apr0, gap, frame)
                if gap < k:
                    bound = 0.13 * abs(exact - apr0) + 1
                else:
                    bound = 0.12 * apr0 + 0.2 * frame * 8000 / k + 1
                assert abs(got - exact) <= bound, (apr0, frame, gap, got, exact)


def test_apr_update_matches_the_documented_table() -> None:
    """The model against the table in docs/ficcrd.md, every octave and both signs."""
    k = 1 << g.FG_FICCRD_APR_SHIFT
    for apr0 in (0, 1, 77, 5_000, 123_456, 0xFFFF_FFFF):
        for frame in (60, 1514, 9_000):
            for gap in (0, 1, k >> 5, k >> 4, k >> 3, (k >> 2) + 7, k >> 1, k - 1, k,
                        2 * k - 1, 2 * k, 4 * k - 1, 4 * k, 0xFFFF_FFFF):  # fmt: skip
                assert apr_update(apr0, gap, frame) == apr_step(apr0, gap, frame) & 0xFFFF_FFFF


def test_apr_update_never_below_zero() -> None:
    """c(T) x T / K < 1 in every octave, so a down step never passes 0 (it would wrap
    to a huge 32-bit value): every gap below K, from a high estimate and a tiny frame."""
    k = 1 << g.FG_FICCRD_APR_SHIFT
    for gap in range(1, k, 97):
        assert apr_update(1_000_000, gap, 60) <= 1_000_000
        assert apr_update(0xFFFF_0000, gap, 60) <= 0xFFFF_0000
