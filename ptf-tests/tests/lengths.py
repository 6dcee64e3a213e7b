"""Packets whose length fields disagree (issue #16): the switch parses only
within the IPv4 total length and the UDP length, never stamps such a packet,
drops or forwards it untouched as docs/data-plane.md ("Malformed lengths")
says, and counts it once, under its own reason in input_anomalies.

Every test reads the whole input_anomalies counter before and after, so a
packet counted under a second reason (or not at all) fails it too."""

from __future__ import annotations

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
from fairgate_p4.scapy_layer import FgRate
from fg_base import FgTestBase
from fg_packets import (
    H2_MAC,
    SWITCH_MAC,
    fg,
    ipv4,
    ones_sum,
    routed,
    tcp,
    udp,
    with_bad_udp_checksum,
)

PORT = 2
FAIR_KBPS = 1_000


def edited(pkt: Packet, fix_ip_checksum: bool = True, **fields: dict[str, int]) -> Packet:
    """`pkt` with header fields overwritten, e.g. edited(p, IP={"len": 30});
    the IPv4 checksum is recomputed unless told not to, nothing else is."""
    out = Ether(bytes(pkt))
    for layer, values in fields.items():
        for name, value in values.items():
            setattr(out[layer], name, value)
    if fix_ip_checksum:
        del out[IP].chksum
    return Ether(bytes(out))


def udp_checksum_ok(frame: bytes) -> bool:
    """The UDP checksum verifies over the pseudo-header and exactly the UDP
    length (RFC 768), whatever follows in the frame."""
    ihl = (frame[14] & 0x0F) * 4
    udp_at = 14 + ihl
    length = int.from_bytes(frame[udp_at + 4 : udp_at + 6], "big")
    pseudo = frame[26:34] + bytes([0, 17]) + length.to_bytes(2, "big")
    return ones_sum(pseudo + frame[udp_at : udp_at + length]) == 0xFFFF


class LengthTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)
        self.set_feedback(PORT, FAIR_KBPS, congested=True)  # any stamping would show

    def anomalies(self) -> dict[int, int]:
        return {i: pkts for i, (pkts, _) in self.read_counters("input_anomalies").items()}

    def assert_counted(self, before: dict[int, int], reason: int, n: int) -> None:
        self.settle()
        after = self.anomalies()
        delta = {i: after[i] - before.get(i, 0) for i in after if after[i] != before.get(i, 0)}
        self.assertEqual(delta, {reason: n} if n else {})

    def forwarded_unchanged(self, pkts: list[Packet], reason: int | None) -> None:
        before = self.anomalies()
        for pkt in pkts:
            self.send(1, pkt)
            self.expect(routed(pkt, keep_l4_checksum=True), PORT)
        self.expect_nothing()
        if reason is None:
            self.assert_counted(before, 0, 0)
        else:
            self.assert_counted(before, reason, len(pkts))

    def dropped(self, pkts: list[Packet], reason: int) -> None:
        before = self.anomalies()
        for pkt in pkts:
            self.send(1, pkt)
        self.expect_nothing()
        self.assert_counted(before, reason, len(pkts))


class TrailingBytesNotStamped(LengthTest):
    """A valid rate-header datagram followed by bytes past the IPv4 total
    length (junk, or a second rate header): forwarded byte for byte as it came
    (its deliberately wrong checksum too), never stamped, counted once."""

    def runTest(self) -> None:
        base = with_bad_udp_checksum(fg(rate_kbps=50_000))
        junk = Ether(bytes(base) + b"\xa5" * 7)
        second_header = Ether(bytes(base) + RateHeader(rate_kbps=70_000).pack())
        self.assertEqual(junk[IP].len + 14, len(bytes(junk)) - 7)
        self.forwarded_unchanged([junk, second_header], g.FG_ANOMALY_TRAILING_BYTES)


