"""FICCRD (issue #7): RD emission at the source edge, turnaround at the
destination edge, MAPR and ER = min(ER, DPF * MAPR) at core queues, receive
window rewriting with window scaling and a correct TCP checksum, and what
FICCRD must leave alone. Real packets; every output is compared byte for byte
with a packet built independently with Scapy.

Roles in these tests: hosts H1 (10.0.1.1) behind port 1, the network (and H2,
10.0.2.2) behind port 2. Port 1 is a source and edge port where a test says
so; port 2 is a core queue where a test installs ficcrd_dpf entries.
Registers are the data plane's own state: the tests read MAPR with the
Thrift CLI (the controller never reads registers) and reset them in setUp."""

from __future__ import annotations

import re
import struct
import time
import zlib

import finsy as fy
from finsy.p4entity import P4Replica
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from fairgate_p4 import generated as g
from fairgate_p4.scapy_layer import FgRate, FgRd
from fg_base import FgTestBase
from fg_packets import H1_IP, H2_IP, H2_MAC, HOST_MAC, SWITCH_MAC, with_bad_udp_checksum

HOST, NET = 1, 2
PREV_HOP_MAC = "00:00:00:00:00:aa"
REGISTERS = (
    "ficcrd_flow_key",
    "ficcrd_flow_last_us",
    "ficcrd_flow_apr",
    "ficcrd_flow_packets",
    "ficcrd_flow_er",
    "ficcrd_flow_rtt",
    "ficcrd_flow_wscale",
    "ficcrd_flow_syn_us",
    "ficcrd_flow_base_rtt",
    "ficcrd_mapr",
    "ficcrd_queue_seen",
)
UNLIMITED = g.FG_RATE_UNLIMITED


def flow_key(src: str, dst: str, sport: int, dport: int, proto: int = 6) -> int:
    """BMv2's crc32 over {src, dst, protocol, sport, dport} (13 bytes)."""
    data = (
        bytes(map(int, src.split(".")))
        + bytes(map(int, dst.split(".")))
        + struct.pack("!BHH", proto, sport, dport)
    )
    return zlib.crc32(data) & 0xFFFFFFFF


APR_K_US = 1 << g.FG_FICCRD_APR_SHIFT
LONG_GAP_S = 0.39  # between K (262 ms) and 2K: the switch's gap, whatever the jitter
LONG_GAP_US = 390_000
# docs/ficcrd.md "Arrival rate": c(T) x step below K, by octave of T/K (shift pairs)
C_SHIFTS = ((1, (2, 5)), (2, (3, 5)), (3, (4, 5)), (4, (5, 6)))


def apr_step(apr: int, gap: int, frame: int) -> int:
    """One step of the source edge's APR (kbit/s), transcribed from the table in
    docs/ficcrd.md (the paper's Eqn. 1 by shifts, K = 2^18 us)."""
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
    for octave, (a, b) in C_SHIFTS:
        if gap >= k >> octave:
            d = d - (d >> a) - (d >> b)
            break
    return apr + (d >> s) if gain >= gap * apr else apr - (d >> s)


def apr_after(gaps_us: list[int], frames: list[int]) -> int:
    """APR after a flow's first packet (APR 0), then frames[i] gaps_us[i] later."""
    apr = 0
    for gap, frame in zip(gaps_us, frames, strict=True):
        apr = apr_step(apr, gap, frame)
    return apr


def mapr_after(aprs: list[int], above_q0: bool = False) -> int:
    """A core queue's MAPR after forward RDs carrying ``aprs`` (APR 0 ignored, the
    first taken as is, then MAPR += (APR - MAPR) >> 4; above Q0 only down)."""
    mapr = 0
    for apr in aprs:
        if apr == 0:
            continue
        if mapr == 0:
            mapr = apr
        elif apr < mapr:
            mapr -= (mapr - apr) >> 4
        elif not above_q0:
            mapr += (apr - mapr) >> 4
    return mapr


def tcp_seg(
    flags: str = "PA",
    sport: int = 40000,
    dport: int = 80,
    payload: bytes = b"",
    src: str = H1_IP,
    dst: str = H2_IP,
    window: int = 65535,
    options: list | None = None,
    **tcp_fields,
) -> Ether:
    pkt = (
        Ether(src=HOST_MAC, dst=SWITCH_MAC)
        / IP(src=src, dst=dst, ttl=64, id=7)
        / TCP(
            sport=sport,
            dport=dport,
            flags=flags,
            seq=1000,
            ack=5000,
            window=window,
            options=options or [],
            **tcp_fields,
        )
    )
    if payload:
        pkt = pkt / Raw(payload)
    return Ether(bytes(pkt))


def from_net(pkt: Ether) -> Ether:
    out = Ether(bytes(pkt))
    out[Ether].src = PREV_HOP_MAC
    return Ether(bytes(out))


