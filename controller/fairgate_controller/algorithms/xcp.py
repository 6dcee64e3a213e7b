"""XCP's efficiency and fairness controllers (Katabi, Handley, Rohrs, SIGCOMM 2002), per port.

Every average RTT d of the port (the carried H_rtt mean of the last interval; d(0) = 0.05 s)::

    y  = input rate,  S = C - y                      (spare bandwidth, bytes/s)
    Q  = persistent queue                            (bytes)
    phi = alpha * d * S - beta * Q                   (aggregate feedback, bytes; 0.4, 0.226)
    h   = max(0, gamma * y * d - |phi|)              (shuffled traffic, bytes; gamma = 0.1)
    xi_p = (h + max(phi, 0))  / (d * sum(rtt_i * s_i / cwnd_i))
    xi_n = (h + max(-phi, 0)) / (d * sum(s_i))

with the sums over the XCP data packets of one d. The switch gives every packet
``xi_p * rtt_i^2 * s_i / cwnd_i - xi_n * rtt_i * s_i`` bytes and min-stamps H_feedback.

When the interval the loop measured is not d, its sums are scaled by d / interval to the
packets of one d. Edge cases: no RTT carried -> d = ``initial_rtt_s``; no XCP packet in the
interval (idle port, a flow about to start) -> the positive sum is the one of a single flow
(sum = d, which hands the whole positive feedback to the first flow, as a lone flow would
get), and xi_n = 0 (no packet to charge). Pure: no clock, no I/O; the factors are floats,
encoded for the switch by ``fairgate_p4``'s ``encode_factor``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .common import DEFAULT_MIN_RTT_S, check_non_negative, check_positive
from .xcp_types import XcpSample

DEFAULT_INITIAL_RTT_S = 0.05
"""d(0): the interval before any packet carried an RTT (Lestas et al.'s d(0) too)."""


@dataclass(frozen=True)
class XcpDecision:
    """What XCP tells the switch for one port: the per-packet factors, and when to run next."""

    xi_p: float
    xi_n: float
    interval_s: float
    diagnostics: dict[str, float] = field(default_factory=dict)


class XcpController:
    """Per-port XCP controller. State: the current d (the next interval's length)."""

    def __init__(
        self,
        capacity_Bps: float,
        *,
        alpha: float = 0.4,
        beta: float = 0.226,
        gamma: float = 0.1,
        initial_rtt_s: float = DEFAULT_INITIAL_RTT_S,
        min_rtt_s: float = DEFAULT_MIN_RTT_S,
    ) -> None:
        self.capacity_Bps = check_positive("capacity_Bps", capacity_Bps)
        self._alpha = check_non_negative("alpha", alpha)
        self._beta = check_non_negative("beta", beta)
        self._gamma = check_non_negative("gamma", gamma)
        self._min_rtt_s = check_positive("min_rtt_s", min_rtt_s)
        self._d = max(check_positive("initial_rtt_s", initial_rtt_s), self._min_rtt_s)

    @property
    def interval_s(self) -> float:
        """d: the average RTT the next interval should last."""
        return self._d

    def update(self, s: XcpSample) -> XcpDecision:
        interval = check_positive("interval_s", s.interval_s)
        for name in ("y_bytes", "sum_s_bytes", "sum_rtt_s_over_cwnd", "queue_bytes_or_pkts"):
            check_non_negative(name, getattr(s, name))
        rtt = s.avg_rtt_s
        if rtt is not None and math.isfinite(rtt) and rtt > 0:
            self._d = max(rtt, self._min_rtt_s)
        d = self._d
        c = self.capacity_Bps
        y = s.y_bytes / interval
        spare = c - y
        q = s.queue_bytes_or_pkts
        phi = self._alpha * d * spare - self._beta * q
        h = max(0.0, self._gamma * y * d - abs(phi))
        scale = d / interval
        sum_pos = s.sum_rtt_s_over_cwnd * scale
        sum_neg = s.sum_s_bytes * scale
        pos = h + max(phi, 0.0)
        neg = h + max(-phi, 0.0)
        xi_p = pos / (d * (sum_pos if sum_pos > 0 else d))
        xi_n = neg / (d * sum_neg) if sum_neg > 0 else 0.0
        return XcpDecision(
            xi_p=xi_p,
            xi_n=xi_n,
            interval_s=d,
            diagnostics={
                "d_s": d,
                "y_Bps": y,
                "spare_Bps": spare,
                "q_bytes": q,
                "phi_bytes": phi,
                "h_bytes": h,
                "xi_p": xi_p,
                "xi_n": xi_n,
            },
        )
