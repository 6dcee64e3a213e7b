"""XCP's per-packet feedback (xcp.p4, issue #14).

Real packets through simple_switch_grpc; what comes out is compared byte for
byte with what fairgate_p4.xcp_math (the model the simulator's switch also
runs) says: H_feedback = min(H_feedback, pos - neg), signed, with the UDP
checksum of a stamped datagram recomputed by Scapy independently. Factors and
bucket bounds are written with the controller's own entity builders
(fairgate_controller.entities), the histogram read back through its telemetry
code (fairgate_controller.telemetry.xcp_sums)."""

from __future__ import annotations

import random

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Padding, Raw

from fairgate_controller import entities as ent
from fairgate_controller.telemetry import xcp_sums
from fairgate_p4 import generated as g
from fairgate_p4 import xcp_math as xm
from fairgate_p4.header import RateHeader, XcpHeader
from fairgate_p4.scapy_layer import FgXcp
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, ipv4, ones_sum, routed, with_bad_udp_checksum, xcp

PORT = 2
UNLIMITED = g.FG_XCP_FEEDBACK_UNLIMITED
NONE = xm.LG_NONE
# A flow with rtt 50 ms, 1000-byte frames, a 15000-byte window, and factors that
# give it about +300 bytes and -100 bytes per packet.
LG_POS, LG_NEG = xm.sender_terms(0.05, 1000, 15_000)
XI_P = xm.encode_factor(300 / (0.05**2 * 1000 / 15_000))
XI_N = xm.encode_factor(100 / (0.05 * 1000))


def udp_sum(frame: bytes) -> int:
    """Ones' complement sum (mod 0xFFFF) of the pseudo-header and the UDP datagram
    including its checksum: a correct incremental update leaves it unchanged."""
    pkt = Ether(frame)
    ip, dgram = pkt[IP], bytes(pkt[UDP])[: pkt[UDP].len]
    pseudo = bytes(ip)[12:20] + bytes([0, g.IP_PROTO_UDP]) + len(dgram).to_bytes(2, "big")
    return ones_sum(pseudo + dgram) % 0xFFFF


class XcpTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)
        # any rate stamping of XCP kinds would show
        self.set_feedback(PORT, 1_000, congested=True)

    def set_factors(self, lg_xi_p: int, lg_xi_n: int, port: int = PORT) -> None:
        self.insert(ent.xcp_factors_entry(port, lg_xi_p, lg_xi_n))

    def change_factors(self, lg_xi_p: int, lg_xi_n: int, port: int = PORT) -> None:
        self.modify(ent.xcp_factors_entry(port, lg_xi_p, lg_xi_n))

    def check(self, pkt, lg_xi_p: int, lg_xi_n: int) -> int:
        """Send `pkt`, expect the model's H_feedback; return it (signed)."""
        hdr = pkt[FgXcp]
        fb = xm.switch_feedback(hdr.lg_pos, hdr.lg_neg, lg_xi_p, lg_xi_n)
        new = xm.stamp(xm.to_u32(hdr.feedback), fb)
        if new == hdr.feedback:
            # untouched: a wrong checksum must come out exactly as wrong
            pkt = with_bad_udp_checksum(pkt)
            self.send(1, pkt)
            self.expect(routed(pkt, keep_l4_checksum=True), PORT)
        else:
            self.send(1, pkt)
            self.expect(routed(pkt, feedback=new), PORT)
        return new

    def untouched(self, pkts: list) -> None:
        for pkt in pkts:
            pkt = with_bad_udp_checksum(pkt)
            self.send(1, pkt)
            self.expect(routed(pkt, keep_l4_checksum=True), PORT)
        self.expect_nothing()


class StampLowersFeedback(XcpTest):
    """A demand above the port's feedback leaves as the feedback: +300 - 100 bytes
    (within the documented error), whatever the demand was."""

    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N)
        fb = xm.switch_feedback(LG_POS, LG_NEG, XI_P, XI_N)
        self.assertLessEqual(abs(fb - 200), 3)  # the model itself, against exact arithmetic
        for demand in (UNLIMITED, 10_000, fb + 1):
            got = self.check(xcp(feedback=demand, lg_pos=LG_POS, lg_neg=LG_NEG), XI_P, XI_N)
            self.assertEqual(got, fb)
        self.expect_nothing()


