"""Fast codec for the FairGate rate header (no Scapy: hosts use it per packet).

The layout comes from ``generated.HEADER_LAYOUTS["fg_rate_t"]``; the struct
format is derived from it once at import, so a layout change in P4 reaches
this codec through ``make build``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

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


# Final: C statics in the simulator's compiled build (scripts/sim_ext.py), not a module-dict
# lookup per packet
_LAYOUT: Final = _layout()
FIELDS: Final = _LAYOUT[0]
_PACKER: Final = _LAYOUT[1]
HEADER_BYTES: Final = _PACKER.size
#: the fields ``RateHeader`` packs, in its own order (written out in pack/unpack: one
#: attribute read each instead of an attrgetter); a layout that P4 changed (``make
#: build``) but this codec does not follow fails at import, not on the wire
_CODEC_FIELDS: Final = (
    "version",
    "kind",
    "flags",
    "reserved",
    "seq",
    "ack",
    "ts_us",
    "ts_echo_us",
    "rtt_us",
    "rate_kbps",
)
if FIELDS != _CODEC_FIELDS:
    raise RuntimeError(f"fg_rate_t has the fields {FIELDS}; the codec packs {_CODEC_FIELDS}")
_VERSION: Final = g.FG_VERSION
_KIND_DATA: Final = g.FG_KIND_DATA
_UNLIMITED: Final = g.FG_RATE_UNLIMITED
_CONGESTED: Final = g.FG_FLAG_CONGESTED
KIND_NAMES: Final = {
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

    def __init__(
        self,
        version: int = _VERSION,
        kind: int = _KIND_DATA,
        flags: int = 0,
        reserved: int = 0,
        seq: int = 0,
        ack: int = 0,
        ts_us: int = 0,
        ts_echo_us: int = 0,
        rtt_us: int = 0,
        rate_kbps: int = _UNLIMITED,
    ) -> None:
        # Written out rather than generated: a dataclass's generated __init__ is Python
        # even in the simulator's mypyc build, and hosts build one or two per packet.
        # Same parameters, same order, same defaults.
        self.version = version
        self.kind = kind
        self.flags = flags
        self.reserved = reserved
        self.seq = seq
        self.ack = ack
        self.ts_us = ts_us
        self.ts_echo_us = ts_echo_us
        self.rtt_us = rtt_us
        self.rate_kbps = rate_kbps

    @property
    def congested(self) -> bool:
        return bool(self.flags & _CONGESTED)

    def pack(self) -> bytes:
        """Wire bytes; raises struct.error if a field does not fit its width."""
        return _PACKER.pack(
            self.version,
            self.kind,
            self.flags,
            self.reserved,
            self.seq,
            self.ack,
            self.ts_us,
            self.ts_echo_us,
            self.rtt_us,
            self.rate_kbps,
        )

    def pack_into(self, buf: bytearray | memoryview, offset: int = 0) -> None:
        _PACKER.pack_into(
            buf,
            offset,
            self.version,
            self.kind,
            self.flags,
            self.reserved,
            self.seq,
            self.ack,
            self.ts_us,
            self.ts_echo_us,
            self.rtt_us,
            self.rate_kbps,
        )

    @classmethod
    def unpack(cls, buf: bytes | bytearray | memoryview, *, strict: bool = True) -> RateHeader:
        """Decode the header at the start of ``buf``.

        Raises HeaderError when ``buf`` is too short and, with ``strict``, when
        the version or kind is not one this code speaks.
        """
        if len(buf) < HEADER_BYTES:
            raise HeaderError(f"rate header needs {HEADER_BYTES} bytes, got {len(buf)}")
        version, kind, flags, reserved, seq, ack, ts, echo, rtt, rate = _PACKER.unpack_from(buf, 0)
        if cls is RateHeader:  # a native call in the compiled build
            hdr = RateHeader(version, kind, flags, reserved, seq, ack, ts, echo, rtt, rate)
        else:
            hdr = cls(version, kind, flags, reserved, seq, ack, ts, echo, rtt, rate)
        if strict:
            if version != _VERSION:
                raise HeaderError(f"rate header version {version}, expected {_VERSION}")
            if kind not in KIND_NAMES:
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


_XCP_PACKER: Final = _xcp_layout()
XCP_HEADER_BYTES: Final = _XCP_PACKER.size


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
