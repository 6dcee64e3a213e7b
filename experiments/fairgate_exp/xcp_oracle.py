"""XCP's own equilibrium on a plan (Low, Andrew, Wydrowski, "Understanding XCP:
Equilibrium and Fairness", INFOCOM 2005 / IEEE/ACM ToN 17(6) 2009), next to max-min.

XCP is max-min fair at a single link, not in a network. Per port, per interval d
(``fairgate_controller.algorithms.xcp``): phi = alpha*d*(C - y) - beta*Q,
h = max(0, gamma*y*d - |phi|); the positive pool h + phi+ is shared so that every XCP
flow crossing the port gets the same rate increase, the negative pool h + phi- in
proportion to its rate. A flow's feedback there is >= 0 exactly when its rate is
below ``r = (D / N) * (h + phi+) / (h + phi-)`` (D: XCP data bytes/s, N: XCP flows
through the port), and the min-stamped header gives each flow the smallest of its
ports' feedbacks, so at equilibrium every flow runs at the smallest r on its path.

The catch is N: it counts the flows that are held back elsewhere too. They get their
share of the positive pool here and cannot use it, so a port whose flows are partly
limited elsewhere settles with phi > 0, i.e. spare capacity S = C - y > 0 (and with
no queue, Q = 0). Since h > 0 needs phi < gamma*y*d, alpha*S < gamma*y: y > C *
alpha / (alpha + gamma) = 0.8 C with XCP's constants (the paper's lower bound on
utilisation). The flows limited by such a port then get less than their max-min share.

``xcp_equilibrium_pps`` computes that equilibrium by progressive filling (the paper's
algorithm, in the form of ``oracle.fill``): all unfrozen flows grow at one level t;
the first port whose r (from the current rates, acks included as non-XCP load) falls
to t freezes its unfrozen flows at t; repeat. Units as ``oracle.maxmin_pps``: data
frames per second; an ack costs ``oracle.XCP_ACK_FRAME`` bytes on a bit/s port.
"""

from __future__ import annotations

from fairgate_exp.oracle import XCP_ACK_FRAME, Key, _capacity
from fairgate_exp.plan import FlowPlan, Plan

ALPHA, GAMMA = 0.4, 0.1  # XCP's (beta only acts on a queue, which is 0 at equilibrium)


def port_rate(cap: float, data: float, acks: float, n: int) -> float:
    """r of one port: the rate below which an XCP flow crossing it gets positive
    feedback, given its XCP data rate ``data``, other load ``acks`` and ``n`` XCP flows
    (any consistent unit; inf: all feedback is positive, no equilibrium here yet)."""
    y = data + acks
    if n == 0 or data <= 0:
        return float("inf")
    if y >= cap:  # full: phi <= 0; with Q = 0 at equilibrium, phi = 0 and r = D / N
        return data / n
    phi, shuffle = ALPHA * (cap - y), GAMMA * y  # both per unit of d (d cancels)
    if phi >= shuffle:  # h = 0: every packet gets positive feedback
        return float("inf")
    return (data / n) * shuffle / (shuffle - phi)


def fill_xcp(
    cap: dict[Key, float], acks: dict[Key, float], paths: dict[str, tuple[Key, ...]]
) -> dict[str, float]:
    """XCP's progressive filling over ports of capacity ``cap`` carrying the fixed
    non-XCP load ``acks``: every unfrozen flow at one level t, raised until some port
    with an unfrozen flow has r <= t; that port's unfrozen flows freeze at t."""
    rate = dict.fromkeys(paths, 0.0)
    active = set(paths)
    users: dict[Key, list[str]] = {k: [] for k in cap}
    for name, path in paths.items():
        for k in path:
            users[k].append(name)

    def binding(t: float) -> list[Key]:
        out = []
        for k, names in users.items():
            if not any(n in active for n in names):
                continue
            data = sum(t if n in active else rate[n] for n in names)
            if port_rate(cap[k], data, acks[k], len(names)) <= t:
                out.append(k)
        return out

    low, high = 0.0, max(cap.values())
    while active:
        if not binding(high):
            raise ValueError("xcp_equilibrium_pps: no port binds (a flow crosses no port?)")
        step = high / 4000  # scan, then bisect the first level at which a port binds
        t = low
        while not binding(t + step):
            t += step
        lo, hi = t, t + step
        for _ in range(60):
            mid = (lo + hi) / 2
            if binding(mid):
                hi = mid
            else:
                lo = mid
        ports = set(binding(hi))
        for n in active:
            rate[n] = hi
        frozen = {n for n in active if any(k in ports for k in paths[n])}
        active -= frozen
        low = hi
    return rate