def routed_to(pkt: Ether, port: int, **tcp_fields) -> bytes:
    out = Ether(bytes(pkt))
    out[Ether].src = SWITCH_MAC
    out[Ether].dst = H2_MAC if port == NET else HOST_MAC
    out[IP].ttl -= 1
    del out[IP].chksum
    for name, value in tcp_fields.items():
        setattr(out[TCP], name, value)
    if tcp_fields:
        del out[TCP].chksum
    return bytes(Ether(bytes(out)))


def rd(
    kind: int = g.FG_KIND_RD_FORWARD,
    src: str = H2_IP,
    dst: str = H1_IP,
    key: int = 0x12345678,
    apr: int = 10_000,
    er: int = UNLIMITED,
    ts: int = 0,
    rtt: int = 0,
    udp_checksum: int | None = None,
    eth_src: str = PREV_HOP_MAC,
) -> Ether:
    pkt = (
        Ether(src=eth_src, dst=SWITCH_MAC)
        / IP(src=src, dst=dst, ttl=64, id=9)
        / UDP(sport=g.FG_UDP_PORT, dport=g.FG_UDP_PORT)
        / FgRate(kind=kind, rate_kbps=er, ts_us=ts, rtt_us=rtt)
        / FgRd(flow_key=key, apr_kbps=apr)
    )
    if udp_checksum is not None:
        pkt[UDP].chksum = udp_checksum
    return Ether(bytes(pkt))


class FiccrdTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.1.0/24", HOST, SWITCH_MAC, HOST_MAC)
        self.add_route("10.0.2.0/24", NET, SWITCH_MAC, H2_MAC)
        self.switch_cli([f"register_reset {r}" for r in REGISTERS])

    # ---- configuration (what the controller writes) -------------------------
    def set_source(self, port: int, rd_interval: int) -> None:
        self.insert(
            fy.P4TableEntry(
                g.TABLE_FICCRD_SOURCES,
                match=fy.Match(ingress_port=port),
                action=fy.Action(g.ACTION_SET_SOURCE_PORT, rd_interval=rd_interval),
            )
        )

    def set_edge(self, port: int, rtt_min_us: int = 0) -> None:
        self.insert(
            fy.P4TableEntry(
                g.TABLE_FICCRD_EDGES,
                match=fy.Match(egress_port=port),
                action=fy.Action(g.ACTION_SET_EDGE_PORT, rtt_min_us=rtt_min_us),
            )
        )

    def set_dpf(self, port: int, lo: int, hi: int, dpf: int, above_q0: bool) -> fy.P4TableEntry:
        entry = fy.P4TableEntry(
            g.TABLE_FICCRD_DPF,
            match=fy.Match(port=port, queue_depth=f"{lo}...{hi}"),
            action=fy.Action(g.ACTION_SET_DPF, dpf=dpf, above_q0=int(above_q0)),
            priority=1,
        )
        self.insert(entry)
        return entry

    def clone_session(self, port: int) -> None:
        self.insert(
            fy.P4CloneSessionEntry(
                session_id=g.FG_RD_SESSION_BASE + port, replicas=[P4Replica(port, instance=1)]
            )
        )

    # ---- observation ----------------------------------------------------------
    def register(self, name: str, index: int) -> int:
        out = self.switch_cli([f"register_read {name} {index}"])
        match = re.search(rf"{name}\[{index}\]\s*=\s*(\d+)", out)
        self.assertIsNotNone(match, out)
        return int(match.group(1))

    def events(self, counter: str, port: int) -> dict[int, int]:
        entries = self.read_counters(counter)
        base = port << g.FG_FICCRD_EVENT_BITS
        return {e: entries.get(base | e, (0, 0))[0] for e in range(1 << g.FG_FICCRD_EVENT_BITS)}

    def split(self, frames: list[bytes]) -> tuple[list[Ether], list[Ether]]:
        """(TCP packets, RD packets) of a port's output."""
        pkts = [Ether(f) for f in frames]
        rds = [p for p in pkts if FgRd in p]
        return [p for p in pkts if TCP in p], rds


