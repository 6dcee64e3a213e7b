"""The max-min fair allocation of a plan's flows (progressive filling), with ack load.

Every flow's data follows ``FlowPlan.path`` and its acks ``FlowPlan.ack_path`` (the
controller's routes). One ack per data packet, so a flow sending x data frames/s loads
each port on its data path with x frames and each port on its ack path with x acks. On a
port served in packets/s (BMv2's queue rate) an ack costs a whole packet; on a bit/s port
it costs its size (``ACK_FRAME`` bytes against the data frame's).

Switches stamp rates on data packets only, so a flow is held back only by ports its data
crosses; acks merely use up capacity there. The allocation is therefore the fixed point of:
data capacity of a port = its capacity minus the ack load of the current rates; rates =
progressive filling of the data paths over those capacities (all flows grow at the same
rate until a port is full or a flow reaches its ``max_rate``; those freeze, the rest go on).
"""

from __future__ import annotations

from fairgate_exp.plan import LINE_RATE_BPS, FlowPlan, Plan
from fairgate_p4.header import HEADER_BYTES, XCP_HEADER_BYTES

ACK_FRAME = HEADER_BYTES + 42  # the receiver's ack: rate header echoed in a UDP datagram
XCP_ACK_FRAME = ACK_FRAME + XCP_HEADER_BYTES  # XCP's ack echoes its header too
Key = tuple[str, int]


def ack_frame_of(algo: str) -> int:
    """The ack's frame size in bytes under ``algo`` (XCP's carries its header too)."""
    return XCP_ACK_FRAME if algo == "xcp" else ACK_FRAME


def _capacity(plan: Plan, key: Key, ack_frame: int = ACK_FRAME) -> tuple[float, float]:
    """(capacity in data frames/s, cost of one ack in data frames) of a port."""
    p = plan.ports[key]
    if p.pps is not None:
        return p.pps, 1.0
    bps = p.bps if p.bps is not None else LINE_RATE_BPS
    return bps / (8 * plan.frame), ack_frame / plan.frame


def fill(
    cap: dict[Key, float], paths: dict[str, tuple[Key, ...]], limit: dict[str, float]
) -> dict[str, float]:
    """Progressive filling: max-min rates of flows over ports of capacity ``cap``."""
    rate = dict.fromkeys(paths, 0.0)
    active = set(paths)
    users: dict[Key, list[str]] = {}
    for name, path in paths.items():
        for key in path:
            users.setdefault(key, []).append(name)
    while active:
        step = min(limit[n] - rate[n] for n in active)
        for key, names in users.items():
            n_active = sum(1 for n in names if n in active)
            if n_active:
                used = sum(rate[n] for n in names)
                step = min(step, max(0.0, cap[key] - used) / n_active)
        for n in active:
            rate[n] += step
        frozen = {n for n in active if rate[n] >= limit[n] - 1e-9}
        for key, names in users.items():
            if sum(rate[n] for n in names) >= cap[key] * (1 - 1e-9):
                frozen |= {n for n in names if n in active}
        active -= frozen or {min(active)}
    return rate


def maxmin_pps(
    plan: Plan, flows: list[FlowPlan] | None = None, ack_frame: int = ACK_FRAME
) -> dict[str, float]:
    """Max-min rates in data frames/s of ``flows`` (default: all), as if all were active;
    acks of ``ack_frame`` bytes (``ack_frame_of(algo)``)."""
    flows = plan.flows if flows is None else flows
    keys = {k for f in flows for k in (*f.path, *f.ack_path)}
    cap, ack_cost = {}, {}
    for key in keys:
        cap[key], ack_cost[key] = _capacity(plan, key, ack_frame)
    limit = {
        f.name: f.max_rate_bps / (8 * plan.frame) if f.max_rate_bps is not None else float("inf")
        for f in flows
    }
    paths = {f.name: f.path for f in flows}
    rate = fill(cap, paths, limit)
    for _ in range(200):
        acks = dict.fromkeys(keys, 0.0)
        for f in flows:
            for key in f.ack_path:
                acks[key] += rate[f.name] * ack_cost[key]
        data_cap = {k: max(0.0, cap[k] - acks[k]) for k in keys}
        new = fill(data_cap, paths, limit)
        done = max(abs(new[n] - rate[n]) for n in rate) < 1e-6 if rate else True
        rate = {n: (rate[n] + new[n]) / 2 for n in rate}  # damped: ack-heavy pps ports
        if done:
            break
    return rate


def bottlenecks(plan: Plan, flows: list[FlowPlan] | None = None) -> list[Key]:
    """Measured ports that the allocation fills (data plus acks >= 99.9 %)."""
    flows = plan.flows if flows is None else flows
    rates = maxmin_pps(plan, flows)
    out = []
    for key in plan.measured:
        cap, ack = _capacity(plan, key)
        load = sum(rates[f.name] for f in flows if key in f.path)
        load += sum(rates[f.name] * ack for f in flows if key in f.ack_path)
        if load >= 0.999 * cap:
            out.append(key)
    return out
