"""TCP over the CM: the kernel's TCP paces itself at the CM's rate via SO_MAX_PACING_RATE.

Linux honours SO_MAX_PACING_RATE (bytes/s) with TCP's internal pacing even without the fq
qdisc. The CM flow's ``change_rate`` callback calls :func:`set_pacing_rate`.
"""

from __future__ import annotations

import socket

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
UNLIMITED = (1 << 32) - 1  # ~0U: no pacing limit (the option is a u32 on 32-bit fields)


def set_pacing_rate(sock: socket.socket, rate_Bps: float) -> int:
    """Cap ``sock``'s pacing rate to ``rate_Bps`` (at least 1 B/s); returns what was set."""
    value = max(1, min(UNLIMITED - 1, int(rate_Bps)))
    sock.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, value)
    return value


def get_pacing_rate(sock: socket.socket) -> int:
    return sock.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE)