class RdEmissionProportional(FiccrdTest):
    """One RD per k packets of each flow (k = 4): flows of 24, 8 and 3 packets
    interleaved give 6, 2 and 0 RDs,
    each an exact 78-byte forward RD (flow key, APR, ER = all-ones, UDP
    checksum 0, the data packet's IPv4 addresses, TTL and id). The data
    packets themselves leave unchanged."""

    def runTest(self) -> None:
        k = 4
        before = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)  # counters outlive a test
        self.set_source(HOST, k)
        self.clone_session(NET)
        flows = {40001: 24, 40002: 8, 40003: 3}
        sent: list[Ether] = []
        for i in range(max(flows.values())):
            for sport, n in flows.items():
                if i < n:
                    pkt = tcp_seg(sport=sport, payload=bytes([i]) * 200)
                    sent.append(pkt)
                    self.send(HOST, pkt)
        out = self.collect(NET)
        tcp_out, rds = self.split(out)
        self.assertEqual([bytes(p) for p in tcp_out], [routed_to(p, NET) for p in sent])
        per_flow: dict[int, int] = {}
        for pkt in rds:
            key = pkt[FgRd].flow_key
            per_flow[key] = per_flow.get(key, 0) + 1
            sport = next(s for s in flows if flow_key(H1_IP, H2_IP, s, 80) == key)
            expected = rd(
                src=H1_IP,
                dst=H2_IP,
                key=key,
                apr=pkt[FgRd].apr_kbps,  # checked in RdCarriesArrivalRate
                ts=pkt[FgRate].ts_us,
                udp_checksum=0,
                eth_src=SWITCH_MAC,
            )
            expected[Ether].dst = H2_MAC
            expected[IP].ttl = 63
            expected[IP].id = 7
            del expected[IP].chksum
            self.assertEqual(bytes(pkt), bytes(Ether(bytes(expected))), f"flow {sport}")
            self.assertEqual(len(bytes(pkt)), 78)
        expected_counts = {
            flow_key(H1_IP, H2_IP, s, 80): n // k for s, n in flows.items() if n >= k
        }
        self.assertEqual(per_flow, expected_counts)
        self.settle()
        ev = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)
        emitted = ev[g.FG_EDGE_RD_EMITTED] - before[g.FG_EDGE_RD_EMITTED]
        self.assertEqual(emitted, sum(n // k for n in flows.values()))
        self.assertEqual(ev[g.FG_EDGE_FLOW_STARTED] - before[g.FG_EDGE_FLOW_STARTED], 3)


class RdCarriesArrivalRate(FiccrdTest):
    """APR is the paper's per-packet exponential average (Eqn. 1 by shifts,
    K = 2^18 us): frames of 1514, 200, 1000 and 600 bytes, 390 ms apart
    (every gap from K to 2K is one case of the formula, so the value does not
    depend on the host's timing), k = 4: the 4th frame's RD carries exactly
    the average the formula gives, and the slot's register holds it."""

    def runTest(self) -> None:
        self.assertTrue(APR_K_US < LONG_GAP_US < 2 * APR_K_US)
        self.set_source(HOST, 4)
        self.clone_session(NET)
        sizes = [1514, 200, 1000, 600]
        sent = []
        for i, size in enumerate(sizes):
            if i:
                time.sleep(LONG_GAP_S)
            pkt = tcp_seg(sport=41000, payload=b"r" * (size - 54))
            self.assertEqual(len(bytes(pkt)), size)
            sent.append(pkt)
            self.send(HOST, pkt)
        tcp_out, rds = self.split(self.collect(NET))
        self.assertEqual(len(tcp_out), 4)
        self.assertEqual(len(rds), 1)
        want = apr_after([LONG_GAP_US] * 3, sizes[1:])
        self.assertEqual(rds[0][FgRd].apr_kbps, want)
        idx = flow_key(H1_IP, H2_IP, 41000, 80) & g.FG_FICCRD_FLOW_MASK
        self.assertEqual(self.register("ficcrd_flow_apr", idx), want)
        # not the last frame alone: the 600-byte frame's own K-long share is lower
        self.assertNotEqual(want, apr_after([LONG_GAP_US], [600]))


class RdArrivalRateOfABurst(FiccrdTest):
    """Back-to-back frames: each adds about frame x 8000 / K and the average
    decays by gap/K between them. Eight 566-byte frames sent within W ms
    (measured) give an RD (k = 8) whose APR lies between the formula with
    every gap 0 and with every gap W + 20 ms, a band the old 65.536 ms window's
    value (8 frames x 125 >> 10 = 552 kbit/s) lies far above."""

    def runTest(self) -> None:
        self.set_source(HOST, 8)
        self.clone_session(NET)
        pkts = [tcp_seg(sport=41100, payload=b"b" * 500) for _ in range(8)]
        frame = len(bytes(pkts[0]))
        start = time.monotonic()
        for pkt in pkts:
            self.send(HOST, pkt)
        span_us = int((time.monotonic() - start) * 1e6) + 1
        _tcp, rds = self.split(self.collect(NET))
        self.assertEqual(len(rds), 1)
        apr = rds[0][FgRd].apr_kbps
        hi = apr_after([0] * 7, [frame] * 7)
        # every gap at most the whole send span, plus 20 ms for BMv2's own scheduling
        # on a loaded machine (the switch may hold a packet the host already sent)
        lo = apr_after([span_us + 20_000] * 7, [frame] * 7)
        self.assertLessEqual(apr, hi)
        self.assertGreaterEqual(apr, lo, f"sends took {span_us} us")
        self.assertLess(hi, (8 * frame * 125) >> 10)


class EstimatorsVisibleInEr(FiccrdTest):
    """The whole chain through one switch, seen only in packet bytes: TCP
    frames from a source port (k = 1) make RDs whose APR is the edge's
    per-packet average; leaving by core queue port 2 (DPF 1.0, Q <= Q0) each
    updates that queue's MAPR; a backward RD coming in on port 2 then leaves
    with ER = MAPR x DPF >> 10 = MAPR. Frames 390 ms apart (K to 2K), so every
    value is exact; after each frame the backward RD's ER is the MAPR of the
    APRs so far."""

    def runTest(self) -> None:
        self.set_source(HOST, 1)
        self.clone_session(NET)
        self.set_dpf(NET, 0, 1000, g.FG_DPF_ONE, above_q0=False)
        sizes = [600, 1514, 1514, 300, 1200]
        back = rd(kind=g.FG_KIND_RD_BACKWARD, src=H2_IP, dst=H1_IP, er=UNLIMITED)
        for i, size in enumerate(sizes):
            if i:
                time.sleep(LONG_GAP_S - 0.05)
            self.send(HOST, tcp_seg(sport=41200, payload=b"e" * (size - 54)))
            time.sleep(0.05)  # the forward RD has left port 2 when the backward one comes
            self.send(NET, back)
        tcp_out, fwd = self.split(self.collect(NET))
        back_out = [Ether(f) for f in self.collect(HOST)]
        self.assertEqual((len(tcp_out), len(fwd), len(back_out)), (5, 5, 5))
        aprs = [apr_after([LONG_GAP_US] * i, sizes[1 : i + 1]) for i in range(len(sizes))]
        self.assertEqual([p[FgRd].apr_kbps for p in fwd], aprs)
        for i, out in enumerate(back_out):
            mapr = mapr_after(aprs[: i + 1])
            if mapr == 0:  # first frame: APR 0, unknown, ER untouched
                self.assertEqual(bytes(out), bytes(routed_rd(back, HOST)), f"frame {i}")
            else:
                want = routed_rd(back, HOST, rate_kbps=mapr)
                self.assertEqual(bytes(out), bytes(want), f"frame {i}: MAPR {mapr}")
        self.assertEqual(aprs[0], 0)
        self.assertNotEqual(mapr_after(aprs), aprs[-1])  # averaged, not the last sample
        self.expect_nothing()


class RdIntervalZero(FiccrdTest):
    """k = 0 disables RDs (the flow is still classified)."""

    def runTest(self) -> None:
        self.set_source(HOST, 0)
        self.clone_session(NET)
        pkts = [tcp_seg(sport=42000, payload=b"z" * 100) for _ in range(6)]
        for pkt in pkts:
            self.send(HOST, pkt)
        out = self.collect(NET)
        self.assertEqual(out, [routed_to(p, NET) for p in pkts])


class TurnaroundAtDestinationEdge(FiccrdTest):
    """A forward RD routed to an edge port goes back to the previous hop:
    addresses and UDP ports swapped, kind RD_BACKWARD, everything else
    (APR, ER, timestamp, flow key) unchanged. A zero UDP checksum stays zero;
    a non-zero one is recomputed."""

    def runTest(self) -> None:
        self.set_edge(HOST)
        before = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_RD_TURNED]
        for csum in (0, None):
            fwd = rd(src=H2_IP, dst=H1_IP, apr=1234, er=5678, ts=424242, rtt=99, udp_checksum=csum)
            self.send(NET, fwd)
            back = Ether(bytes(fwd))
            back[Ether].src = SWITCH_MAC
            back[Ether].dst = PREV_HOP_MAC
            back[IP].src, back[IP].dst = H1_IP, H2_IP
            back[IP].ttl = 63
            del back[IP].chksum
            back[FgRate].kind = g.FG_KIND_RD_BACKWARD
            if csum is None:
                del back[UDP].chksum
            out = Ether(bytes(back))
            if csum == 0:
                self.assertEqual(out[UDP].chksum, 0)
            self.expect(out, NET)
        self.expect_nothing()
        self.settle()
        after = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_RD_TURNED]
        self.assertEqual(after - before, 2)


