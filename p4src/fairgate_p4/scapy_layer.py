"""Scapy layer for the rate header, for tests and packet crafting (never the
send path). Built from the generated layout and bound to FG_UDP_PORT."""

from __future__ import annotations

from scapy.fields import (
    ByteEnumField,
    ByteField,
    Field,
    IntField,
    ShortField,
    SignedIntField,
    SignedShortField,
    XByteField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from fairgate_p4 import generated as g
from fairgate_p4.header import KIND_NAMES

_DEFAULTS = {"version": g.FG_VERSION, "kind": g.FG_KIND_DATA, "rate_kbps": g.FG_RATE_UNLIMITED}
_BY_WIDTH = {8: ByteField, 16: ShortField, 32: IntField}  # all unsigned


def _field(name: str, width: int) -> Field:
    default = _DEFAULTS.get(name, 0)
    if name == "kind":
        return ByteEnumField(name, default, KIND_NAMES)
    if name == "flags":
        return XByteField(name, default)
    if width not in _BY_WIDTH:
        raise RuntimeError(f"fg_rate_t.{name}: no Scapy field for {width} bits")
    return _BY_WIDTH[width](name, default)


class FgRate(Packet):
    name = "FairGateRate"
    fields_desc = [_field(name, width) for name, width in g.HEADER_LAYOUTS["fg_rate_t"]]


class FgRd(Packet):
    """FICCRD's RD extension (fg_rd_t), after FgRate on RD kinds."""

    name = "FairGateRD"
    fields_desc = [_BY_WIDTH[width](name, 0) for name, width in g.HEADER_LAYOUTS["fg_rd_t"]]


class FgXcp(Packet):
    """XCP's congestion header (fg_xcp_t), after FgRate on XCP kinds; feedback and
    the Q8.8 logarithms are signed."""

    name = "FairGateXCP"
    fields_desc = [
        (SignedIntField if width == 32 else SignedShortField)(name, 0)
        if name in ("feedback", "lg_pos", "lg_neg")
        else _BY_WIDTH[width](name, 0)
        for name, width in g.HEADER_LAYOUTS["fg_xcp_t"]
    ]


bind_layers(UDP, FgRate, dport=g.FG_UDP_PORT)
bind_layers(UDP, FgRate, sport=g.FG_UDP_PORT)
bind_layers(FgRate, FgRd, kind=g.FG_KIND_RD_FORWARD)
bind_layers(FgRate, FgRd, kind=g.FG_KIND_RD_BACKWARD)
bind_layers(FgRate, FgXcp, kind=g.FG_KIND_XCP_DATA)
bind_layers(FgRate, FgXcp, kind=g.FG_KIND_XCP_ACK)
