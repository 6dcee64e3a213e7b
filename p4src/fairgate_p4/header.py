"""Fast codec for the FairGate rate header (no Scapy: hosts use it per packet).

The layout comes from ``generated.HEADER_LAYOUTS["fg_rate_t"]``; the struct
format is derived from it once at import, so a layout change in P4 reaches
this codec through ``make build``.
"""

from __future__ import annotations

import operator
import struct
from dataclasses import dataclass

from fairgate_p4 import generated as g

_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _layout() -> tuple[tuple[str, ...], struct.Struct]:
    fields = g.HEADER_LAYOUTS["fg_rate_t"]
    try:
        codes = "".join(_STRUCT_CODES[width] for _name, width in fields)
    except KeyError as exc:
        raise RuntimeError(
            f"fg_rate_t has a field of {exc} bits; the codec needs 8/16/32/64"
        ) from None
    packer = struct.Struct("!" + codes)
    if packer.size != g.FG_HEADER_BYTES:
        raise RuntimeError(
            f"fg_rate_t packs to {packer.size} bytes but FG_HEADER_BYTES is {g.FG_HEADER_BYTES}"
        )
    return tuple(name for name, _width in fields), packer


FIELDS, _PACKER = _layout()
HEADER_BYTES = _PACKER.size
_GET = operator.attrgetter(*FIELDS)
KIND_NAMES = {
    g.FG_KIND_DATA: "data",
    g.FG_KIND_ACK: "ack",
    g.FG_KIND_PROBE: "probe",
    g.FG_KIND_PROBE_ACK: "probe-ack",
    g.FG_KIND_RD_FORWARD: "rd-forward",
    g.FG_KIND_RD_BACKWARD: "rd-backward",
    g.FG_KIND_XCP_DATA: "xcp-data",
    g.FG_KIND_XCP_ACK: "xcp-ack",
}
XCP_KINDS = frozenset({g.FG_KIND_XCP_DATA, g.FG_KIND_XCP_ACK})


class HeaderError(ValueError):
    """A buffer that does not hold a usable rate header."""


@dataclass(slots=True)
class RateHeader:
    """One rate header; field names and order follow ``fg_rate_t`` in P4."""

    version: int = g.FG_VERSION
    kind: int = g.FG_KIND_DATA
    flags: int = 0
    reserved: int = 0
    seq: int = 0
    ack: int = 0
    ts_us: int = 0
    ts_echo_us: int = 0
    rtt_us: int = 0
    rate_kbps: int = g.FG_RATE_UNLIMITED

    @property
    def congested(self) -> bool:
        return bool(self.flags & g.FG_FLAG_CONGESTED)

    def pack(self) -> bytes:
        """Wire bytes; raises struct.error if a field does not fit its width."""
        return _PACKER.pack(*_GET(self))

    def pack_into(self, buf: bytearray | memoryview, offset: int = 0) -> None:
        _PACKER.pack_into(buf, offset, *_GET(self))

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview, *, strict: bool = True) -> RateHeader:
        """Decode the header at the start of ``buf``.

        Raises HeaderError when ``buf`` is too short and, with ``strict``, when
        the version or kind is not one this code speaks.
        """
        if len(buf) < HEADER_BYTES:
            raise HeaderError(f"rate header needs {HEADER_BYTES} bytes, got {len(buf)}")
        hdr = cls(*_PACKER.unpack_from(buf, 0))
        if strict:
            if hdr.version != g.FG_VERSION:
                raise HeaderError(f"rate header version {hdr.version}, expected {g.FG_VERSION}")
            if hdr.kind not in KIND_NAMES:
                raise HeaderError(f"unknown rate header kind {hdr.kind}")
        return hdr


def kbps_to_Bps(kbps: int) -> float:
    """Rate field (kbit/s) to bytes per second."""
    return kbps * 1000.0 / 8.0


def Bps_to_kbps(bytes_per_s: float) -> int:
    """Bytes per second to the rate field (kbit/s), clamped to 1 .. 2^32-2."""
    return max(1, min(g.FG_RATE_UNLIMITED - 1, int(bytes_per_s * 8.0 / 1000.0)))


def _xcp_layout() -> struct.Struct:
    fields = g.HEADER_LAYOUTS["fg_xcp_t"]
    expected = (("cwnd_bytes", 32), ("feedback", 32), ("lg_pos", 16), ("lg_neg", 16))
    if tuple(fields) != expected:
        raise RuntimeError(f"fg_xcp_t is {fields}; the XCP codec expects {expected}")
    packer = struct.Struct("!Iihh")  # feedback and the logarithms are signed
    if packer.size != g.FG_XCP_HEADER_BYTES:
        raise RuntimeError(
            f"fg_xcp_t packs to {packer.size} bytes but FG_XCP_HEADER_BYTES is "
            f"{g.FG_XCP_HEADER_BYTES}"
        )
    return packer


_XCP_PACKER = _xcp_layout()
XCP_HEADER_BYTES = _XCP_PACKER.size


@dataclass(slots=True)
class XcpHeader:
    """XCP's congestion header (``fg_xcp_t``) after the rate header on XCP kinds.

    ``feedback``, ``lg_pos`` and ``lg_neg`` are signed here and two's complement
    on the wire; ``fairgate_p4.xcp_math`` computes the logarithms.
    """

    cwnd_bytes: int = 0
    feedback: int = g.FG_XCP_FEEDBACK_UNLIMITED
    lg_pos: int = 0
    lg_neg: int = 0

    def pack(self) -> bytes:
        """Wire bytes; raises struct.error if a field does not fit its width."""
        return _XCP_PACKER.pack(self.cwnd_bytes, self.feedback, self.lg_pos, self.lg_neg)

    def pack_into(self, buf: bytearray | memoryview, offset: int = 0) -> None:
        _XCP_PACKER.pack_into(buf, offset, self.cwnd_bytes, self.feedback, self.lg_pos, self.lg_neg)

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview, offset: int = 0) -> XcpHeader:
        """Decode the XCP header at ``offset`` (HeaderError when ``buf`` is too short)."""
        if len(buf) - offset < XCP_HEADER_BYTES:
            raise HeaderError(
                f"XCP header needs {XCP_HEADER_BYTES} bytes, got {max(0, len(buf) - offset)}"
            )
        return cls(*_XCP_PACKER.unpack_from(buf, offset))