class CoreMaprUpdate(FiccrdTest):
    """Forward RDs through a core queue (port 2) update its MAPR: the first
    sample is taken as is, then MAPR += (APR - MAPR) >> 4 (beta = 1/16) in
    both directions while Q <= Q0; the RD itself passes unchanged."""

    def runTest(self) -> None:
        self.set_dpf(NET, 0, 1000, g.FG_DPF_ONE, above_q0=False)
        before = self.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)  # counters outlive a test
        mapr = 0
        for apr in (16_000, 32_000, 32_000, 8_000, 0, 100_000):
            fwd = with_bad_udp_checksum(rd(src=H1_IP, dst=H2_IP, apr=apr, eth_src=HOST_MAC))
            self.send(HOST, fwd)
            self.expect(routed_rd(fwd, NET), NET)
            if apr == 0:
                pass  # APR unknown: MAPR untouched
            elif mapr == 0:
                mapr = apr
            elif apr < mapr:
                mapr -= (mapr - apr) >> 4
            else:
                mapr += (apr - mapr) >> 4
            self.assertEqual(self.register("ficcrd_mapr", NET), mapr, f"after APR {apr}")
        self.expect_nothing()
        self.settle()
        ev = self.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
        self.assertEqual(ev[g.FG_CORE_MAPR_UPDATED] - before[g.FG_CORE_MAPR_UPDATED], 5)
        self.assertEqual(ev[g.FG_CORE_APR_UNKNOWN] - before[g.FG_CORE_APR_UNKNOWN], 1)


