"""Malformed and unusual input (issue #3): never crash, never stamp garbage,
do what docs/data-plane.md says, and count the reason in input_anomalies."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Ether
from scapy.packet import Padding, Raw

from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, fg, ipv4, routed, tcp, udp, with_bad_udp_checksum

PORT = 2


class BadInputTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)
        self.set_feedback(PORT, 1_000, congested=True)  # any stamping would show

    def forwarded_unchanged(self, pkts: list, reason: int) -> None:
        before = self.anomaly_count(reason)
        for pkt in pkts:
            self.send(1, pkt)
            self.expect(routed(pkt, keep_l4_checksum=True), PORT)
        self.expect_nothing()
        self.settle()
        self.assertEqual(self.anomaly_count(reason) - before, len(pkts))

    def dropped(self, pkts: list, reason: int) -> None:
        before = self.anomaly_count(reason)
        for pkt in pkts:
            self.send(1, pkt)
        self.expect_nothing()
        self.settle()
        self.assertEqual(self.anomaly_count(reason) - before, len(pkts))


class TruncatedRateHeader(BadInputTest):
    """A datagram on FG_UDP_PORT too short for the header: forwarded as is.
    Also when Ethernet padding makes the frame long enough but the UDP length
    says the header is cut (the switch must not read the padding)."""

    def runTest(self) -> None:
        full = RateHeader(rate_kbps=50_000).pack()
        short = ipv4() / UDP(sport=40000, dport=g.FG_UDP_PORT) / Raw(full[:10])
        padded = (
            ipv4()
            / UDP(sport=40000, dport=g.FG_UDP_PORT)
            / Raw(full[:10])
            / Padding(full[10:] + b"\0" * 20)
        )
        empty = ipv4() / UDP(sport=g.FG_UDP_PORT, dport=40000)
        self.forwarded_unchanged(
            [with_bad_udp_checksum(p) for p in (short, padded, empty)], g.FG_ANOMALY_FG_TRUNCATED
        )


class UnknownVersion(BadInputTest):
    def runTest(self) -> None:
        pkts = [with_bad_udp_checksum(fg(rate_kbps=50_000, version=v)) for v in (0, 2, 255)]
        self.forwarded_unchanged(pkts, g.FG_ANOMALY_FG_BAD_VERSION)


class UnknownKind(BadInputTest):
    def runTest(self) -> None:
        pkts = [
            with_bad_udp_checksum(fg(rate_kbps=50_000, kind=k)) for k in (0, g.FG_KIND_MAX + 1, 255)
        ]
        self.forwarded_unchanged(pkts, g.FG_ANOMALY_FG_BAD_KIND)


class ZeroRate(BadInputTest):
    """A data packet asking for 0: forwarded unchanged (no flag either)."""

    def runTest(self) -> None:
        self.forwarded_unchanged(
            [with_bad_udp_checksum(fg(rate_kbps=0))], g.FG_ANOMALY_FG_RATE_ZERO
        )


class AllOnesRate(BadInputTest):
    """All-ones means "no limit": stamped like any request, and counted."""

    def runTest(self) -> None:
        before = self.anomaly_count(g.FG_ANOMALY_FG_RATE_UNLIMITED)
        pkt = fg(rate_kbps=g.FG_RATE_UNLIMITED)
        self.send(1, pkt)
        self.expect(routed(pkt, rate_kbps=1_000, flags=g.FG_FLAG_CONGESTED), PORT)
        self.settle()
        self.assertEqual(self.anomaly_count(g.FG_ANOMALY_FG_RATE_UNLIMITED) - before, 1)


class Ipv4Options(BadInputTest):
    """IPv4 options are carried through unchanged (checksum recomputed for the
    TTL); the rate header behind them is still stamped."""

    def runTest(self) -> None:
        before = self.anomaly_count(g.FG_ANOMALY_IPV4_OPTIONS)
        for opts in ([IPOption_NOP()] * 4, [IPOption_RR(routers=["0.0.0.0"] * 3)]):
            pkt = Ether(bytes(fg(rate_kbps=3_000, ip={"options": opts})))
            self.assertGreater(pkt[IP].ihl, 5)
            self.send(1, pkt)
            self.expect(routed(pkt, rate_kbps=1_000, flags=g.FG_FLAG_CONGESTED), PORT)
        self.expect_nothing()
        self.settle()
        self.assertEqual(self.anomaly_count(g.FG_ANOMALY_IPV4_OPTIONS) - before, 2)


class Fragments(BadInputTest):
    """A first fragment (MF set) is not stamped: its UDP checksum covers bytes
    the switch never sees. Later fragments get no L4 parsing at all."""

    def runTest(self) -> None:
        first = with_bad_udp_checksum(fg(rate_kbps=50_000, ip={"flags": "MF"}))
        later = ipv4(frag=10, proto=17) / Raw(RateHeader(rate_kbps=50_000).pack())
        later_tcp = ipv4(frag=3, proto=6) / Raw(b"\x02" * 40)
        self.forwarded_unchanged([first, later, later_tcp], g.FG_ANOMALY_IPV4_FRAGMENT)


class TruncatedL4(BadInputTest):
    """IPv4 says TCP/UDP but the header is cut short: forwarded unchanged."""

    def runTest(self) -> None:
        pkts = [ipv4(proto=6) / Raw(b"\x00" * 10), ipv4(proto=17) / Raw(b"\x00" * 4)]
        self.forwarded_unchanged(pkts, g.FG_ANOMALY_L4_TRUNCATED)


class SynFinAndSynRst(BadInputTest):
    """SYN+FIN and SYN+RST are never legitimate: dropped and counted."""

    def runTest(self) -> None:
        self.dropped([tcp("SF"), tcp("SFA")], g.FG_ANOMALY_TCP_SYN_FIN)
        self.dropped([tcp("SR"), tcp("SRA")], g.FG_ANOMALY_TCP_SYN_RST)


class MalformedIpv4(BadInputTest):
    """version != 4 in an IPv4 frame, a cut IPv4 header or a total length
    below the header length: dropped. (ihl < 5 has its own reason:
    lengths.Ipv4BadIhl.)"""

    def runTest(self) -> None:
        good = bytes(udp())
        bad_version = bytearray(good)
        bad_version[14] = 0x65
        cut = good[: 14 + 12]
        total_len_short = Ether(good)
        total_len_short[IP].len = 12
        del total_len_short[IP].chksum
        self.dropped(
            [bytes(bad_version), cut, bytes(total_len_short)],
            g.FG_ANOMALY_IPV4_MALFORMED,
        )


class SurvivesGarbage(BadInputTest):
    """After a stream of random frames the switch still forwards and stamps."""

    def runTest(self) -> None:
        import random

        rnd = random.Random(7)
        for _ in range(200):
            n = rnd.randint(1, 200)
            frame = bytes(udp())[:14] + bytes(rnd.getrandbits(8) for _ in range(n))
            self.send(1, frame)
        self.collect(PORT, quiet_s=0.5)
        pkt = fg(rate_kbps=9_000)
        self.send(1, pkt)
        self.expect(routed(pkt, rate_kbps=1_000, flags=g.FG_FLAG_CONGESTED), PORT)
