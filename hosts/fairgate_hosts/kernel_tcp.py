"""What the kernel's TCP is doing with a socket, from ``TCP_INFO`` (pure decoding + checks).

TCP/CM (``apps/tcpcm.py``) lets the Congestion Manager decide when each segment is sent;
the kernel's own congestion control must then never be what holds data back. This module
decodes the fields that show it and classifies one sample:

- ``in_flight`` = ``unacked - (sacked + lost) + retrans`` segments (the kernel's
  ``tcp_packets_in_flight``), compared with ``snd_cwnd`` (segments);
- ``notsent`` = bytes written to the socket and not yet sent (``tcpi_notsent_bytes``);
- the sample is *cwnd-bound* when data is waiting (in the socket or in the application,
  which holds what the kernel refused) and the window is full (``in_flight >= cwnd``);
  *rwnd-bound* when data is waiting and the bytes in flight fill the peer's window.
  Samples in loss recovery (``ca_state`` Recovery or Loss) are counted apart: there the
  kernel retransmits lost segments first and proportional rate reduction sets its window
  to what was delivered, so new data waits for the retransmissions (the paper's TCP/CM
  also sends a retransmission before new data); outside recovery nothing should wait.
"""

from __future__ import annotations

import argparse
import socket
import struct
from dataclasses import dataclass

# struct tcp_info (include/uapi/linux/tcp.h): 8 bytes of u8 fields, then u32 fields at 8 + 4i,
# then the u64/u32 tail at fixed offsets.
_U32 = {
    "snd_mss": 2,
    "rcv_mss": 3,
    "unacked": 4,
    "sacked": 5,
    "lost": 6,
    "retrans": 7,
    "rtt_us": 15,
    "snd_ssthresh": 17,
    "snd_cwnd": 18,
    "total_retrans": 23,
}
_OFF_BYTES_ACKED = 120
_OFF_NOTSENT = 144
_OFF_BUSY = 168
_OFF_RWND_LIMITED = 176
_OFF_SNDBUF_LIMITED = 184
_OFF_DELIVERED = 192
_OFF_BYTES_SENT = 200
_OFF_BYTES_RETRANS = 208
_OFF_SND_WND = 228
TCP_INFO_LEN = 232
TCP_CA_RECOVERY = 3  # tcpi_ca_state in fast recovery
TCP_CA_LOSS = 4  # tcpi_ca_state while recovering from a retransmission timeout
TCP_NOTSENT_LOWAT = getattr(socket, "TCP_NOTSENT_LOWAT", 25)


@dataclass(frozen=True, slots=True)
class KernelInfo:
    ca_state: int
    snd_mss: int
    unacked: int
    sacked: int
    lost: int
    retrans: int
    rtt_us: int
    snd_ssthresh: int
    snd_cwnd: int
    total_retrans: int
    bytes_acked: int
    notsent: int
    busy_us: int  # time with unsent data in the socket (includes the two below)
    rwnd_limited_us: int
    sndbuf_limited_us: int
    bytes_sent: int
    bytes_retrans: int
    snd_wnd: int
    delivered: int = 0  # segments delivered, SACKed ones included (tcpi_delivered)
    rcv_mss: int = 0  # the largest segment received from the peer (tcpi_rcv_mss)

    @property
    def in_flight(self) -> int:
        """Segments in flight as the kernel counts them against ``snd_cwnd``."""
        return max(0, self.unacked - (self.sacked + self.lost) + self.retrans)


#: TCP's timestamps option (on by default in Linux, net.ipv4.tcp_timestamps), which
#: TCP_MAXSEG counts as segment space: the data per segment is TCP_MAXSEG less it.
TIMESTAMPS_OPTION_BYTES = 12
#: the smallest mss ``limit_segment_size`` takes (Linux's TCP_MIN_MSS, 88, less the option)
MIN_MSS = 88 - TIMESTAMPS_OPTION_BYTES


def limit_segment_size(sock: socket.socket, mss: int) -> None:
    """Before ``connect``: segments of at most ``mss`` data bytes (and so frames of mss +
    66 B, the simulator's TCP frame), where the path allows; the kernel's own otherwise.
    Linux counts the timestamps option in TCP_MAXSEG, so it is set to mss + 12."""
    if mss < MIN_MSS:
        raise ValueError(f"mss must be at least {MIN_MSS} bytes, got {mss}")
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss + TIMESTAMPS_OPTION_BYTES)