class CoreMaprOnlyDownAboveQ0(FiccrdTest):
    """While the queue is above Q0 (the table's above_q0 bit for the queue
    depth) MAPR only moves down: a higher APR leaves it, a lower one pulls it.
    A port without ficcrd_dpf entries is no core queue: MAPR stays 0."""

    def runTest(self) -> None:
        entry = self.set_dpf(NET, 0, 1000, g.FG_DPF_ONE, above_q0=False)
        self.send(HOST, rd(src=H1_IP, dst=H2_IP, apr=20_000, eth_src=HOST_MAC))
        self.assertEqual(self.register("ficcrd_mapr", NET), 20_000)
        self.modify(
            fy.P4TableEntry(
                g.TABLE_FICCRD_DPF,
                match=entry.match,
                action=fy.Action(g.ACTION_SET_DPF, dpf=512, above_q0=1),
                priority=1,
            )
        )
        self.send(HOST, rd(src=H1_IP, dst=H2_IP, apr=40_000, eth_src=HOST_MAC))
        self.assertEqual(self.register("ficcrd_mapr", NET), 20_000)
        self.send(HOST, rd(src=H1_IP, dst=H2_IP, apr=4_000, eth_src=HOST_MAC))
        self.assertEqual(self.register("ficcrd_mapr", NET), 20_000 - (16_000 >> 4))
        self.send(NET, rd(src=H2_IP, dst=H1_IP, apr=4_000))
        self.assertEqual(self.register("ficcrd_mapr", HOST), 0)
        self.collect(NET)
        self.collect(HOST)
        self.settle()
        ev = self.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
        self.assertEqual(ev[g.FG_CORE_MAPR_HELD], 1)


def routed_rd(pkt: Ether, port: int, **fields) -> Ether:
    out = Ether(bytes(pkt))
    out[Ether].src = SWITCH_MAC
    out[Ether].dst = H2_MAC if port == NET else HOST_MAC
    out[IP].ttl -= 1
    del out[IP].chksum
    for name, value in fields.items():
        setattr(out[FgRate], name, value)
    if fields and out[UDP].chksum != 0:
        del out[UDP].chksum
    return Ether(bytes(out))


class CoreErMinDpfMapr(FiccrdTest):
    """A backward RD that came in through core queue port 2 (where the flow's
    data leaves) gets ER = min(ER, DPF(Q) * MAPR >> 10) with DPF from the
    ficcrd_dpf entry of Q; a lower ER is kept. Checked for several table
    values, including the controller's own DPF table (fairgate_controller.
    ficcrd) at Q = 0 (alpha = 1.15)."""

    def runTest(self) -> None:
        from fairgate_controller.ficcrd import dpf as dpf_of
        from fairgate_controller.ficcrd import dpf_levels, to_fixed

        levels = dpf_levels(buffer_pkts=64, bur=0.5, alpha=1.15)
        q0_level = next(lv for lv in levels if lv.lo == 0)
        entry = self.set_dpf(NET, 0, 0, q0_level.dpf, above_q0=q0_level.above_q0)
        before = self.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)  # counters outlive a test
        mapr = 10_000
        self.send(HOST, rd(src=H1_IP, dst=H2_IP, apr=mapr, eth_src=HOST_MAC))
        self.collect(NET)
        self.assertEqual(self.register("ficcrd_mapr", NET), mapr)
        cases = [(q0_level.dpf, UNLIMITED), (q0_level.dpf, 5_000), (512, 9_000), (0, 100)]
        for dpf, er in cases:
            self.modify(
                fy.P4TableEntry(
                    g.TABLE_FICCRD_DPF,
                    match=entry.match,
                    action=fy.Action(g.ACTION_SET_DPF, dpf=dpf, above_q0=int(dpf < 1024)),
                    priority=1,
                )
            )
            back = rd(kind=g.FG_KIND_RD_BACKWARD, src=H2_IP, dst=H1_IP, er=er)
            self.send(NET, back)
            want = min(er, (mapr * dpf) >> g.FG_DPF_SHIFT)
            if want != er:
                self.expect(routed_rd(back, HOST, rate_kbps=want), HOST)
            else:
                self.expect(routed_rd(back, HOST), HOST)
        mid = (q0_level.lo + q0_level.hi) / 2
        self.assertEqual(q0_level.dpf, to_fixed(dpf_of(mid, 64, 0.5, 1.15)))
        self.assertGreater(q0_level.dpf, g.FG_DPF_ONE)
        self.expect_nothing()
        self.settle()
        ev = self.events(g.COUNTER_FICCRD_CORE_EVENTS, NET)
        self.assertEqual(ev[g.FG_CORE_ER_LOWERED] - before[g.FG_CORE_ER_LOWERED], 3)
        self.assertEqual(ev[g.FG_CORE_ER_KEPT] - before[g.FG_CORE_ER_KEPT], 1)