class StampKeepsLowerFeedback(XcpTest):
    """A demand at or below the feedback passes unchanged, checksum and all."""

    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N)
        fb = xm.switch_feedback(LG_POS, LG_NEG, XI_P, XI_N)
        for demand in (fb, fb - 1, 0, -1, -100_000, -(2**31)):
            got = self.check(xcp(feedback=demand, lg_pos=LG_POS, lg_neg=LG_NEG), XI_P, XI_N)
            self.assertEqual(got, demand)
        self.expect_nothing()


class SignedCompare(XcpTest):
    """H_feedback and fb are signed: a negative fb replaces a positive or a less
    negative demand; a negative demand stays below a positive fb (an unsigned
    compare would get each of these wrong)."""

    def runTest(self) -> None:
        lg_xi_n = XI_N + 4 * xm.LG_ONE  # neg x 16: fb about 300 - 1600
        self.set_factors(XI_P, lg_xi_n)
        fb = xm.switch_feedback(LG_POS, LG_NEG, XI_P, lg_xi_n)
        self.assertLess(fb, -1000)
        for demand, expected in ((5, fb), (UNLIMITED, fb), (fb + 1, fb), (fb - 1, fb - 1)):
            got = self.check(xcp(feedback=demand, lg_pos=LG_POS, lg_neg=LG_NEG), XI_P, lg_xi_n)
            self.assertEqual(got, expected)
        self.change_factors(XI_P, NONE)  # fb = pos > 0
        for demand in (-1, -300):
            got = self.check(xcp(feedback=demand, lg_pos=LG_POS, lg_neg=LG_NEG), XI_P, NONE)
            self.assertEqual(got, demand)
        self.expect_nothing()


class EachTermAlone(XcpTest):
    """LG_NONE as a factor or in the packet makes that term 0."""

    def runTest(self) -> None:
        pos = xm.pow2_term(LG_POS, XI_P)
        neg = xm.pow2_term(LG_NEG, XI_N)
        self.assertGreater(pos, 0)
        self.assertGreater(neg, 0)
        cases = [
            ((XI_P, NONE), (LG_POS, LG_NEG), pos),
            ((NONE, XI_N), (LG_POS, LG_NEG), -neg),
            ((XI_P, XI_N), (NONE, LG_NEG), -neg),
            ((XI_P, XI_N), (LG_POS, NONE), pos),
            ((NONE, NONE), (LG_POS, LG_NEG), 0),
        ]
        self.set_factors(XI_P, XI_N)
        for (lg_xi_p, lg_xi_n), (lg_pos, lg_neg), expected in cases:
            self.change_factors(lg_xi_p, lg_xi_n)
            got = self.check(xcp(lg_pos=lg_pos, lg_neg=lg_neg), lg_xi_p, lg_xi_n)
            self.assertEqual(got, expected)
        self.expect_nothing()


class Saturation(XcpTest):
    """A term of 2^31 bytes or more saturates at 2^31 - 1: pos alone leaves an
    unlimited demand as it is, neg alone stamps -(2^31 - 1), both give 0."""

    def runTest(self) -> None:
        big = 31 * xm.LG_ONE  # 2^31: the first saturated exponent
        self.set_factors(big, NONE)
        self.check(xcp(lg_pos=0, lg_neg=0), big, NONE)  # untouched
        self.change_factors(NONE, big)
        self.assertEqual(self.check(xcp(lg_pos=0, lg_neg=0), NONE, big), -UNLIMITED)
        self.change_factors(xm.LG_MAX, xm.LG_MAX)
        got = self.check(xcp(lg_pos=xm.LG_MAX, lg_neg=xm.LG_MAX), xm.LG_MAX, xm.LG_MAX)
        self.assertEqual(got, 0)
        # just below: 2^30.996 is not saturated, and exact to the mantissa
        self.change_factors(big - 1, NONE)
        fb = xm.switch_feedback(0, 0, big - 1, NONE)
        self.assertLess(fb, UNLIMITED)
        self.assertEqual(self.check(xcp(lg_pos=0, lg_neg=0), big - 1, NONE), fb)
        self.expect_nothing()


