"""IPv4 forwarding: LPM to a next hop, TTL, checksum, misses (issue #2).

Each behaviour runs against forward.p4 and again against fairgate.p4, which
shares its parser, sanity checks and routing."""

from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.packet import Raw

from fairgate_p4 import generated as g
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, ipv4, routed, udp


class RouteHit(FgTestBase):
    """A routed packet leaves the next-hop port with MACs rewritten, TTL - 1 and
    a correct IPv4 checksum; the payload is untouched."""

    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        pkt = udp(ttl=64)
        self.send(1, pkt)
        self.expect(routed(pkt), 2)
        self.expect_nothing()


class LongestPrefixWins(FgTestBase):
    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.0.0/8", 3, SWITCH_MAC, "00:00:00:00:00:03")
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        near, far = udp(dst="10.0.2.9"), udp(dst="10.7.0.1")
        self.send(1, near)
        self.expect(routed(near), 2)
        self.send(1, far)
        self.expect(routed(far, dst_mac="00:00:00:00:00:03"), 3)
        self.expect_nothing()


class AnomalyTest(FgTestBase):
    """Helper: send packets and check they are dropped and counted for `reason`."""

    def assert_dropped(self, pkts: list, reason: int) -> None:
        before = self.read_counters("input_anomalies").get(reason, (0, 0))[0]
        for pkt in pkts:
            self.send(1, pkt)
        self.expect_nothing()
        self.settle()
        after = self.read_counters("input_anomalies").get(reason, (0, 0))[0]
        self.assertEqual(after - before, len(pkts), f"anomaly {reason} counted {after - before}")


class RouteMiss(AnomalyTest):
    """No matching route: dropped, counted as FG_ANOMALY_NO_ROUTE."""

    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        self.assert_dropped([udp(dst="192.0.2.1"), udp(dst="10.0.3.1")], g.FG_ANOMALY_NO_ROUTE)


class TtlExpiry(AnomalyTest):
    """TTL 1 would leave at 0: dropped and counted; TTL 2 leaves with 1."""

    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        self.assert_dropped([udp(ttl=1), udp(ttl=0)], g.FG_ANOMALY_TTL_EXPIRED)
        pkt = udp(ttl=2)
        self.send(1, pkt)
        out = routed(pkt)
        self.assertEqual(out[IP].ttl, 1)
        self.expect(out, 2)


class BadIpv4Checksum(AnomalyTest):
    """A wrong IPv4 header checksum: dropped (RFC 1812) and counted."""

    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        good = udp()
        raw = bytearray(bytes(good))
        raw[24] ^= 0xFF  # IPv4 checksum, high byte
        self.assert_dropped([raw], g.FG_ANOMALY_IPV4_BAD_CHECKSUM)


class ChecksumAfterRewrite(FgTestBase):
    """The IPv4 checksum the switch writes is the one the new header needs,
    for every TTL (checked by re-computing it on the received bytes)."""

    program = "forward"

    def runTest(self) -> None:
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)
        for ttl in (2, 17, 64, 128, 255):
            pkt = ipv4(ttl=ttl, id=ttl * 101) / UDP(sport=1, dport=2) / Raw(b"z" * ttl)
            self.send(1, pkt)
            self.expect(routed(pkt), 2)
        self.expect_nothing()


class NotIpv4(AnomalyTest):
    """Non-IPv4 frames (here ARP and IPv6 ethertypes) are dropped and counted."""

    program = "forward"

    def runTest(self) -> None:
        from scapy.layers.l2 import ARP, Ether

        arp = Ether(src="00:00:00:00:00:01", dst="ff:ff:ff:ff:ff:ff") / ARP(pdst="10.0.2.2")
        v6 = Ether(src="00:00:00:00:00:01", dst=SWITCH_MAC, type=0x86DD) / Raw(b"\x60" + b"\0" * 60)
        self.assert_dropped([arp, v6], g.FG_ANOMALY_NOT_IPV4)


# The same behaviours on the full FairGate pipeline.
class RouteHitFairgate(RouteHit):
    program = "fairgate"


class LongestPrefixWinsFairgate(LongestPrefixWins):
    program = "fairgate"


class RouteMissFairgate(RouteMiss):
    program = "fairgate"


class TtlExpiryFairgate(TtlExpiry):
    program = "fairgate"


class BadIpv4ChecksumFairgate(BadIpv4Checksum):
    program = "fairgate"


class ChecksumAfterRewriteFairgate(ChecksumAfterRewrite):
    program = "fairgate"