class CoreErNeedsMapr(FiccrdTest):
    """Before any forward RD (MAPR unknown) a backward RD passes unchanged,
    never ER = 0."""

    def runTest(self) -> None:
        self.set_dpf(NET, 0, 1000, 1178, above_q0=False)
        back = with_bad_udp_checksum(rd(kind=g.FG_KIND_RD_BACKWARD, er=7_000))
        self.send(NET, back)
        self.expect(routed_rd(back, HOST), HOST)
        self.expect_nothing()


class WindowRewrite(FiccrdTest):
    """The source edge learns the receiver's window scale from the SYN-ACK,
    keeps ER and the RD round trip from the backward RD it consumes, and
    lowers the window of ACKs going to the sender to ER x max(RTT, rtt_min)
    >> wscale (RTT: the RD's plus the handshake's, both far below rtt_min
    here), with an incrementally updated TCP checksum equal to a full
    recomputation. SYN options pass byte for byte; a window already below the
    limit is untouched (even its wrong checksum stays wrong)."""

    def flow(self, sport: int, wscale: int | None, er: int, rtt_min: int) -> None:
        syn_opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0)), ("NOP", None)]
        if wscale is not None:
            syn_opts.append(("WScale", 7))
        syn = tcp_seg("S", sport=sport, options=syn_opts)
        self.send(HOST, syn)
        self.expect(routed_to(syn, NET), NET)
        synack_opts = [("MSS", 1460), ("NOP", None), ("NOP", None), ("SAckOK", b"")]
        if wscale is not None:
            synack_opts = [("WScale", wscale), ("NOP", None), *synack_opts]
        synack = from_net(
            tcp_seg("SA", sport=80, dport=sport, src=H2_IP, dst=H1_IP, options=synack_opts)
        )
        self.send(NET, synack)
        self.expect(routed_to(synack, HOST), HOST)
        # one data packet emits an RD (k = 1); the far edge would turn it around
        data = tcp_seg(sport=sport, payload=b"d" * 100)
        self.send(HOST, data)
        self.expect(routed_to(data, NET), NET)
        _tcp, rds = self.split(self.collect(NET))
        self.assertEqual(len(rds), 1)
        fwd = rds[0]
        back = rd(
            kind=g.FG_KIND_RD_BACKWARD,
            src=H2_IP,
            dst=H1_IP,
            key=fwd[FgRd].flow_key,
            apr=fwd[FgRd].apr_kbps,
            er=er,
            ts=fwd[FgRate].ts_us,
        )
        self.send(NET, back)  # consumed: nothing comes out

    def runTest(self) -> None:
        # above the RD round trip of this test (collect() waits for quiet), so
        # that ER x RTT is known exactly
        rtt_min = 2_000_000
        self.set_source(HOST, 1)
        self.set_edge(HOST, rtt_min)
        self.clone_session(NET)
        cases = [(43001, 7, 8_000), (43002, None, 200), (43003, 0, 100), (43004, 14, 800_000)]
        rewritten = 0
        for sport, wscale, er in cases:
            self.flow(sport, wscale, er, rtt_min)
            limit = max((er * rtt_min) >> 13, g.FG_FICCRD_MIN_WINDOW) >> (wscale or 0)
            limit = max(limit, 1)
            for window, payload in ((65535, b""), (40000, b"ack with data" * 3), (limit, b"")):
                ack = from_net(
                    tcp_seg(
                        "A",
                        sport=80,
                        dport=sport,
                        src=H2_IP,
                        dst=H1_IP,
                        window=window,
                        payload=payload,
                    )
                )
                self.send(NET, ack)
                if limit < window:
                    rewritten += 1
                    want = routed_to(ack, HOST, window=limit)
                    self.expect(Ether(want), HOST)
                else:
                    self.expect(Ether(routed_to(ack, HOST)), HOST)
            # a window already below the limit with a wrong checksum stays as it is
            low = from_net(
                tcp_seg("A", sport=80, dport=sport, src=H2_IP, dst=H1_IP, window=max(limit - 1, 0))
            )
            low[TCP].chksum ^= 0x5A5A
            self.send(NET, low)
            self.expect(Ether(routed_to(low, HOST)), HOST)
        self.expect_nothing()
        self.settle()
        ev = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)
        self.assertEqual(ev[g.FG_EDGE_WINDOW_REWRITTEN], rewritten)
        self.assertEqual(ev[g.FG_EDGE_WSCALE_LEARNED], len(cases))
        self.assertEqual(ev[g.FG_EDGE_RD_CONSUMED], len(cases))
        self.assertGreater(rewritten, 4)