class BitExactOverTheRange(XcpTest):
    """Every integer part of the exponent from -3 to 32 with fractions 0, 1, 128,
    255, in both terms, plus random logarithms over the whole 16-bit range:
    the switch's bytes equal the model's."""

    def runTest(self) -> None:
        rnd = random.Random(14)
        self.set_factors(0, 0)
        exps = [w * xm.LG_ONE + f for w in range(-3, 33) for f in (0, 1, 128, 255)]
        for e in exps:
            self.check(xcp(lg_pos=e, lg_neg=NONE, feedback=UNLIMITED), 0, 0)
            self.check(xcp(lg_pos=NONE, lg_neg=e, feedback=UNLIMITED), 0, 0)
        for lg_xi_p, lg_xi_n in ((XI_P, XI_N), (-5000, 3000)):
            self.change_factors(lg_xi_p, lg_xi_n)
            for _ in range(60):
                lg_pos = rnd.randint(xm.LG_MIN, xm.LG_MAX)
                lg_neg = rnd.randint(xm.LG_MIN, xm.LG_MAX)
                demand = rnd.choice((UNLIMITED, rnd.randint(-(2**31), 2**31 - 1)))
                pkt = xcp(feedback=demand, lg_pos=lg_pos, lg_neg=lg_neg)
                self.check(pkt, lg_xi_p, lg_xi_n)
        self.expect_nothing()


class AcksAndUnknownRttUntouched(XcpTest):
    """XCP acks (either direction) and XCP data with rtt_us = 0 keep every byte."""

    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N + 8 * xm.LG_ONE)  # would stamp hard
        kw = {"lg_pos": LG_POS, "lg_neg": LG_NEG}
        self.untouched(
            [
                xcp(kind=g.FG_KIND_XCP_ACK, feedback=50_000, **kw),
                xcp(kind=g.FG_KIND_XCP_ACK, feedback=50_000, to_receiver=False, **kw),
                xcp(rtt_us=0, **kw),
            ]
        )


class NoFactorsNoChange(XcpTest):
    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N, port=3)  # another port
        self.untouched([xcp(lg_pos=LG_POS, lg_neg=LG_NEG)])


class ChecksumUpdate(XcpTest):
    """A UDP checksum of 0 stays 0; a wrong one stays exactly as wrong (the
    datagram's ones' complement sum is unchanged by the update)."""

    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N)
        fb = xm.switch_feedback(LG_POS, LG_NEG, XI_P, XI_N)
        pkt = xcp(lg_pos=LG_POS, lg_neg=LG_NEG)
        pkt[UDP].chksum = 0
        pkt = Ether(bytes(pkt))
        self.send(1, pkt)
        out = routed(pkt, feedback=fb)
        self.assertEqual(out[UDP].chksum, 0)
        self.expect(out, PORT)
        for demand in (UNLIMITED, 1_000_000, 0x12345678):
            bad = with_bad_udp_checksum(xcp(feedback=demand, lg_pos=LG_POS, lg_neg=LG_NEG))
            self.send(1, bad)
            frames = self.collect(PORT, quiet_s=0.5, max_s=3.0)
            self.assertEqual(len(frames), 1)
            self.assertEqual(Ether(frames[0])[FgXcp].feedback, fb)
            self.assertEqual(udp_sum(frames[0]), udp_sum(bytes(bad)))
            self.assertNotEqual(Ether(frames[0])[UDP].chksum, 0)
        self.expect_nothing()


class TruncatedXcpHeader(XcpTest):
    """An XCP kind whose UDP length cannot hold fg_xcp_t is forwarded unchanged,
    never stamped, and counted as FG_ANOMALY_FG_XCP_TRUNCATED, also when Ethernet
    padding or trailing bytes would make the frame long enough."""

    def runTest(self) -> None:
        self.set_factors(XI_P, XI_N + 8 * xm.LG_ONE)
        xhdr = XcpHeader(cwnd_bytes=15_000, lg_pos=LG_POS, lg_neg=LG_NEG).pack()
        pkts = []
        for kind in (g.FG_KIND_XCP_DATA, g.FG_KIND_XCP_ACK):
            rate = RateHeader(kind=kind, rtt_us=50_000).pack()
            dgram = ipv4() / UDP(sport=40000, dport=g.FG_UDP_PORT)
            pkts.append(dgram / Raw(rate + xhdr[:11]))
            pkts.append(dgram / Raw(rate))
        padded = (
            ipv4()
            / UDP(sport=40000, dport=g.FG_UDP_PORT)
            / Raw(RateHeader(kind=g.FG_KIND_XCP_DATA, rtt_us=50_000).pack() + xhdr[:4])
            / Padding(xhdr[4:] + b"\0" * 8)
        )
        pkts.append(padded)
        pkts = [with_bad_udp_checksum(p) for p in pkts]
        before = self.anomaly_count(g.FG_ANOMALY_FG_XCP_TRUNCATED)
        self.untouched(pkts)
        self.settle()
        self.assertEqual(self.anomaly_count(g.FG_ANOMALY_FG_XCP_TRUNCATED) - before, len(pkts))


