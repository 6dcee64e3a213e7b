"""What the controller learns about one port's XCP traffic in one control interval."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class XcpSample:
    """One port, one interval (the contract between the data plane's counters and XCP).

    ``y_bytes``: bytes that arrived for the port; ``sum_s_bytes``: sum of s_i over the XCP
    data packets; ``sum_rtt_s_over_cwnd``: sum of rtt_i * s_i / cwnd_i (seconds) over them;
    ``avg_rtt_s``: their mean carried RTT (None or 0: none carried one);
    ``queue_bytes_or_pkts``: the persistent queue (bytes); ``interval_s``: the interval.
    """

    y_bytes: float
    sum_s_bytes: float
    sum_rtt_s_over_cwnd: float
    avg_rtt_s: float | None
    queue_bytes_or_pkts: float
    interval_s: float
