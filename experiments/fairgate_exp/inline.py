"""An experiment given as a dict (what a TOML file parses to) instead of a file: for
tests and benchmarks that build many small variants of one network. The dict goes
through the same schema, checks and plan as a file, and runs through the same driver."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_exp import units
from fairgate_exp.check import check
from fairgate_exp.load import validate
from fairgate_exp.plan import LINE_RATE_BPS, Plan, build_plan

FRAME_FOR_ACCESS = 1242
"""Frame size for a capacity given in pkt/s when sizing the access links (the default
1200 B payload's frame): only decides whether they must be faster than the line rate."""


def plan_of(doc: dict[str, Any], name: str = "inline", scale: str | None = None) -> Plan:
    """The runnable plan of ``doc`` (``ExperimentError`` on a bad one, as for a file)."""
    path = Path(f"{name}.toml")
    exp = validate(doc, path)
    check(exp)
    return build_plan(exp, path, scale)


def run_sim(plan: Plan, algo: str, out: Path) -> tuple[dict[str, Any], Any]:
    """One algorithm in the simulator (logs under ``out``): the driver's result (``rates``
    per flow as (t, pkt/s), ``rows`` per measured port and period, ``verdicts``) and the
    engine, whose ``net`` is the simulated network at the end."""
    from fairgate_exp.driver import run_algo
    from fairgate_exp.engines.sim import SimEngine

    engine = SimEngine()
    res = run_algo(plan, engine, algo, out, lambda _msg: None)
    return res, engine


def dumbbell(
    users: int,
    capacity: str,
    duration_s: float,
    hosts: int = 4,
    ack_delay: str = "40ms",
    buffer: str = "64pkt",
    stagger: str = "0s",
    algorithm: str = "qfcp",
    access: str | None = None,
) -> dict[str, Any]:
    """``users`` greedy flows from h1..h<hosts> on s1 to r1..r<hosts> on s2 (round robin)
    over one bottleneck s1 -> s2 of ``capacity``; receivers hold acks ``ack_delay``.

    The access links (host uplinks, s2 -> receivers) and the bottleneck's reverse
    direction run at ``access``; by default at the line rate (100 Mbit/s), or at twice
    ``capacity`` when that is faster, so that s1 -> s2 stays the one bottleneck: at the
    line rate, 7 hosts reach only 700 Mbit/s of a 1 Gbit/s link, the receivers' ports
    become the bottlenecks and the senders' uplinks (host queues no switch controls)
    saturate with them."""
    if access is None:
        bps = units.parse_rate(capacity, "capacity").bps(FRAME_FOR_ACCESS)
        access = str(units.Rate(2 * bps, "bit/s")) if 2 * bps > LINE_RATE_BPS else None
    fast = {} if access is None else {"capacity": access, "uplink": access}
    hs = [{"name": f"h{i}", "switch": "s1", **fast} for i in range(1, hosts + 1)]
    rs = [
        {"name": f"r{i}", "switch": "s2", "ack_delay": ack_delay, **fast}
        for i in range(1, hosts + 1)
    ]
    link = {"a": "s1", "b": "s2", "capacity": capacity, "buffer": buffer}
    if access is not None:
        link["reverse_capacity"] = access
    flows = [
        {"name": f"u{i}", "src": f"h{i % hosts + 1}", "dst": f"r{i % hosts + 1}"}
        for i in range(users)
    ]
    if stagger != "0s":
        for i, f in enumerate(flows):
            f["start"] = f"{i * float(stagger.removesuffix('s')):g}s"
    return {
        "switches": ["s1", "s2"],
        "hosts": hs + rs,
        "links": [link],
        "flows": flows,
        "experiment": {"duration": f"{duration_s:g}s", "warmup": "0s", "algorithms": [algorithm]},
    }