class HeaderInTrailingBytes(LengthTest):
    """The rate header sits wholly after the IPv4 total length (which ends
    with the UDP header): it is never parsed as one, so the packet leaves
    unchanged, counted as a truncated rate header, not as trailing bytes."""

    def runTest(self) -> None:
        header = RateHeader(rate_kbps=50_000).pack()
        pkt = ipv4() / UDP(sport=40000, dport=g.FG_UDP_PORT) / Raw(b"")
        pkt = Ether(bytes(pkt) + header + b"p" * 16)
        self.assertEqual(pkt[IP].len, 28)
        self.forwarded_unchanged([pkt], g.FG_ANOMALY_FG_TRUNCATED)


class TcpTrailingBytes(LengthTest):
    """TCP with junk after the total length is forwarded as usual (its header
    lies within the total length) and counted; a short segment padded to the
    60-byte Ethernet minimum is ordinary padding: forwarded, not counted."""

    def runTest(self) -> None:
        junk = Ether(bytes(tcp("A")) + b"\x5a" * 30)
        self.forwarded_unchanged([junk], g.FG_ANOMALY_TRAILING_BYTES)
        ack = bytes(tcp("A"))
        self.assertEqual(len(ack), 54)
        padded = Ether(ack + b"\0" * (g.FG_ETH_MIN_FRAME_BYTES - len(ack)))
        self.forwarded_unchanged([padded], None)


class ChecksumZeroSentAsOnes(LengthTest):
    """A stamped datagram whose new UDP checksum computes to 0 leaves with
    0xFFFF (RFC 768: 0 would mean "no checksum"), and it verifies."""

    def runTest(self) -> None:
        pkt = fg(rate_kbps=50_000, payload=b"\0" * 64)
        stamped = bytearray(bytes(routed(pkt, rate_kbps=FAIR_KBPS, flags=g.FG_FLAG_CONGESTED)))
        udp_at = 14 + 20
        stamped[udp_at + 6 : udp_at + 8] = b"\0\0"
        length = len(stamped) - udp_at
        pseudo = stamped[26:34] + bytes([0, 17]) + length.to_bytes(2, "big")
        # a payload word that brings the stamped datagram's sum to 0xFFFF, so
        # its checksum computes to 0
        word = 0xFFFF - ones_sum(bytes(pseudo + stamped[udp_at:]))
        payload = word.to_bytes(2, "big") + b"\0" * 62
        pkt = fg(rate_kbps=50_000, payload=payload)
        self.assertNotIn(pkt[UDP].chksum, (0, 0xFFFF))
        expected = routed(pkt, rate_kbps=FAIR_KBPS, flags=g.FG_FLAG_CONGESTED)
        self.assertEqual(expected[UDP].chksum, 0xFFFF)  # Scapy applies RFC 768 too
        self.send(1, pkt)
        self.expect(expected, PORT)
        self.expect_nothing()
        self.assertTrue(udp_checksum_ok(bytes(expected)))


class StampKeepsChecksumError(LengthTest):
    """The checksum of a stamped datagram is updated, not recomputed: one
    that arrived wrong (payload corrupted after the sender summed it) leaves
    exactly as wrong, so the receiver still sees the corruption."""

    def runTest(self) -> None:
        good = fg(rate_kbps=50_000, payload=b"q" * 64)
        corrupt = bytearray(bytes(good))
        corrupt[-1] ^= 0x01  # sender's checksum kept
        corrupt_pkt = Ether(bytes(corrupt))
        expected = bytearray(bytes(routed(good, rate_kbps=FAIR_KBPS, flags=g.FG_FLAG_CONGESTED)))
        expected[-1] ^= 0x01
        self.assertFalse(udp_checksum_ok(bytes(expected)))
        self.send(1, corrupt_pkt)
        self.expect(Ether(bytes(expected)), PORT)
        self.expect_nothing()


