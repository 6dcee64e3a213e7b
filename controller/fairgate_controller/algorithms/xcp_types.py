"""What XCP's controller gets per output port and per control interval.

Built by ``fairgate_controller.telemetry.xcp_sample`` from counter deltas (the
switch's xcp_ratio_hist, port_arrivals, rtt_hist and queue_depth_hist), or by
the simulator's switch from the same model (``fairgate_p4.xcp_math``). SI units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields


@dataclass(frozen=True, slots=True)
class XcpSample:
    """One port over one control interval (counts are deltas over the interval).

    y_bytes              bytes that arrived for the port (all traffic: XCP's y)
    sum_s_bytes          sum of s_i over the XCP data packets with a known RTT
                         (exact: byte counters; s = the Ethernet frame without FCS)
    sum_rtt_s_over_cwnd  sum of rtt_i * s_i / cwnd_i over the same packets, seconds
                         (estimated from the log2(rtt/cwnd) histogram,
                         fairgate_p4.xcp_math.estimate_sums, error in docs/data-plane.md)
    avg_rtt_s            mean RTT carried by data packets (None: none carried one)
    queue_bytes_or_pkts  the persistent queue (minimum over the interval), bytes
    interval_s           length of the interval the counts cover
    """

    y_bytes: float
    sum_s_bytes: float
    sum_rtt_s_over_cwnd: float
    avg_rtt_s: float | None
    queue_bytes_or_pkts: float
    interval_s: float

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "avg_rtt_s":
                continue
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise ValueError(f"XcpSample.{f.name} must be a finite number >= 0, got {value!r}")
        if self.interval_s <= 0:
            raise ValueError(f"XcpSample.interval_s must be > 0, got {self.interval_s!r}")