class RatioHistogram(XcpTest):
    """xcp_ratio_hist counts packets and frame bytes of XCP data by log2(rtt/cwnd)
    in the buckets the controller installed; the controller's estimate of
    sum(rtt s / cwnd) from it is within the bucket error of the exact sum. Acks,
    unknown RTTs and packets with a NONE term are not counted; rtt_hist counts
    XCP data (the controller's average RTT)."""

    def runTest(self) -> None:
        buckets = xm.RatioBuckets()
        self.insert(*ent.xcp_bucket_entries(buckets))
        flows = [(0.05, 1000, 15_000), (0.01, 600, 90_000), (0.2, 1400, 3_000), (0.03, 200, 1e8)]
        before = self.read_counters(g.COUNTER_XCP_RATIO_HIST)
        rtt_before = self.read_counters(g.COUNTER_RTT_HIST)
        sent: dict[int, tuple[int, int]] = {}
        exact = 0.0
        total_bytes = 0
        headers = 14 + 20 + 8 + g.FG_HEADER_BYTES + g.FG_XCP_HEADER_BYTES
        for rtt, size, cwnd in flows:
            for _ in range(3):
                payload = b"h" * (size - headers)
                pkt = xcp(rtt_us=int(rtt * 1e6), cwnd_bytes=int(cwnd), payload=payload)
                frame = len(bytes(pkt))
                self.assertEqual(frame, size)
                lg_pos, lg_neg = xm.sender_terms(rtt, frame, cwnd)
                pkt[FgXcp].lg_pos, pkt[FgXcp].lg_neg = lg_pos, lg_neg
                self.send(1, pkt)
                b = buckets.bucket_of(lg_pos - lg_neg)
                index = (PORT << g.FG_XCP_HIST_BUCKET_BITS) | b
                p, n = sent.get(index, (0, 0))
                sent[index] = (p + 1, n + frame)
                exact += rtt * frame / cwnd
                total_bytes += frame
        self.send(1, xcp(kind=g.FG_KIND_XCP_ACK, lg_pos=-3000, lg_neg=1000))
        self.send(1, xcp(rtt_us=0, lg_pos=-3000, lg_neg=1000))
        self.send(1, xcp(lg_pos=NONE, lg_neg=1000))
        self.assertEqual(len(self.collect(PORT)), 3 * len(flows) + 3)
        self.settle()
        after = self.read_counters(g.COUNTER_XCP_RATIO_HIST)
        delta = {
            i: (after[i][0] - before.get(i, (0, 0))[0], after[i][1] - before.get(i, (0, 0))[1])
            for i in after
        }
        self.assertEqual({i: v for i, v in delta.items() if v != (0, 0)}, sent)
        sums = xcp_sums({g.COUNTER_XCP_RATIO_HIST: delta}, PORT, buckets)
        self.assertEqual(sums.sum_s_bytes, total_bytes)
        self.assertEqual(sums.packets, 3 * len(flows))
        bound = buckets.relative_error_bound()
        self.assertLessEqual(abs(sums.sum_rtt_s_over_cwnd / exact - 1), bound)
        rtt_after = self.read_counters(g.COUNTER_RTT_HIST)
        base = PORT << g.FG_HIST_BUCKET_BITS
        counted = sum(
            rtt_after.get(base + b, (0, 0))[0] - rtt_before.get(base + b, (0, 0))[0]
            for b in range(g.FG_HIST_BUCKETS)
        )
        self.assertEqual(counted, 3 * len(flows) + 1)  # + the NONE-term packet (RTT known)
