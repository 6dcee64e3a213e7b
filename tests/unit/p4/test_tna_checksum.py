"""The TNA program's incremental checksums (p4src/tna/parser.p4), modelled in
Python: the parser subtracts the checksum field and every field a control may
change (ones' complement), the deparser adds the new values back and
complements. Against a full recomputation over random packets with a valid
checksum, the two agree (0x0000 and 0xFFFF are the same ones' complement zero)."""

from __future__ import annotations

import random
import struct

from fairgate_p4 import generated as g


def _words(data: bytes) -> list[int]:
    if len(data) % 2:
        data += b"\0"
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]


def _add(a: int, b: int) -> int:
    s = a + b
    return (s & 0xFFFF) + (s >> 16)


def _sum(words: list[int]) -> int:
    total = 0
    for w in words:
        total = _add(total, w)
    return total


def _checksum(data: bytes) -> int:
    return (~_sum(_words(data))) & 0xFFFF


def _same(a: int, b: int) -> bool:
    return a == b or {a, b} == {0, 0xFFFF}


def _residual(subtracted: list[int], checksum: int) -> int:
    """Parser: Checksum.subtract of the checksum and of the changeable fields."""
    return _sum([(~w) & 0xFFFF for w in [checksum, *subtracted]])


def _update(fields: list[int], residual: int) -> int:
    """Deparser: Checksum.update({fields..., residual})."""
    return (~_sum([*fields, residual])) & 0xFFFF


def _udp_packet(rng: random.Random) -> tuple[bytes, bytes, bytes]:
    src, dst = rng.randbytes(4), rng.randbytes(4)
    fg = bytearray(rng.randbytes(g.FG_HEADER_BYTES))
    payload = rng.randbytes(rng.randrange(0, 60))
    return src + dst, bytes(fg), payload


def _udp_checksum(addrs: bytes, ports: bytes, fg: bytes, payload: bytes) -> int:
    length = 8 + len(fg) + len(payload)
    pseudo = addrs + struct.pack("!BBH", 0, 17, length)
    udp = ports + struct.pack("!HH", length, 0)
    return _checksum(pseudo + udp + fg + payload)


def test_udp_rate_rewrite_matches_full_recomputation() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        addrs, fg, payload = _udp_packet(rng)
        ports = rng.randbytes(4)
        before = _udp_checksum(addrs, ports, fg, payload)
        # parser: subtract the checksum and every header after UDP (fg)
        residual = _residual(_words(fg), before)
        new_fg = bytearray(fg)
        new_fg[2] |= g.FG_FLAG_CONGESTED
        new_fg[24:28] = rng.randbytes(4)  # rate_kbps
        after = _update(_words(bytes(new_fg)), residual)
        assert _same(after, _udp_checksum(addrs, ports, bytes(new_fg), payload))


def test_rd_turnaround_swaps_and_kind_change() -> None:
    rng = random.Random(8)
    for _ in range(2000):
        addrs, fg, payload = _udp_packet(rng)
        ports = rng.randbytes(4)
        before = _udp_checksum(addrs, ports, fg, payload)
        residual = _residual(_words(fg), before)
        turned = bytearray(fg)
        turned[1] = g.FG_KIND_RD_BACKWARD
        # addresses and ports swap: their sum, inside the residual, is unchanged
        after = _update(_words(bytes(turned)), residual)
        swapped = _udp_checksum(
            addrs[4:] + addrs[:4], ports[2:] + ports[:2], bytes(turned), payload
        )
        assert _same(after, swapped)


def test_tcp_window_rewrite() -> None:
    rng = random.Random(9)
    for _ in range(2000):
        tcp = bytearray(rng.randbytes(20))
        tcp[16:18] = b"\0\0"
        body = rng.randbytes(rng.randrange(0, 80))
        pseudo = rng.randbytes(8) + struct.pack("!BBH", 0, 6, len(tcp) + len(body))
        before = _checksum(pseudo + bytes(tcp) + body)
        tcp[16:18] = before.to_bytes(2, "big")
        window = int.from_bytes(tcp[14:16], "big")
        residual = _residual([window], before)
        new_window = rng.randrange(0, 1 << 16)
        after = _update([new_window], residual)
        tcp[14:16] = new_window.to_bytes(2, "big")
        tcp[16:18] = b"\0\0"
        assert _same(after, _checksum(pseudo + bytes(tcp) + body))


def test_ipv4_ttl_with_options_residual() -> None:
    rng = random.Random(10)
    for _ in range(2000):
        ihl = rng.randrange(6, 16)
        hdr = bytearray(rng.randbytes(ihl * 4))
        hdr[10:12] = b"\0\0"
        before = _checksum(bytes(hdr))
        ttl_proto = int.from_bytes(hdr[8:10], "big")
        residual = _residual([ttl_proto], before)
        hdr[8] = (hdr[8] - 1) & 0xFF
        after = _update([int.from_bytes(hdr[8:10], "big")], residual)
        assert _same(after, _checksum(bytes(hdr)))
