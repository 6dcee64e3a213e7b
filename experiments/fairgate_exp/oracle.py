"""The max-min fair allocation of a plan's flows (progressive filling).

Every flow's data follows ``FlowPlan.path`` and its acks ``FlowPlan.ack_path`` (the
controller's routes). One data packet per ack, so a flow sending x data frames/s loads
each port on its data path with x frames and each port on its ack path with x acks. On a
port served in packets/s (BMv2's queue rate) an ack costs a whole packet; on a bit/s port
it costs its size (``ACK_FRAME`` bytes against the data frame's). All flows grow at the
same rate until a port is full or a flow reaches its own ``max_rate``; those flows freeze
and the rest go on.
"""

from __future__ import annotations

from fairgate_exp.plan import LINE_RATE_BPS, FlowPlan, Plan
from fairgate_p4.header import HEADER_BYTES

ACK_FRAME = HEADER_BYTES + 42  # the receiver's ack: rate header echoed in a UDP datagram


def maxmin_pps(plan: Plan, flows: list[FlowPlan] | None = None) -> dict[str, float]:
    """Max-min rates in data frames/s of ``flows`` (default: all), as if all were active."""
    flows = plan.flows if flows is None else flows
    frame = plan.frame
    cap: dict[tuple[str, int], float] = {}  # in data frames/s
    cost: dict[tuple[str, int], dict[str, float]] = {}  # port -> flow -> frames per data frame
    for f in flows:
        for key, w in [(k, 1.0) for k in f.path] + [(k, -1.0) for k in f.ack_path]:
            p = plan.ports[key]
            if p.pps is not None:
                cap[key], unit = p.pps, 1.0
            else:
                bps = p.bps if p.bps is not None else LINE_RATE_BPS
                cap[key], unit = bps / (8 * frame), ACK_FRAME / frame
            c = 1.0 if w > 0 else unit
            cost.setdefault(key, {})
            cost[key][f.name] = cost[key].get(f.name, 0.0) + c
    limit = {
        f.name: (f.max_rate_bps / (8 * frame) if f.max_rate_bps is not None else float("inf"))
        for f in flows
    }
    rate = {f.name: 0.0 for f in flows}
    active = set(rate)
    while active:
        best = min((limit[n] - rate[n] for n in active), default=float("inf"))
        for key, per in cost.items():
            w = sum(c for n, c in per.items() if n in active)
            if w <= 0:
                continue
            used = sum(c * rate[n] for n, c in per.items())
            best = min(best, max(0.0, cap[key] - used) / w)
        for n in active:
            rate[n] += best
        frozen = {n for n in active if rate[n] >= limit[n] - 1e-9}
        for key, per in cost.items():
            used = sum(c * rate[n] for n, c in per.items())
            if used >= cap[key] * (1 - 1e-9):
                frozen |= {n for n in per if n in active}
        if not frozen:  # numerical safety: freeze the tightest flow
            frozen = {min(active)}
        active -= frozen
    return rate


def bottlenecks(plan: Plan, flows: list[FlowPlan] | None = None) -> list[tuple[str, int]]:
    """Data-path ports that the max-min allocation fills (>= 99.9 %)."""
    flows = plan.flows if flows is None else flows
    rates = maxmin_pps(plan, flows)
    out = []
    for key in plan.measured or []:
        p = plan.ports[key]
        cap = p.pps if p.pps is not None else (p.bps or LINE_RATE_BPS) / (8 * plan.frame)
        load = sum(rates[f.name] for f in flows if key in f.path)
        if load >= 0.999 * cap:
            out.append(key)
    return out
