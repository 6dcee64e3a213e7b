"""Seeded mutation fuzzing of the packet rules (issue #16).

Valid rate-header, RD (FICCRD), XCP, TCP and plain UDP frames are mutated (cut
short, bits flipped, length fields and IHL / data offset edited, option bytes
scrambled, bytes appended past the IPv4 total length; the IPv4 header checksum
is usually fixed up so that the frame gets past it) and sent through the
switch. A reference model written from docs/data-plane.md ("Bad input",
"Malformed lengths") says, for every frame, whether it is dropped or
forwarded, under which input_anomalies reason it is counted, and whether its
rate header may be stamped. The test then checks:

- every frame that comes out is the frame that went in, with only what
  forwarding changes (MACs, TTL, IPv4 checksum), unless the model says it was
  fully parsed and stampable: then only rate_kbps, flags and the UDP checksum
  differ, the rate and flag are what the port's feedback asks, and the UDP
  checksum still verifies over exactly the UDP length (its ones' complement
  sum is unchanged, so a checksum that arrived wrong stays wrong) and is
  never 0 when it was not 0; for XCP data only H_feedback and the UDP
  checksum may differ, H_feedback as fairgate_p4.xcp_math computes it for
  the port's xcp_factors;
- the frames come out in order and only those the model forwards;
- every frame is counted exactly once: port_arrivals + dropped reasons of
  input_anomalies = frames sent, and each reason's count equals the model's.

MutationFuzzFiccrdEdge does the same with the output port a FICCRD edge, where
well-formed forward RDs are turned around and well-formed backward RDs
consumed. Seeds are fixed, so a failure replays exactly.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass

import finsy as fy
from scapy.layers.inet import TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from fairgate_controller import entities as ent
from fairgate_p4 import generated as g
from fairgate_p4 import xcp_math as xm
from fairgate_p4.scapy_layer import FgRate, FgRd, FgXcp
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, fg, ipv4, ones_sum, tcp, udp

SEED = 16
FRAMES = 20000
BATCH = 250
INGRESS = 1
PORT = 2
FAIR_KBPS = 1_000
ROUTE = (0x0A000200, 0xFFFFFF00)  # 10.0.2.0/24 -> PORT
XCP_FACTORS = (xm.encode_factor(2e6), xm.encode_factor(3.0))  # lg_xi_p, lg_xi_n on PORT

DROP_REASONS = {
    g.FG_ANOMALY_NOT_IPV4,
    g.FG_ANOMALY_IPV4_MALFORMED,
    g.FG_ANOMALY_IPV4_BAD_CHECKSUM,
    g.FG_ANOMALY_TTL_EXPIRED,
    g.FG_ANOMALY_NO_ROUTE,
    g.FG_ANOMALY_TCP_SYN_FIN,
    g.FG_ANOMALY_TCP_SYN_RST,
    g.FG_ANOMALY_IPV4_BAD_IHL,
    g.FG_ANOMALY_IPV4_LEN_OVER_FRAME,
    g.FG_ANOMALY_TCP_BAD_OFFSET,
}


def u16(b: bytes, at: int) -> int:
    return int.from_bytes(b[at : at + 2], "big")


def ipv4_checksum(header: bytes) -> int:
    """csum16 of an IPv4 header with its checksum field taken as 0."""
    return ~ones_sum(header[:10] + b"\0\0" + header[12:]) & 0xFFFF


@dataclass
class Verdict:
    forwarded: bool  # through ingress (counted in port_arrivals)
    reason: int  # FG_ANOMALY_*, 0 = none
    stamp_at: int | None = None  # offset of the rate header when it may be stamped
    rd_at: int | None = None  # offset of a well-formed RD's rate header
    turned: bool = False  # a well-formed forward RD (an edge turns it around)
    xcp_at: int | None = None  # offset of the rate header of XCP data that may be stamped

    def out_port(self, edge: bool) -> int | None:
        """Where the frame leaves: PORT, back out of port 1 (a forward RD
        turned around by the edge), or nowhere (dropped, or a backward RD
        the edge consumes)."""
        if not self.forwarded:
            return None
        if edge and self.rd_at is not None:
            return INGRESS if self.turned else None
        return PORT


def model(f: bytes) -> Verdict:
    """What docs/data-plane.md and docs/ficcrd.md say the switch does with
    frame `f` arriving on port 1 (route 10.0.2.0/24 -> PORT, feedback on
    PORT; no admission entries; PORT may be a FICCRD edge)."""
    n = len(f)
    if n < 14 or u16(f, 12) != g.ETHERTYPE_IPV4:
        return Verdict(False, g.FG_ANOMALY_NOT_IPV4)
    if n < 34 or f[14] >> 4 != 4:
        return Verdict(False, g.FG_ANOMALY_IPV4_MALFORMED)
    hlen = (f[14] & 0x0F) * 4
    if hlen < 20:
        return Verdict(False, g.FG_ANOMALY_IPV4_BAD_IHL)
    total = u16(f, 16)
    if n < 14 + hlen or total < hlen:
        return Verdict(False, g.FG_ANOMALY_IPV4_MALFORMED)
    if total + 14 > n:
        return Verdict(False, g.FG_ANOMALY_IPV4_LEN_OVER_FRAME)
    if ipv4_checksum(f[14 : 14 + hlen]) != u16(f, 24):
        return Verdict(False, g.FG_ANOMALY_IPV4_BAD_CHECKSUM)
    if f[22] <= 1:
        return Verdict(False, g.FG_ANOMALY_TTL_EXPIRED)
    reason = g.FG_ANOMALY_IPV4_OPTIONS if hlen > 20 else 0
    if int.from_bytes(f[30:34], "big") & ROUTE[1] != ROUTE[0]:
        return Verdict(False, g.FG_ANOMALY_NO_ROUTE)

    # the parser: L4 only on first fragments, never past the total length
    frag_offset = u16(f, 20) & 0x1FFF
    fragment = frag_offset != 0 or f[20] & 0x20 != 0
    proto, at, l4 = f[23], 14 + hlen, total - hlen
    tcp_ok = udp_ok = fg_ok = rd_ok = xcp_ok = bad_offset = bad_udp_len = False
    ulen = 0
    if frag_offset == 0 and proto == g.IP_PROTO_TCP and l4 >= 20:
        tcp_ok = True
        doff = f[at + 12] >> 4
        bad_offset = doff < 5 or doff * 4 > l4
    if frag_offset == 0 and proto == g.IP_PROTO_UDP and l4 >= 8:
        udp_ok = True
        ulen = u16(f, at + 4)
        bad_udp_len = ulen != l4
    fg_port = udp_ok and g.FG_UDP_PORT in (u16(f, at), u16(f, at + 2))
    if fg_port and not bad_udp_len and ulen >= 8 + g.FG_HEADER_BYTES:
        fg_ok = True
        rd_ok = ulen >= 8 + g.FG_HEADER_BYTES + g.FG_RD_HEADER_BYTES
        xcp_ok = ulen >= 8 + g.FG_HEADER_BYTES + g.FG_XCP_HEADER_BYTES

    # L4Classify
    trailing = n != total + 14
    if trailing and n > g.FG_ETH_MIN_FRAME_BYTES:
        reason = g.FG_ANOMALY_TRAILING_BYTES
    if bad_offset:
        return Verdict(False, g.FG_ANOMALY_TCP_BAD_OFFSET)
    if fragment:
        reason = g.FG_ANOMALY_IPV4_FRAGMENT
    elif bad_udp_len:
        reason = g.FG_ANOMALY_UDP_BAD_LENGTH
    elif (proto == g.IP_PROTO_TCP and not tcp_ok) or (proto == g.IP_PROTO_UDP and not udp_ok):
        reason = g.FG_ANOMALY_L4_TRUNCATED
    if tcp_ok and f[at + 13] & g.TCP_FLAG_SYN:
        if f[at + 13] & g.TCP_FLAG_FIN:
            return Verdict(False, g.FG_ANOMALY_TCP_SYN_FIN)
        if f[at + 13] & g.TCP_FLAG_RST:
            return Verdict(False, g.FG_ANOMALY_TCP_SYN_RST)
    stamp_at = None
    if fg_port and not fragment and not bad_udp_len:
        h = at + 8
        kind = f[h + 1] if fg_ok else 0
        rate = int.from_bytes(f[h + 24 : h + 28], "big") if fg_ok else 0
        if not fg_ok:
            reason = g.FG_ANOMALY_FG_TRUNCATED
        elif f[h] != g.FG_VERSION:
            reason = g.FG_ANOMALY_FG_BAD_VERSION
        elif kind == 0 or kind > g.FG_KIND_MAX:
            reason = g.FG_ANOMALY_FG_BAD_KIND
        elif kind == g.FG_KIND_DATA and rate == 0:
            reason = g.FG_ANOMALY_FG_RATE_ZERO
        elif kind in (g.FG_KIND_RD_FORWARD, g.FG_KIND_RD_BACKWARD) and not rd_ok:
            reason = g.FG_ANOMALY_FG_RD_TRUNCATED
        elif kind in (g.FG_KIND_XCP_DATA, g.FG_KIND_XCP_ACK) and not xcp_ok:
            reason = g.FG_ANOMALY_FG_XCP_TRUNCATED
        elif trailing:
            reason = g.FG_ANOMALY_TRAILING_BYTES
        elif kind == g.FG_KIND_DATA:
            stamp_at = h
            if rate == g.FG_RATE_UNLIMITED:
                reason = g.FG_ANOMALY_FG_RATE_UNLIMITED
        elif kind in (g.FG_KIND_RD_FORWARD, g.FG_KIND_RD_BACKWARD):
            return Verdict(True, reason, rd_at=h, turned=kind == g.FG_KIND_RD_FORWARD)
        elif kind == g.FG_KIND_XCP_DATA and int.from_bytes(f[h + 20 : h + 24], "big") != 0:
            return Verdict(True, reason, xcp_at=h)
    return Verdict(True, reason, stamp_at)


def forwarded(f: bytes) -> bytes:
    """`f` as forwarding alone leaves it: MACs, TTL - 1, IPv4 checksum."""
    out = bytearray(f)
    out[0:12] = bytes.fromhex(H2_MAC.replace(":", "")) + bytes.fromhex(SWITCH_MAC.replace(":", ""))
    out[22] -= 1
    hlen = (out[14] & 0x0F) * 4
    out[24:26] = ipv4_checksum(bytes(out[14 : 14 + hlen])).to_bytes(2, "big")
    return bytes(out)


def udp_sum(f: bytes) -> int:
    """Ones' complement sum, mod 0xFFFF, of the pseudo-header and exactly
    the UDP length: unchanged by a correct checksum update."""
    at = 14 + (f[14] & 0x0F) * 4
    length = u16(f, at + 4)
    pseudo = f[26:34] + bytes([0, g.IP_PROTO_UDP]) + length.to_bytes(2, "big")
    return ones_sum(pseudo + f[at : at + length]) % 0xFFFF


# ---- the corpus ---------------------------------------------------------------


def base_frames() -> list[bytes]:
    """Valid frames the switch routes to PORT."""
    rd_fwd = (
        ipv4()
        / UDP(sport=g.FG_UDP_PORT, dport=g.FG_UDP_PORT)
        / FgRate(kind=g.FG_KIND_RD_FORWARD, rate_kbps=g.FG_RATE_UNLIMITED, ts_us=77)
        / FgRd(flow_key=0x12345678, apr_kbps=3_000)
    )
    lg_pos, lg_neg = xm.sender_terms(0.05, 200, 15_000)
    xcp_data = (
        ipv4()
        / UDP(sport=40000, dport=g.FG_UDP_PORT)
        / FgRate(kind=g.FG_KIND_XCP_DATA, rtt_us=50_000)
        / FgXcp(
            cwnd_bytes=15_000, feedback=g.FG_XCP_FEEDBACK_UNLIMITED, lg_pos=lg_pos, lg_neg=lg_neg
        )
        / Raw(b"q" * 64)
    )
    xcp_low = Ether(bytes(xcp_data))
    xcp_low[FgXcp].feedback = -5_000  # below any feedback: never stamped
    xcp_ack = Ether(bytes(xcp_data))
    xcp_ack[FgRate].kind = g.FG_KIND_XCP_ACK
    for p in (xcp_low, xcp_ack):
        del p[UDP].chksum
    rd_back = Ether(bytes(rd_fwd))
    rd_back[FgRate].kind = g.FG_KIND_RD_BACKWARD
    del rd_back[UDP].chksum
    syn_opts = [("MSS", 1460), ("SAckOK", b""), ("Timestamp", (1, 0)), ("NOP", None)]
    frames: list[Packet] = [
        fg(rate_kbps=50_000),
        fg(rate_kbps=500, payload=b""),
        fg(rate_kbps=g.FG_RATE_UNLIMITED, payload=b"z" * 200),
        fg(rate_kbps=70_000, payload=b"a" * 17, ip={"options": [IPOption_NOP()] * 4}),
        fg(rate_kbps=70_000, ip={"options": [IPOption_RR(routers=["0.0.0.0"] * 2)]}),
        fg(rate_kbps=9_000, kind=g.FG_KIND_ACK, to_receiver=False, ack=5),
        fg(rate_kbps=9_000, kind=g.FG_KIND_PROBE),
        rd_fwd,
        rd_back,
        xcp_data,
        xcp_low,
        xcp_ack,
        ipv4() / TCP(sport=40000, dport=80, flags="S", options=[*syn_opts, ("WScale", 7)]),
        ipv4() / TCP(sport=80, dport=40000, flags="SA", options=[("WScale", 14), ("EOL", None)]),
        ipv4() / TCP(sport=40000, dport=80, flags="A", window=65535) / Raw(b"d" * 100),
        tcp("A"),
        tcp("FA"),
        udp(b"u" * 40),
    ]
    return [bytes(Ether(bytes(p))) for p in frames]


def fix_ipv4_checksum(f: bytearray) -> None:
    if len(f) >= 34 and f[14] >> 4 == 4:
        hlen = (f[14] & 0x0F) * 4
        if hlen >= 20 and len(f) >= 14 + hlen:
            f[24:26] = ipv4_checksum(bytes(f[14 : 14 + hlen])).to_bytes(2, "big")


def mutate(rnd: random.Random, base: bytes) -> tuple[bytes, str]:
    f = bytearray(base)
    hlen = (f[14] & 0x0F) * 4
    l4 = 14 + hlen
    done = []
    for _ in range(rnd.choice((1, 1, 1, 2, 3))):
        op = rnd.choice(
            (
                "cut",
                "cut_fixed",
                "flip",
                "flip_hdr",
                "ip_len",
                "ihl",
                "l4_len",
                "doff",
                "opts",
                "trail",
                "fg",
            )
        )
        done.append(op)
        if len(f) <= 14:
            break  # only the Ethernet header is left
        if op == "cut":
            del f[rnd.randrange(14, len(f)) :]
        elif op == "cut_fixed" and len(f) > l4 + 8:
            # cut inside the L4 part, with the length fields agreeing
            del f[rnd.randrange(l4 + 8, len(f)) :]
            f[16:18] = (len(f) - 14).to_bytes(2, "big")
            if f[23] == g.IP_PROTO_UDP:
                f[l4 + 4 : l4 + 6] = (len(f) - l4).to_bytes(2, "big")
        elif op == "flip":
            for _ in range(rnd.randint(1, 4)):
                i = rnd.randrange(14, len(f))
                f[i] ^= 1 << rnd.randrange(8)
        elif op == "flip_hdr":
            i = rnd.randrange(14, min(len(f), l4 + 44))
            f[i] ^= 1 << rnd.randrange(8)
        elif op == "ip_len" and len(f) >= 18:
            value = u16(f, 16) + rnd.choice((-1, 1, -8, 8, -28, 28, rnd.randint(-64, 64)))
            value = rnd.randrange(65536) if rnd.random() < 0.2 else value % 65536
            f[16:18] = value.to_bytes(2, "big")
        elif op == "ihl" and len(f) > 14:
            f[14] = (f[14] & 0xF0) | rnd.randrange(16)
        elif op == "l4_len" and len(f) >= l4 + 6:
            value = u16(f, l4 + 4) + rnd.choice((-1, 1, -8, 8, -36, 36, rnd.randint(-64, 64)))
            value = rnd.randrange(65536) if rnd.random() < 0.2 else value % 65536
            if f[23] == g.IP_PROTO_UDP:
                f[l4 + 4 : l4 + 6] = value.to_bytes(2, "big")
            elif len(f) > l4 + 12:
                f[l4 + 12] = (f[l4 + 12] & 0x0F) | (rnd.randrange(16) << 4)
        elif op == "doff" and len(f) > l4 + 12:
            f[l4 + 12] = (f[l4 + 12] & 0x0F) | (rnd.randrange(16) << 4)
        elif op == "opts" and len(f) > l4 + 20:
            # IPv4 options, and TCP options (or the bytes after a UDP header),
            # scrambled, with option kinds and lengths legal, silly or huge
            for i in [*range(34, l4), *range(l4 + 20, min(len(f), l4 + 60))]:
                if rnd.random() < 0.5:
                    f[i] = rnd.choice((0, 1, 2, 3, 4, 7, 8, 0x44, 0xFF, rnd.randrange(256)))
        elif op == "trail":
            extra = rnd.choice(
                (
                    bytes(rnd.randrange(256) for _ in range(rnd.randint(1, 64))),
                    bytes(FgRate(rate_kbps=rnd.randrange(2**32))),
                    b"\0" * rnd.randint(1, 20),
                )
            )
            f += extra
        elif op == "fg" and len(f) >= l4 + 8 + 4:
            h = l4 + 8
            f[h + rnd.randrange(2)] = rnd.choice((0, 1, 2, 5, 6, 7, 8, 9, 0xFF))
    if rnd.random() < 0.8:
        fix_ipv4_checksum(f)
        done.append("ipsum")
    return bytes(f), "+".join(done)


class MutationFuzz(FgTestBase):
    """Thousands of mutated frames; see the module docstring."""

    seed = SEED
    frames = FRAMES
    edge = False  # PORT a FICCRD edge: forward RDs turned around, backward RDs consumed

    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)
        self.set_feedback(PORT, FAIR_KBPS, congested=True)
        self.insert(ent.xcp_factors_entry(PORT, *XCP_FACTORS))
        if self.edge:
            self.insert(
                fy.P4TableEntry(
                    g.TABLE_FICCRD_EDGES,
                    match=fy.Match(egress_port=PORT),
                    action=fy.Action(g.ACTION_SET_EDGE_PORT, rtt_min_us=0),
                )
            )
            # no flow slots: TCP towards the edge never has its window rewritten
            self.switch_cli(["register_reset ficcrd_flow_key"])
        # no queue drops: every arrival must come out (0 pps = no rate limit)
        for port in (INGRESS, PORT):
            self.set_queue_rate(port, 0, depth=4 * BATCH)
        self.dataplane.set_qlen(4 * BATCH)

    def tearDown(self) -> None:
        self.dataplane.set_qlen(self.dataplane.MAX_QUEUE_LEN)
        super().tearDown()

    def counters(self) -> tuple[Counter[int], int]:
        anomalies = Counter(
            {i: p for i, (p, _) in self.read_counters("input_anomalies").items() if p}
        )
        arrivals = sum(p for p, _ in self.read_counters("port_arrivals").values())
        return anomalies, arrivals

    def check_output(self, frame: bytes, note: str, verdict: Verdict, out: bytes) -> None:
        want = bytearray(forwarded(frame))
        context = f"mutation {note}\n in  {frame.hex()}\n out {out.hex()}"
        if verdict.stamp_at is not None:
            h = verdict.stamp_at
            rate = int.from_bytes(frame[h + 24 : h + 28], "big")
            want[h + 2] |= g.FG_FLAG_CONGESTED
            want[h + 24 : h + 28] = min(rate, FAIR_KBPS).to_bytes(4, "big")
        elif verdict.xcp_at is not None:
            x = verdict.xcp_at + g.FG_HEADER_BYTES
            old = int.from_bytes(frame[x + 4 : x + 8], "big", signed=True)
            lg_pos = int.from_bytes(frame[x + 8 : x + 10], "big", signed=True)
            lg_neg = int.from_bytes(frame[x + 10 : x + 12], "big", signed=True)
            new = xm.stamp(xm.to_u32(old), xm.switch_feedback(lg_pos, lg_neg, *XCP_FACTORS))
            if new == old:
                self.assertEqual(out, bytes(want), f"XCP rewritten although not lower: {context}")
                return
            want[x + 4 : x + 8] = xm.to_u32(new).to_bytes(4, "big")
        elif self.edge and verdict.turned and verdict.rd_at is not None:
            # back to the sender's MAC, addresses and ports swapped, kind backward
            udp_at = verdict.rd_at - 8
            want[0:6] = frame[6:12]
            want[26:34] = frame[30:34] + frame[26:30]
            want[udp_at : udp_at + 4] = frame[udp_at + 2 : udp_at + 4] + frame[udp_at : udp_at + 2]
            want[verdict.rd_at + 1] = g.FG_KIND_RD_BACKWARD
        else:
            self.assertEqual(out, bytes(want), f"rewritten although not stampable: {context}")
            return
        csum_at = 14 + (frame[14] & 0x0F) * 4 + 6
        want[csum_at : csum_at + 2] = out[csum_at : csum_at + 2]
        self.assertEqual(out, bytes(want), f"wrong rewrite: {context}")
        in_csum, out_csum = u16(frame, csum_at), u16(out, csum_at)
        if in_csum == 0:
            self.assertEqual(out_csum, 0, f"a datagram without checksum got one: {context}")
        else:
            self.assertNotEqual(out_csum, 0, f"checksum 0 sent (RFC 768): {context}")
            self.assertEqual(udp_sum(out), udp_sum(frame), f"UDP checksum broken: {context}")

    def runTest(self) -> None:
        rnd = random.Random(self.seed)
        bases = base_frames()
        frames: list[tuple[bytes, str]] = []
        for base in bases:  # the valid frames themselves, untouched
            frames.append((base, "none"))
        while len(frames) < self.frames:
            frames.append(mutate(rnd, rnd.choice(bases)))
        verdicts = [model(f) for f, _ in frames]
        ports = [v.out_port(self.edge) for v in verdicts]
        # the corpus must reach the checks it is meant to exercise
        reasons = Counter(v.reason for v in verdicts)
        for reason in (
            g.FG_ANOMALY_IPV4_BAD_IHL,
            g.FG_ANOMALY_IPV4_LEN_OVER_FRAME,
            g.FG_ANOMALY_TCP_BAD_OFFSET,
            g.FG_ANOMALY_UDP_BAD_LENGTH,
            g.FG_ANOMALY_TRAILING_BYTES,
            g.FG_ANOMALY_FG_TRUNCATED,
            g.FG_ANOMALY_FG_RD_TRUNCATED,
            g.FG_ANOMALY_FG_XCP_TRUNCATED,
            g.FG_ANOMALY_L4_TRUNCATED,
        ):
            self.assertGreaterEqual(reasons[reason], 10, f"corpus too thin for reason {reason}")
        self.assertGreaterEqual(sum(v.stamp_at is not None for v in verdicts), 50)
        self.assertGreaterEqual(sum(v.xcp_at is not None for v in verdicts), 50)
        self.assertGreaterEqual(sum(v.turned for v in verdicts), 20)
        self.assertGreaterEqual(sum(v.rd_at is not None and not v.turned for v in verdicts), 20)

        start = time.monotonic()
        before, arrivals0 = self.counters()
        for first in range(0, len(frames), BATCH):
            batch = list(
                zip(
                    frames[first : first + BATCH],
                    verdicts[first : first + BATCH],
                    ports[first : first + BATCH],
                    strict=True,
                )
            )
            for (frame, _), _, _ in batch:
                self.send(INGRESS, frame)
            for (frame, note), verdict, port in batch:
                if port is None:
                    continue
                result = self.dataplane.poll(port_number=port, timeout=2.0)
                self.assertIsInstance(
                    result,
                    self.dataplane.PollSuccess,
                    f"frame missing on port {port}: mutation {note}\n in {frame.hex()}",
                )
                self.check_output(frame, note, verdict, bytes(result.packet))
        self.expect_nothing()  # nothing the model drops came out, on any port
        self.settle(0.5)
        after, arrivals1 = self.counters()
        elapsed = time.monotonic() - start

        counted = after - before
        predicted = Counter(v.reason for v in verdicts if v.reason)
        dropped = sum(c for r, c in counted.items() if r in DROP_REASONS)
        self.assertEqual(arrivals1 - arrivals0, sum(v.forwarded for v in verdicts))
        self.assertEqual(arrivals1 - arrivals0 + dropped, len(frames))
        self.assertEqual(dict(counted), dict(predicted))
        rewritten = sum(v.stamp_at is not None for v in verdicts)
        if self.edge:
            rewritten += sum(v.turned for v in verdicts)
        print(
            f"\nfuzz: seed {self.seed}, {len(frames)} frames ({len(bases)} valid bases), "
            f"FICCRD edge {'on' if self.edge else 'off'}: "
            f"{sum(p is not None for p in ports)} out, {rewritten} of them rewritten "
            f"(+ {sum(v.xcp_at is not None for v in verdicts)} XCP data checked), "
            f"{dropped} dropped, {len(predicted)} reasons, {elapsed:.1f} s through the switch"
        )


class MutationFuzzFiccrdEdge(MutationFuzz):
    """The same with PORT a FICCRD edge: well-formed forward RDs come back
    out of port 1 turned around (the only other rewrite), well-formed backward
    RDs are consumed, and no malformed RD is either."""

    seed = SEED + 1
    frames = FRAMES // 2
    edge = True
