"""The hosts' fast rate-header codec and the tests' Scapy layer agree with
each other and with the P4 layout."""

from __future__ import annotations

import struct

import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from fairgate_p4 import generated as g
from fairgate_p4.header import (
    FIELDS,
    HEADER_BYTES,
    Bps_to_kbps,
    HeaderError,
    RateHeader,
    kbps_to_Bps,
)
from fairgate_p4.scapy_layer import FgRate


def sample() -> RateHeader:
    return RateHeader(
        kind=g.FG_KIND_ACK,
        flags=g.FG_FLAG_CONGESTED,
        seq=0xDEADBEEF,
        ack=7,
        ts_us=123456789,
        ts_echo_us=0xFFFFFFFF,
        rtt_us=20_000,
        rate_kbps=10_000,
    )


def test_round_trip() -> None:
    hdr = sample()
    wire = hdr.pack()
    assert len(wire) == HEADER_BYTES == g.FG_HEADER_BYTES
    assert RateHeader.unpack(wire) == hdr
    assert RateHeader.unpack(wire).congested


def test_field_order_is_the_p4_order() -> None:
    assert FIELDS == tuple(name for name, _ in g.HEADER_LAYOUTS["fg_rate_t"])
    wire = RateHeader(seq=1, ack=2, ts_us=3, ts_echo_us=4, rtt_us=5, rate_kbps=6).pack()
    assert struct.unpack("!4B6I", wire)[4:] == (1, 2, 3, 4, 5, 6)
    assert wire[0] == g.FG_VERSION and wire[1] == g.FG_KIND_DATA


def test_codec_matches_scapy_layer() -> None:
    hdr = sample()
    layer = FgRate(**{name: getattr(hdr, name) for name in FIELDS})
    assert bytes(layer) == hdr.pack()


def test_scapy_binds_to_the_reserved_port_both_ways() -> None:
    payload = sample().pack() + b"data"
    for sport, dport in ((40000, g.FG_UDP_PORT), (g.FG_UDP_PORT, 40000)):
        pkt = Ether(bytes(Ether() / IP() / UDP(sport=sport, dport=dport) / payload))
        assert FgRate in pkt
        assert pkt[FgRate].seq == 0xDEADBEEF


def test_pack_into_offset() -> None:
    buf = bytearray(HEADER_BYTES + 4)
    sample().pack_into(buf, 4)
    assert RateHeader.unpack(bytes(buf[4:])) == sample()


def test_short_buffer_is_rejected() -> None:
    with pytest.raises(HeaderError, match="28 bytes"):
        RateHeader.unpack(sample().pack()[:-1])


@pytest.mark.parametrize("offset,value,msg", [(0, 9, "version"), (1, 0, "kind"), (1, 99, "kind")])
def test_strict_checks(offset: int, value: int, msg: str) -> None:
    wire = bytearray(sample().pack())
    wire[offset] = value
    with pytest.raises(HeaderError, match=msg):
        RateHeader.unpack(wire)
    assert RateHeader.unpack(wire, strict=False).seq == 0xDEADBEEF


def test_out_of_range_field_does_not_pack() -> None:
    with pytest.raises(struct.error):
        RateHeader(rate_kbps=1 << 32).pack()


def test_rate_conversions() -> None:
    assert kbps_to_Bps(8) == 1000.0
    assert Bps_to_kbps(1250.0) == 10
    assert Bps_to_kbps(0.0) == 1  # never advertise zero
    assert Bps_to_kbps(1e18) == g.FG_RATE_UNLIMITED - 1  # never the "no limit" value