class WindowCountsHandshakeRtt(FiccrdTest):
    """The RD only travels edge to edge, so the source edge also measures each
    flow's handshake round trip (its SYN leaving to the sender's next segment
    leaving: access links included) and limits the window to
    ER x max(RD RTT + handshake RTT, rtt_min). A retransmitted SYN restarts the
    measurement; a flow first seen mid-connection has none (RD RTT only)."""

    ER = 200  # kbit/s: 300 ms of it is 7.3 kB, a few ms of it is below the 2920 B floor

    def consume_rd(self, sport: int) -> None:
        _tcp, rds = self.split(self.collect(NET))
        self.assertEqual(len(rds), 1)
        fwd = rds[0]
        self.assertEqual(fwd[FgRd].flow_key, flow_key(H1_IP, H2_IP, sport, 80))
        back = rd(
            kind=g.FG_KIND_RD_BACKWARD,
            key=fwd[FgRd].flow_key,
            apr=fwd[FgRd].apr_kbps,
            er=self.ER,
            ts=fwd[FgRate].ts_us,
        )
        self.send(NET, back)  # consumed: nothing comes out
        self.expect_nothing()

    def window_after(self, sport: int) -> int:
        ack = from_net(tcp_seg("A", sport=80, dport=sport, src=H2_IP, dst=H1_IP))
        self.send(NET, ack)
        out = Ether(self.collect(HOST)[0])
        self.assertEqual(
            out[TCP].chksum, Ether(routed_to(out, HOST, window=out[TCP].window))[TCP].chksum
        )
        return out[TCP].window

    def runTest(self) -> None:
        self.set_source(HOST, 1)
        self.set_edge(HOST, 1000)  # rtt_min 1 ms: below every round trip here
        self.clone_session(NET)
        learned0 = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)[g.FG_EDGE_BASE_RTT_LEARNED]
        rewritten0 = self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_WINDOW_REWRITTEN]
        sport = 43100
        slot = flow_key(H1_IP, H2_IP, sport, 80) & g.FG_FICCRD_FLOW_MASK
        syn = tcp_seg("S", sport=sport)
        self.send(HOST, syn)
        self.expect(routed_to(syn, NET), NET)
        time.sleep(0.2)
        t0 = time.monotonic()
        self.send(HOST, syn)  # retransmitted: the measurement starts again
        self.expect(routed_to(syn, NET), NET)
        synack = from_net(tcp_seg("SA", sport=80, dport=sport, src=H2_IP, dst=H1_IP))
        self.send(NET, synack)
        self.expect(routed_to(synack, HOST), HOST)
        time.sleep(0.3)  # the sender's access link, as it were
        data = tcp_seg(sport=sport, payload=b"d" * 100)
        self.send(HOST, data)
        elapsed_us = (time.monotonic() - t0) * 1e6
        self.expect(routed_to(data, NET), NET)
        base = self.register("ficcrd_flow_base_rtt", slot)
        self.assertGreaterEqual(base, 300_000)
        self.assertLessEqual(base, elapsed_us + 50_000)
        self.assertLess(base, 500_000, "measured from the first SYN, not the retransmission")
        self.consume_rd(sport)
        rtt = self.register("ficcrd_flow_rtt", slot)
        self.assertGreater(rtt, 0)
        want = max((self.ER * max(rtt + base, 1000)) >> 13, g.FG_FICCRD_MIN_WINDOW)
        self.assertGreater(want, g.FG_FICCRD_MIN_WINDOW)
        self.assertEqual(self.window_after(sport), want)

        # first seen mid-connection: no handshake, the RD round trip alone
        mid = 43101
        mid_slot = flow_key(H1_IP, H2_IP, mid, 80) & g.FG_FICCRD_FLOW_MASK
        data = tcp_seg(sport=mid, payload=b"d" * 100)
        time.sleep(0.3)
        self.send(HOST, data)
        self.expect(routed_to(data, NET), NET)
        self.consume_rd(mid)
        self.assertEqual(self.register("ficcrd_flow_base_rtt", mid_slot), 0)
        rtt = self.register("ficcrd_flow_rtt", mid_slot)
        want = max((self.ER * max(rtt, 1000)) >> 13, g.FG_FICCRD_MIN_WINDOW)
        self.assertEqual(self.window_after(mid), want)
        self.expect_nothing()
        self.settle()
        self.assertEqual(
            self.events(g.COUNTER_FICCRD_EDGE_EVENTS, NET)[g.FG_EDGE_BASE_RTT_LEARNED] - learned0,
            1,
        )
        self.assertEqual(
            self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_WINDOW_REWRITTEN]
            - rewritten0,
            2,
        )