def add_mss_argument(parser: argparse.ArgumentParser) -> None:
    """``--mss``: data bytes per segment for a kernel TCP sender (``limit_segment_size``);
    less than ``MIN_MSS`` is refused by the parser, naming the argument."""

    def mss(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number of bytes: {text!r}") from None
        if value < MIN_MSS:
            raise argparse.ArgumentTypeError(f"at least {MIN_MSS} bytes, got {value}")
        return value

    parser.add_argument(
        "--mss",
        type=mss,
        default=None,
        help="data bytes per TCP segment (default: the kernel's, 1448 on a 1500 B MTU)",
    )


def parse_kernel_info(buf: bytes) -> KernelInfo:
    """Decode a ``TCP_INFO`` buffer; raises ValueError when the kernel returned less than
    the fields TCP/CM's trace needs (Linux >= 5.4 returns all of them)."""
    if len(buf) < TCP_INFO_LEN:
        raise ValueError(f"TCP_INFO gave {len(buf)} bytes; TCP/CM's trace needs {TCP_INFO_LEN}")
    u32 = {k: struct.unpack_from("=I", buf, 8 + 4 * i)[0] for k, i in _U32.items()}

    def q(off: int) -> int:
        return int(struct.unpack_from("=Q", buf, off)[0])

    return KernelInfo(
        ca_state=buf[1],
        bytes_acked=q(_OFF_BYTES_ACKED),
        notsent=struct.unpack_from("=I", buf, _OFF_NOTSENT)[0],
        busy_us=q(_OFF_BUSY),
        rwnd_limited_us=q(_OFF_RWND_LIMITED),
        sndbuf_limited_us=q(_OFF_SNDBUF_LIMITED),
        bytes_sent=q(_OFF_BYTES_SENT),
        bytes_retrans=q(_OFF_BYTES_RETRANS),
        snd_wnd=struct.unpack_from("=I", buf, _OFF_SND_WND)[0],
        delivered=struct.unpack_from("=I", buf, _OFF_DELIVERED)[0],
        **u32,
    )


def kernel_info(sock: socket.socket) -> KernelInfo | None:
    try:
        return parse_kernel_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256))
    except (OSError, ValueError, struct.error):
        return None


@dataclass(frozen=True, slots=True)
class Verdict:
    waiting: bool  # granted data not yet on the wire (socket or application)
    cwnd_bound: bool
    rwnd_bound: bool
    headroom: int  # snd_cwnd - in_flight (segments)


def classify(info: KernelInfo, app_backlog: int) -> Verdict:
    """Whether the kernel held back data the CM had granted, and which window did it.

    ``app_backlog``: granted bytes the application still holds because the socket refused
    them (TCP_NOTSENT_LOWAT)."""
    waiting = info.notsent > 0 or app_backlog > 0
    flight = info.in_flight
    cwnd_bound = waiting and flight >= info.snd_cwnd
    rwnd_bound = waiting and info.snd_wnd > 0 and flight * max(1, info.snd_mss) >= info.snd_wnd
    return Verdict(waiting, cwnd_bound, rwnd_bound, info.snd_cwnd - flight)


@dataclass(slots=True)
class BindingTrace:
    """Counts over samples of one connection: how often the kernel held data back and how
    close its window came (the minimum headroom while data was waiting, and overall)."""

    samples: int = 0
    waiting: int = 0
    cwnd_bound: int = 0
    rwnd_bound: int = 0
    loss_state: int = 0  # samples taken while the kernel recovered from an RTO
    recovery: int = 0  # samples in loss recovery (fast recovery or after an RTO)
    cwnd_bound_open: int = 0  # cwnd-bound samples outside loss recovery
    min_headroom: int | None = None
    max_in_flight: int = 0
    min_cwnd: int | None = None
    max_notsent: int = 0

    def add(self, info: KernelInfo, app_backlog: int) -> Verdict:
        v = classify(info, app_backlog)
        self.samples += 1
        self.waiting += v.waiting
        self.cwnd_bound += v.cwnd_bound
        self.rwnd_bound += v.rwnd_bound
        self.loss_state += info.ca_state == TCP_CA_LOSS
        recovering = info.ca_state >= TCP_CA_RECOVERY
        self.recovery += recovering
        self.cwnd_bound_open += v.cwnd_bound and not recovering
        self.max_in_flight = max(self.max_in_flight, info.in_flight)
        self.max_notsent = max(self.max_notsent, info.notsent)
        cwnd = info.snd_cwnd
        self.min_cwnd = cwnd if self.min_cwnd is None else min(self.min_cwnd, cwnd)
        if self.min_headroom is None or v.headroom < self.min_headroom:
            self.min_headroom = v.headroom
        return v

    def as_json(self) -> dict[str, int | None]:
        return {
            "samples": self.samples,
            "waiting": self.waiting,
            "cwnd_bound": self.cwnd_bound,
            "cwnd_bound_open": self.cwnd_bound_open,
            "rwnd_bound": self.rwnd_bound,
            "recovery": self.recovery,
            "loss_state": self.loss_state,
            "min_headroom_segs": self.min_headroom,
            "min_cwnd_segs": self.min_cwnd,
            "max_in_flight_segs": self.max_in_flight,
            "max_notsent_bytes": self.max_notsent,
        }