class Ipv4LengthOverFrame(LengthTest):
    """An IPv4 total length longer than the frame (RFC 1812 5.2.2): dropped."""

    def runTest(self) -> None:
        pkts = [
            edited(fg(rate_kbps=50_000), IP={"len": 20 + 8 + 28 + 64 + 1}),
            edited(tcp("S"), IP={"len": 60}),
            edited(udp(), IP={"len": 1500}),
        ]
        self.dropped(pkts, g.FG_ANOMALY_IPV4_LEN_OVER_FRAME)


class Ipv4BadIhl(LengthTest):
    """ihl 0..4 (the header cannot be shorter than 20 bytes): dropped."""

    def runTest(self) -> None:
        pkts = []
        for ihl in range(5):
            raw = bytearray(bytes(fg(rate_kbps=50_000)))
            raw[14] = 0x40 | ihl
            pkts.append(Ether(bytes(raw)))
        self.dropped(pkts, g.FG_ANOMALY_IPV4_BAD_IHL)


class TcpBadDataOffset(LengthTest):
    """TCP data offset below 5, or past the end of the IPv4 payload: no
    receiver accepts such a segment and its options cannot be walked, so it is
    dropped (also a SYN, which would otherwise reach SYN gating)."""

    def runTest(self) -> None:
        pkts = [edited(tcp(flags), TCP={"dataofs": off}) for off in (0, 4) for flags in ("S", "A")]
        # 15 words = 60 bytes of header in a 20-byte segment
        pkts.append(edited(tcp("S"), TCP={"dataofs": 15}))
        # a SYN with options whose data offset runs past the total length
        # into trailing bytes
        syn = Ether(bytes(ipv4() / TCP(sport=1, dport=2, flags="S", options=[("WScale", 7)])))
        pkts.append(Ether(bytes(edited(syn, TCP={"dataofs": 8})) + b"\x01" * 8))
        self.dropped(pkts, g.FG_ANOMALY_TCP_BAD_OFFSET)


class UdpLengthMismatch(LengthTest):
    """UDP length longer than the IPv4 payload, below 8, or shorter than the
    IPv4 payload: forwarded untouched (checksum too), never stamped."""

    def runTest(self) -> None:
        base = with_bad_udp_checksum(fg(rate_kbps=50_000))
        size = base[UDP].len
        pkts = [
            edited(base, UDP={"len": size + 1}),
            edited(base, UDP={"len": 0xFFFF}),
            edited(base, UDP={"len": 7}),
            edited(base, UDP={"len": 0}),
            edited(base, UDP={"len": size - 1}),
            edited(base, UDP={"len": 8 + g.FG_HEADER_BYTES}),
            edited(udp(), UDP={"len": 200}),
        ]
        self.forwarded_unchanged(pkts, g.FG_ANOMALY_UDP_BAD_LENGTH)


class L4CutByTotalLength(LengthTest):
    """The TCP or UDP header is present in the frame but the IPv4 total
    length ends before it: the header is never parsed from the bytes past
    the total length; forwarded unchanged, counted as a cut L4 header."""

    def runTest(self) -> None:
        cut_tcp = edited(tcp("S"), IP={"len": 20 + 10})
        cut_udp = edited(fg(rate_kbps=50_000), IP={"len": 20 + 4})
        self.forwarded_unchanged([cut_tcp, cut_udp], g.FG_ANOMALY_L4_TRUNCATED)


class ValidStillStamped(LengthTest):
    """Control: the same datagram with consistent lengths is stamped, its
    checksum verifies over exactly the UDP length, and nothing is counted."""

    def runTest(self) -> None:
        before = self.anomalies()
        pkt = fg(rate_kbps=50_000)
        self.send(1, pkt)
        expected = routed(pkt, rate_kbps=FAIR_KBPS, flags=g.FG_FLAG_CONGESTED)
        self.expect(expected, PORT)
        self.expect_nothing()
        self.assertEqual(expected[FgRate].rate_kbps, FAIR_KBPS)
        self.assertTrue(udp_checksum_ok(bytes(expected)))
        self.assert_counted(before, 0, 0)