class UntouchedTraffic(FiccrdTest):
    """With every FICCRD role configured: UDP (plain and rate-header data),
    TCP from a port without a source entry, and ACKs of flows the edge never
    classified pass byte for byte, with no RD and no rewrite."""

    def runTest(self) -> None:
        self.set_source(HOST, 1)
        self.set_edge(HOST, 100_000)
        self.clone_session(NET)
        self.clone_session(HOST)
        self.set_dpf(NET, 0, 1000, 1178, above_q0=False)
        self.set_dpf(HOST, 0, 1000, 1178, above_q0=False)
        plain_udp = Ether(
            bytes(
                Ether(src=HOST_MAC, dst=SWITCH_MAC)
                / IP(src=H1_IP, dst=H2_IP)
                / UDP(sport=5000, dport=6000)
                / Raw(b"u" * 80)
            )
        )
        fg_data = Ether(
            bytes(
                Ether(src=HOST_MAC, dst=SWITCH_MAC)
                / IP(src=H1_IP, dst=H2_IP)
                / UDP(sport=40000, dport=g.FG_UDP_PORT)
                / FgRate(rate_kbps=5000)
                / Raw(b"p" * 40)
            )
        )
        for pkt in (plain_udp, with_bad_udp_checksum(fg_data)):
            for _ in range(3):
                self.send(HOST, pkt)
                self.expect(Ether(routed_to(pkt, NET)), NET)
        # TCP from the network side (no source entry on port 2), to a non-edge port
        for _ in range(3):
            pkt = from_net(tcp_seg(sport=80, dport=44000, src=H1_IP, dst=H2_IP, payload=b"n"))
            self.send(NET, pkt)
            self.expect(Ether(routed_to(pkt, NET)), NET)
        # an ACK to the host for a flow never seen at this edge
        ack = from_net(tcp_seg("A", sport=80, dport=45000, src=H2_IP, dst=H1_IP, window=60000))
        self.send(NET, ack)
        self.expect(Ether(routed_to(ack, HOST)), HOST)
        self.expect_nothing()


class MalformedRd(FiccrdTest):
    """An RD kind cut short (no room for fg_rd_t, also when Ethernet padding
    would fill it) is forwarded unchanged and counted as FG_RD_TRUNCATED,
    never turned around or consumed; a backward RD whose flow key the edge
    does not hold is dropped and counted as stale, its slot untouched."""

    def runTest(self) -> None:
        self.set_edge(HOST)
        self.set_edge(NET)
        self.set_dpf(NET, 0, 1000, 1178, above_q0=False)
        full = bytes(rd(src=H2_IP, dst=H1_IP))
        udp_at = 14 + 20
        cut = Ether(full[: udp_at + 8 + g.FG_HEADER_BYTES + 4])
        cut[IP].len = 20 + 8 + g.FG_HEADER_BYTES + 4
        cut[UDP].len = 8 + g.FG_HEADER_BYTES + 4
        del cut[IP].chksum
        cut = Ether(bytes(cut))
        cut[UDP].chksum ^= 0x1111  # whatever it is, it must come out as it went in
        padded = Ether(bytes(cut) + b"\x00" * 8)
        before = self.anomaly_count(g.FG_ANOMALY_FG_RD_TRUNCATED)
        for pkt in (cut, padded):
            for kind in (g.FG_KIND_RD_FORWARD, g.FG_KIND_RD_BACKWARD):
                p = Ether(bytes(pkt))
                p[FgRate].kind = kind
                p = Ether(bytes(p))
                self.send(NET, p)
                out = Ether(bytes(p))
                out[Ether].src = SWITCH_MAC
                out[Ether].dst = HOST_MAC
                out[IP].ttl -= 1
                del out[IP].chksum
                self.expect(Ether(bytes(out)), HOST)
        self.expect_nothing()
        self.settle()
        self.assertEqual(self.anomaly_count(g.FG_ANOMALY_FG_RD_TRUNCATED) - before, 4)
        # stale: no flow with this key at the edge
        stale = rd(kind=g.FG_KIND_RD_BACKWARD, src=H2_IP, dst=H1_IP, key=0xDEADBEEF, er=1)
        self.send(NET, stale)
        self.expect_nothing()
        self.settle()
        self.assertEqual(self.events(g.COUNTER_FICCRD_EDGE_EVENTS, HOST)[g.FG_EDGE_RD_STALE], 1)
        self.assertEqual(self.register("ficcrd_flow_er", 0xDEADBEEF & g.FG_FICCRD_FLOW_MASK), 0)
