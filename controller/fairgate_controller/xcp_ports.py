"""XCP on a real switch: one XcpController per port, each on its own interval.

Each port's control interval is its measured average RTT d (the controller's
``interval_s``), so ports run on different clocks. The agent's loop wakes when the
earliest port is due (``next_due``; on BMv2 and in the simulator alike, both call
``SwitchAgent.tick``); a port whose interval has elapsed (or will within a quarter
of a tick: one read serves ports due close together) gets an ``XcpSample`` from
the deltas of its own counters since its own last update (``telemetry.xcp_sample``:
arrivals, the queue-depth, RTT and xcp_ratio histograms), its controller's xi_p and
xi_n are encoded (``xcp_math.encode_factor``) and written to ``xcp_factors``. Pure apart from the
entities it returns: no I/O, no clock (``now`` is passed in).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fairgate_controller import entities as ent
from fairgate_controller.algorithms.xcp import XcpController
from fairgate_controller.algorithms.xcp_types import XcpSample
from fairgate_controller.telemetry import Buckets, Snapshot, counter_deltas, xcp_sample
from fairgate_controller.topology import PortSpec
from fairgate_p4.xcp_math import RatioBuckets, encode_factor

# a port is due when at most this much of its interval is left (the loop ticks
# in steps, so a strict >= d would run each interval one tick late on average)
_DUE_SLACK = 0.25


@dataclass
class _Port:
    ctl: XcpController
    factors: tuple[int, int]
    prev: Snapshot | None = None
    prev_t: float = 0.0


class XcpPorts:
    """Per-port XCP state of one switch."""

    def __init__(
        self,
        ports: Iterable[PortSpec],
        qbuckets: Buckets,
        rbuckets: Buckets,
        xbuckets: RatioBuckets | None = None,
        tick_s: float = 0.02,
    ) -> None:
        self.qbuckets, self.rbuckets = qbuckets, rbuckets
        self.xbuckets = xbuckets or RatioBuckets()
        self.tick_s = tick_s
        self.ports: dict[int, _Port] = {}
        for spec in ports:
            ctl = XcpController(spec.capacity_Bps)
            # an idle port's factors until its first interval ends
            idle = ctl.update(XcpSample(0.0, 0.0, 0.0, None, 0.0, ctl.interval_s))
            self.ports[spec.port] = _Port(ctl, (encode_factor(idle.xi_p), encode_factor(idle.xi_n)))

    def entries(self) -> list[Any]:
        """What install() writes: the histogram's bucket bounds and every port's factors."""
        return ent.xcp_bucket_entries(self.xbuckets) + [
            ent.xcp_factors_entry(port, *p.factors) for port, p in sorted(self.ports.items())
        ]

    def rebaseline(self) -> None:
        """Forget every port's baseline (a reconnect or refused write: counters may have reset)."""
        for p in self.ports.values():
            p.prev = None

    def min_interval_s(self) -> float:
        return min((p.ctl.interval_s for p in self.ports.values()), default=1.0)

    def next_due(self, default: float) -> float:
        """When the earliest port's interval ends; ``default`` while a port has no
        baseline yet (the next read gives it one)."""
        if any(p.prev is None for p in self.ports.values()):
            return default
        return min((p.prev_t + p.ctl.interval_s for p in self.ports.values()), default=default)

    def step(self, snap: Snapshot, now: float) -> tuple[list[Any], dict[int, dict[str, Any]]]:
        """Update every port whose interval has elapsed: (xcp_factors writes,
        port -> diagnostics for the period record)."""
        writes: list[Any] = []
        info: dict[int, dict[str, Any]] = {}
        for port, p in sorted(self.ports.items()):
            if p.prev is None:
                p.prev, p.prev_t = snap, now
                continue
            elapsed = now - p.prev_t
            if elapsed <= 0 or elapsed < p.ctl.interval_s - _DUE_SLACK * self.tick_s:
                continue
            delta, reset = counter_deltas(p.prev, snap)
            p.prev, p.prev_t = snap, now
            if reset:
                info[port] = {"xcp_reset": True}
                continue
            sample = xcp_sample(delta, port, elapsed, self.qbuckets, self.rbuckets, self.xbuckets)
            d = p.ctl.update(sample)
            factors = (encode_factor(d.xi_p), encode_factor(d.xi_n))
            if factors != p.factors:
                p.factors = factors
                writes.append(ent.xcp_factors_entry(port, *factors))
            info[port] = {
                "xcp_interval_s": elapsed,
                "xcp_sum_s_bytes": sample.sum_s_bytes,
                "xcp_sum_rtt_s_over_cwnd": sample.sum_rtt_s_over_cwnd,
                "xcp_lg_xi_p": factors[0],
                "xcp_lg_xi_n": factors[1],
                **{f"xcp_{k}": v for k, v in d.diagnostics.items()},
            }
        return writes, info
