"""A small fluid model of links, queues and rate-following senders, driving real controllers.

- A link has a capacity C (bytes/s), a buffer (bytes) and a FIFO fluid queue integrating
  (sum of arriving rates - C) * dt, clipped to [0, buffer]; what overflows is dropped.
  Departures are shared among flows in proportion to their arrival rates, and a flow's
  downstream arrival rate is its share of the upstream departures (links are numbered in
  path order).
- A sender sends at min(its demand, the rates its links advertised ``feedback_delay_s`` ago).
- Every ``period_s`` each link's controller gets a PortMeasurement built from that period's
  arrivals, departures, drops, queue mean and minimum, and the RTT senders carry
  (base RTT + queueing delays on the path, mean over the flows through the link).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

from fairgate_controller.algorithms import PortMeasurement, RateController

PKT_BYTES = 1000.0


@dataclass
class Link:
    capacity_Bps: float
    buffer_bytes: float
    controller: RateController
    queue_bytes: float = 0.0
    # advertised rate history: (time it takes effect, rate)
    history: list[tuple[float, float]] = field(default_factory=list)
    # per-period accumulators
    acc_arr: float = 0.0
    acc_dep: float = 0.0
    acc_drop: float = 0.0
    acc_q_int: float = 0.0
    acc_q_min: float = math.inf
    acc_rtt: float = 0.0
    acc_rtt_n: int = 0


@dataclass
class Flow:
    path: list[int]
    demand_Bps: float = math.inf
    start_s: float = 0.0
    stop_s: float = math.inf


@dataclass
class Trace:
    t: list[float] = field(default_factory=list)
    rates: list[list[float]] = field(default_factory=list)  # advertised, per link
    flow_rates: list[list[float]] = field(default_factory=list)  # sending rate per flow
    queues: list[list[float]] = field(default_factory=list)
    diagnostics: list[list[dict[str, float]]] = field(default_factory=list)


class FluidNetwork:
    def __init__(
        self,
        links: list[Link],
        flows: list[Flow],
        *,
        period_s: float = 0.05,
        dt_s: float = 0.005,
        base_rtt_s: float = 0.05,
        feedback_delay_s: float | None = None,
        carry_rtt: bool = True,
        window_based: bool = False,
    ) -> None:
        self.links = links
        self.flows = flows
        self.period_s = period_s
        self.dt_s = dt_s
        self.base_rtt_s = base_rtt_s
        self.feedback_delay_s = base_rtt_s if feedback_delay_s is None else feedback_delay_s
        self.carry_rtt = carry_rtt
        self.window_based = window_based
        self._rtt_hist: list[list[float]] = [[] for _ in flows]
        self.t = 0.0
        self.drops_bytes = 0.0
        for link in links:
            link.history = [(-math.inf, link.controller.rate_Bps)]
        self._members = [
            [fi for fi, f in enumerate(flows) if li in f.path] for li in range(len(links))
        ]

    @staticmethod
    def _advertised(link: Link, at: float) -> float:
        i = bisect.bisect_right(link.history, (at, math.inf)) - 1
        return link.history[max(i, 0)][1]

    def _send_rates(self) -> list[float]:
        rates = []
        seen = self.t - self.feedback_delay_s
        for fi, f in enumerate(self.flows):
            if not f.start_s <= self.t < f.stop_s:
                rates.append(0.0)
                continue
            r = math.inf
            for i in f.path:
                r = min(r, self._advertised(self.links[i], seen))
            if self.window_based:
                # window = rate * RTT when the feedback was generated, sent over today's RTT
                r *= self._rtt_then(fi) / self._rtt_now(f)
            rates.append(min(r, f.demand_Bps))
        return rates

    def _rtt_now(self, f: Flow) -> float:
        return self.base_rtt_s + sum(
            self.links[i].queue_bytes / self.links[i].capacity_Bps for i in f.path
        )

    def _rtt_then(self, fi: int) -> float:
        hist = self._rtt_hist[fi]
        lag = round(self.feedback_delay_s / self.dt_s)
        if not hist:
            return self._rtt_now(self.flows[fi])
        return hist[max(0, len(hist) - 1 - lag)]

    def _step(self, dt: float) -> list[float]:
        send = self._send_rates()
        rate_at = list(send)  # each flow's arrival rate at its current link
        for li, link in enumerate(self.links):
            members = self._members[li]
            arr = sum(rate_at[fi] for fi in members)
            q0 = link.queue_bytes
            q1 = q0 + (arr - link.capacity_Bps) * dt
            drop = 0.0
            if q1 > link.buffer_bytes:
                drop = q1 - link.buffer_bytes
                q1 = link.buffer_bytes
            q1 = max(q1, 0.0)
            dep = max(arr * dt - drop - (q1 - q0), 0.0)
            share = dep / (arr * dt) if arr > 0 else 0.0
            for fi in members:
                rate_at[fi] *= share
            link.queue_bytes = q1
            link.acc_arr += arr * dt
            link.acc_dep += dep
            link.acc_drop += drop
            link.acc_q_int += q1 * dt
            link.acc_q_min = min(link.acc_q_min, q1)
            self.drops_bytes += drop
        for fi, f in enumerate(self.flows):
            rtt = self._rtt_now(f)
            self._rtt_hist[fi].append(rtt)
            if send[fi] <= 0:
                continue
            for i in f.path:
                self.links[i].acc_rtt += rtt
                self.links[i].acc_rtt_n += 1
        return send

    def run(self, duration_s: float) -> Trace:
        trace = Trace()
        steps_per_period = max(1, round(self.period_s / self.dt_s))
        dt = self.period_s / steps_per_period
        for _ in range(round(duration_s / self.period_s)):
            send: list[float] = []
            for _ in range(steps_per_period):
                send = self._step(dt)
                self.t += dt
            decisions = []
            for link in self.links:
                rtt = link.acc_rtt / link.acc_rtt_n if link.acc_rtt_n and self.carry_rtt else None
                # drops as the controller derives them: arrivals - departures, clamped
                m = PortMeasurement.from_counters(
                    period_s=self.period_s,
                    capacity_Bps=link.capacity_Bps,
                    arrival_bytes=link.acc_arr,
                    arrival_pkts=link.acc_arr / PKT_BYTES,
                    departure_bytes=link.acc_dep,
                    departure_pkts=link.acc_dep / PKT_BYTES,
                    queue_mean_bytes=link.acc_q_int / self.period_s,
                    queue_min_bytes=link.acc_q_min,
                    rtt_mean_s=rtt,
                )
                d = link.controller.update(m)
                link.history.append((self.t, d.rate_Bps))
                decisions.append(d)
                link.acc_arr = link.acc_dep = link.acc_drop = link.acc_q_int = 0.0
                link.acc_q_min = math.inf
                link.acc_rtt = 0.0
                link.acc_rtt_n = 0
            trace.t.append(self.t)
            trace.rates.append([d.rate_Bps for d in decisions])
            trace.flow_rates.append(send)
            trace.queues.append([link.queue_bytes for link in self.links])
            trace.diagnostics.append([d.diagnostics for d in decisions])
        return trace


def single_bottleneck(
    controller: RateController,
    n_flows: int,
    capacity_Bps: float,
    *,
    buffer_bytes: float | None = None,
    **kwargs: float,
) -> FluidNetwork:
    """N greedy senders through one link."""
    buf = buffer_bytes if buffer_bytes is not None else max(64 * 1500.0, capacity_Bps * 0.1)
    link = Link(capacity_Bps, buf, controller)
    flows = [Flow(path=[0]) for _ in range(n_flows)]
    return FluidNetwork([link], flows, **kwargs)  # type: ignore[arg-type]
