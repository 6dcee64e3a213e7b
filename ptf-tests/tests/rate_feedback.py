"""Rate header min-stamping and the congestion flag (issue #3).

Every expected packet is built independently with Scapy (which computes the
checksums), and the switch's output must match it byte for byte."""

from __future__ import annotations

from scapy.layers.inet import UDP

from fairgate_p4 import generated as g
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, fg, routed, with_bad_udp_checksum


class FeedbackTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", 2, SWITCH_MAC, H2_MAC)


class StampLowersHigherRequest(FeedbackTest):
    """A data packet asking for more than the port's fair rate leaves with the
    fair rate, and a UDP checksum that is valid for the new bytes."""

    def runTest(self) -> None:
        self.set_feedback(2, 5_000)
        for asked in (5_001, 10_000, 0xFFFFFFFE):
            pkt = fg(rate_kbps=asked, seq=asked & 0xFFFF)
            self.send(1, pkt)
            self.expect(routed(pkt, rate_kbps=5_000), 2)
        self.expect_nothing()


class StampKeepsLowerRequest(FeedbackTest):
    """A request at or below the fair rate passes unchanged; so does its UDP
    checksum (a deliberately wrong one stays wrong: nothing was recomputed)."""

    def runTest(self) -> None:
        self.set_feedback(2, 5_000)
        for asked in (1, 4_999, 5_000):
            pkt = with_bad_udp_checksum(fg(rate_kbps=asked))
            self.send(1, pkt)
            self.expect(routed(pkt, keep_l4_checksum=True), 2)
        self.expect_nothing()


class NoEntryNoChange(FeedbackTest):
    """A port without a port_feedback entry stamps nothing."""

    def runTest(self) -> None:
        self.set_feedback(3, 1_000)  # another port
        pkt = with_bad_udp_checksum(fg(rate_kbps=10_000))
        self.send(1, pkt)
        self.expect(routed(pkt, keep_l4_checksum=True), 2)
        self.expect_nothing()


class ZeroFairRateStampsNothing(FeedbackTest):
    """A fair rate of 0 is never stamped (it would stall the flow)."""

    def runTest(self) -> None:
        self.set_feedback(2, 0)
        pkt = with_bad_udp_checksum(fg(rate_kbps=10_000))
        self.send(1, pkt)
        self.expect(routed(pkt, keep_l4_checksum=True), 2)
        self.expect_nothing()


class NonDataNeverStamped(FeedbackTest):
    """Acks, probes, probe-acks and RD packets keep their rate and flags even
    through a congested port with a low fair rate."""

    def runTest(self) -> None:
        self.set_feedback(2, 1_000, congested=True)
        kinds = (
            g.FG_KIND_ACK,
            g.FG_KIND_PROBE,
            g.FG_KIND_PROBE_ACK,
            g.FG_KIND_RD_FORWARD,
            g.FG_KIND_RD_BACKWARD,
        )
        for kind in kinds:
            for to_receiver in (True, False):
                pkt = with_bad_udp_checksum(
                    fg(rate_kbps=50_000, kind=kind, to_receiver=to_receiver)
                )
                self.send(1, pkt)
                self.expect(routed(pkt, keep_l4_checksum=True), 2)
        self.expect_nothing()


class CongestionFlag(FeedbackTest):
    """A port marked congested sets FG_FLAG_CONGESTED on data packets (other
    flag bits untouched); an uncongested port leaves the flag clear."""

    def runTest(self) -> None:
        self.set_feedback(2, 5_000, congested=True)
        pkt = fg(rate_kbps=3_000, flags=0x80)
        self.send(1, pkt)
        self.expect(routed(pkt, flags=0x80 | g.FG_FLAG_CONGESTED), 2)
        already = with_bad_udp_checksum(fg(rate_kbps=3_000, flags=g.FG_FLAG_CONGESTED))
        self.send(1, already)
        self.expect(routed(already, keep_l4_checksum=True), 2)
        pkt = fg(rate_kbps=9_000)
        self.send(1, pkt)
        self.expect(routed(pkt, rate_kbps=5_000, flags=g.FG_FLAG_CONGESTED), 2)
        self.expect_nothing()


class CongestionFlagOffPort(FeedbackTest):
    def runTest(self) -> None:
        self.set_feedback(2, 5_000, congested=False)
        pkt = with_bad_udp_checksum(fg(rate_kbps=3_000))
        self.send(1, pkt)
        self.expect(routed(pkt, keep_l4_checksum=True), 2)
        self.expect_nothing()


class ZeroUdpChecksumStaysZero(FeedbackTest):
    """IPv4 UDP checksum 0 means "none": a stamped datagram keeps 0."""

    def runTest(self) -> None:
        self.set_feedback(2, 2_000)
        pkt = fg(rate_kbps=10_000)
        pkt[UDP].chksum = 0
        self.send(1, pkt)
        out = routed(pkt, rate_kbps=2_000)
        self.assertEqual(out[UDP].chksum, 0)
        self.expect(out, 2)
        self.expect_nothing()


class RateModifyTakesEffect(FeedbackTest):
    """The controller's MODIFY of a port's entry changes the stamped rate."""

    def runTest(self) -> None:
        import finsy as fy

        self.set_feedback(2, 5_000)
        self.modify(
            fy.P4TableEntry(
                "port_feedback",
                match=fy.Match(egress_port=2),
                action=fy.Action("set_port_feedback", fair_rate_kbps=700, congested=0),
            )
        )
        pkt = fg(rate_kbps=10_000)
        self.send(1, pkt)
        self.expect(routed(pkt, rate_kbps=700), 2)
        self.expect_nothing()
