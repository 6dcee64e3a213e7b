"""Packet builders for FairGate's PTF tests (Scapy; tests only)."""

from __future__ import annotations

from typing import Any

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from fairgate_p4 import generated as g
from fairgate_p4.scapy_layer import FgRate, FgXcp

HOST_MAC = "00:00:00:00:00:01"
SWITCH_MAC = "02:fa:00:00:00:01"
H2_MAC = "00:00:00:00:00:02"
H1_IP = "10.0.1.1"
H2_IP = "10.0.2.2"


def ipv4(dst: str = H2_IP, src: str = H1_IP, ttl: int = 64, **kw: Any) -> Packet:
    return Ether(src=HOST_MAC, dst=SWITCH_MAC) / IP(src=src, dst=dst, ttl=ttl, **kw)


def udp(payload: bytes = b"x" * 32, sport: int = 40000, dport: int = 5000, **ip: Any) -> Packet:
    return ipv4(**ip) / UDP(sport=sport, dport=dport) / Raw(payload)


def tcp(
    flags: str = "S", sport: int = 40000, dport: int = 80, seq: int = 1000, **ip: Any
) -> Packet:
    return ipv4(**ip) / TCP(sport=sport, dport=dport, flags=flags, seq=seq)


def fg(
    rate_kbps: int = 10_000,
    kind: int = g.FG_KIND_DATA,
    payload: bytes = b"p" * 64,
    to_receiver: bool = True,
    **fields: Any,
) -> Packet:
    """A rate-header datagram: data goes to FG_UDP_PORT, acks come from it."""
    sport, dport = (40000, g.FG_UDP_PORT) if to_receiver else (g.FG_UDP_PORT, 40000)
    return (
        ipv4(**fields.pop("ip", {}))
        / UDP(sport=sport, dport=dport)
        / FgRate(kind=kind, rate_kbps=rate_kbps, **fields)
        / Raw(payload)
    )


def xcp(
    feedback: int = g.FG_XCP_FEEDBACK_UNLIMITED,
    lg_pos: int = 0,
    lg_neg: int = 0,
    cwnd_bytes: int = 15_000,
    kind: int = g.FG_KIND_XCP_DATA,
    rtt_us: int = 50_000,
    payload: bytes = b"x" * 64,
    to_receiver: bool = True,
    **fields: Any,
) -> Packet:
    """An XCP datagram: rate header (kind XCP data or ack) + fg_xcp_t; feedback and
    the Q8.8 logarithms are signed."""
    sport, dport = (40000, g.FG_UDP_PORT) if to_receiver else (g.FG_UDP_PORT, 40000)
    return (
        ipv4(**fields.pop("ip", {}))
        / UDP(sport=sport, dport=dport)
        / FgRate(kind=kind, rtt_us=rtt_us, **fields)
        / FgXcp(cwnd_bytes=cwnd_bytes, feedback=feedback, lg_pos=lg_pos, lg_neg=lg_neg)
        / Raw(payload)
    )


def routed(
    pkt: Packet,
    src_mac: str = SWITCH_MAC,
    dst_mac: str = H2_MAC,
    keep_l4_checksum: bool = False,
    **fg_fields: Any,
) -> Packet:
    """What the switch should emit for `pkt`: MACs rewritten, TTL - 1 and the
    IPv4 checksum recomputed; rate header fields changed as given and the UDP
    checksum recomputed (unless `keep_l4_checksum`: then the L4 bytes must come
    out exactly as they went in)."""
    out = Ether(bytes(pkt))
    out[Ether].src = src_mac
    out[Ether].dst = dst_mac
    out[IP].ttl -= 1
    del out[IP].chksum
    if fg_fields:
        for name, value in fg_fields.items():
            layer = FgXcp if name in ("feedback", "cwnd_bytes", "lg_pos", "lg_neg") else FgRate
            setattr(out[layer], name, value)
    if not keep_l4_checksum and UDP in out and out[UDP].chksum != 0:
        del out[UDP].chksum
    return Ether(bytes(out))


def with_bad_udp_checksum(pkt: Packet) -> Packet:
    """`pkt` with a wrong (non-zero) UDP checksum: a switch that leaves the
    datagram alone must pass the wrong value through unchanged."""
    out = Ether(bytes(pkt))
    out[UDP].chksum = (out[UDP].chksum ^ 0x5A5A) or 1
    return Ether(bytes(out))


def ones_sum(data: bytes) -> int:
    """The 16-bit ones' complement sum of `data` (RFC 1071; an odd byte is padded)."""
    if len(data) % 2:
        data += b"\0"
    total = sum(int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return total
