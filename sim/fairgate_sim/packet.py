"""Simulated packets: addresses, sizes and the real bytes of the rate header."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from fairgate_p4 import generated as g

UDP: Final = 17
TCP: Final = 6
#: Ethernet 14 + IPv4 20 + UDP 8 (the hosts' FRAME_OVERHEAD).
UDP_OVERHEAD: Final = 14 + 20 + 8
#: Ethernet 14 + IPv4 20 + TCP 20.
TCP_OVERHEAD: Final = 14 + 20 + 20


@dataclass(slots=True)
class Packet:
    """One frame. ``data`` is the UDP payload (rate header first) or, for TCP, None;
    ``size`` is the frame length the switch counts."""

    src: str  # source IPv4 address
    dst: str  # destination IPv4 address
    sport: int
    dport: int
    size: int
    proto: int = UDP
    data: bytes | bytearray | None = None
    tcp_flags: int = 0
    # TCP model fields (sequence in bytes, ack, payload length); unused by the switch.
    seq: int = 0
    ack: int = 0
    length: int = 0
    # TCP header fields FICCRD reads or writes: the window field (scaled as sent) and
    # the window-scale option (SYN and SYN-ACK only; None: absent).
    window: int = 0
    wscale: int | None = None
    # FICCRD: the per-hop ingress metadata (``ficcrd.FcMeta``), and whether this is an
    # egress-to-egress clone on its first egress pass (instance_type E2E_CLONE).
    fc: Any = None
    e2e_clone: bool = False
    # Dropped in egress (mark_to_drop after the queue): the port does not deliver it.
    dropped: bool = False
    # Set by the switch when the UDP ports say "rate header" (L4Classify's fg_port).
    created: float = 0.0
    # TCP timestamps option (RFC 7323), in simulated seconds: TSval when sent, TSecr the
    # value echoed (None: no option, or nothing to echo).
    tsval: float | None = None
    tsecr: float | None = None
    # SACK (RFC 2018): the SACK-permitted option (SYN and SYN-ACK) and an ack's SACK
    # blocks, byte ranges [start, end), the most recent first (None: no option).
    sack_ok: bool = False
    sack: tuple[tuple[int, int], ...] | None = None
    # The PSH flag (a TCP segment that ends an application write): the receiver's delayed
    # ack reads it (Linux acks a full-sized PSH segment at once); switches ignore it.
    psh: bool = False

    def __init__(
        self,
        src: str,
        dst: str,
        sport: int,
        dport: int,
        size: int,
        proto: int = UDP,
        data: bytes | bytearray | None = None,
        tcp_flags: int = 0,
        seq: int = 0,
        ack: int = 0,
        length: int = 0,
        window: int = 0,
        wscale: int | None = None,
        fc: Any = None,
        e2e_clone: bool = False,
        dropped: bool = False,
        created: float = 0.0,
        tsval: float | None = None,
        tsecr: float | None = None,
        sack_ok: bool = False,
        sack: tuple[tuple[int, int], ...] | None = None,
        psh: bool = False,
    ) -> None:
        # Written out rather than generated: a dataclass's generated __init__ is Python
        # even in the mypyc build (mypyc compiles only the methods in the source), and
        # every simulated packet is built here. Same parameters, same order (the
        # timestamps and SACK, added later, last, so positional calls keep their meaning).
        self.src = src
        self.dst = dst
        self.sport = sport
        self.dport = dport
        self.size = size
        self.proto = proto
        self.data = data
        self.tcp_flags = tcp_flags
        self.seq = seq
        self.ack = ack
        self.length = length
        self.window = window
        self.wscale = wscale
        self.fc = fc
        self.e2e_clone = e2e_clone
        self.dropped = dropped
        self.created = created
        self.tsval = tsval
        self.tsecr = tsecr
        self.sack_ok = sack_ok
        self.sack = sack
        self.psh = psh

    @property
    def fg_port(self) -> bool:
        return self.proto == UDP and (self.dport == g.FG_UDP_PORT or self.sport == g.FG_UDP_PORT)


def udp_packet(src: str, dst: str, sport: int, dport: int, data: bytes | bytearray) -> Packet:
    return Packet(src, dst, sport, dport, len(data) + UDP_OVERHEAD, UDP, data)