def xcp_equilibrium_pps(plan: Plan, flows: list[FlowPlan] | None = None) -> dict[str, float]:
    """XCP's equilibrium rates in data frames/s of ``flows`` (default: all) as if all were
    active (no ``max_rate``: the random topologies have none). Acks as in
    ``oracle.maxmin_pps``: a damped fixed point of their load over the rates."""
    flows = plan.flows if flows is None else flows
    if any(f.max_rate_bps is not None for f in flows):
        raise ValueError("xcp_equilibrium_pps: flows with a max_rate are not modelled")
    keys = {k for f in flows for k in (*f.path, *f.ack_path)}
    cap, ack_cost = {}, {}
    for key in keys:
        cap[key], ack_cost[key] = _capacity(plan, key, XCP_ACK_FRAME)
    paths = {f.name: f.path for f in flows}
    rate = fill_xcp(cap, dict.fromkeys(keys, 0.0), paths)
    for _ in range(200):
        acks = dict.fromkeys(keys, 0.0)
        for f in flows:
            for key in f.ack_path:
                acks[key] += rate[f.name] * ack_cost[key]
        new = fill_xcp(cap, acks, paths)
        done = max(abs(new[n] - rate[n]) for n in rate) < 1e-4 if rate else True
        rate = {n: (rate[n] + new[n]) / 2 for n in rate}
        if done:
            break
    return rate


def main(argv: list[str] | None = None) -> int:
    """``python -m fairgate_exp.xcp_oracle SEED|FILE [--scale S] [--run]``: a random
    topology's (or an experiment file's) max-min and XCP equilibrium per flow, and with
    ``--run`` what XCP measures in the simulator (random topologies)."""
    import argparse
    import tempfile
    from pathlib import Path

    from fairgate_exp.check import check
    from fairgate_exp.driver import run_algo
    from fairgate_exp.engines.sim import SimEngine
    from fairgate_exp.load import load, validate
    from fairgate_exp.oracle import maxmin_pps
    from fairgate_exp.plan import build_plan
    from fairgate_exp.randtopo import random_experiment

    ap = argparse.ArgumentParser(prog="python -m fairgate_exp.xcp_oracle")
    ap.add_argument("what", help="a random topology's seed, or an experiment file")
    ap.add_argument("--scale", default=None, help="the file's scale (default: its first)")
    ap.add_argument("--run", action="store_true", help="also run XCP in the simulator")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.what.isdigit():
            path = Path(tmp) / "random.toml"
            exp = validate(random_experiment(int(args.what), ["xcp"]), path)
            check(exp)
            plan = build_plan(exp, path, None)
            title = exp.experiment.title
        else:
            plan = load(args.what, args.scale)
            title = f"{args.what}, scale {plan.scale}"
        mm, eq = maxmin_pps(plan, ack_frame=XCP_ACK_FRAME), xcp_equilibrium_pps(plan)
        got: dict[str, float] = {}
        if args.run:
            res = run_algo(plan, SimEngine(), "xcp", Path(tmp) / "xcp", lambda _m: None)
            for v in res["verdicts"]:
                if v.metric == "maxmin":
                    got = {n: f["measured_pps"] for n, f in v.detail["flows"].items()}
    mbps = plan.frame * 8 / 1e6
    print(f"{title}; pkt/s (x {mbps:g} = Mbit/s)")
    print("flow      max-min  XCP-eq  eq-off" + ("  measured  vs-maxmin  vs-eq" if got else ""))
    for n in mm:
        row = f"{n:<8}{mm[n]:9.2f}{eq[n]:8.2f}{abs(eq[n] - mm[n]) / mm[n]:8.1%}"
        if n in got:
            g = got[n]
            row += f"{g:10.2f}{abs(g - mm[n]) / mm[n]:10.1%}{abs(g - eq[n]) / eq[n]:7.1%}"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
