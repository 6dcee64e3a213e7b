"""benchmarks/bench_sim.py's dumbbells are the networks their names say: every flow's
max-min share is C / N of the bottleneck s1 -> s2. Its 1 Gbit/s case once ran on access
links of the line rate (100 Mbit/s): 7 hosts reached 700 Mbit/s, the receivers' ports
and the senders' uplinks were the bottlenecks, and QFCP's "rate/fair" read 0.10-2.06
against a C / N that no flow could reach."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fairgate_exp.inline import dumbbell, plan_of
from fairgate_exp.oracle import maxmin_pps
from fairgate_exp.plan import LINE_RATE_BPS

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_sim  # noqa: E402


def _cases() -> list[tuple[int, float]]:
    """(users, Mbit/s) of every dumbbell case ("1000-50-qfcp"; not the parking lot)."""
    cases = {tuple(c.split("-")[:2]) for c in bench_sim.CASES if c[0].isdigit()}
    return sorted((int(users), float(mbps)) for mbps, users in cases)


@pytest.mark.parametrize(("users", "mbps"), _cases())
def test_every_bench_dumbbell_flow_gets_c_over_n(users: int, mbps: float) -> None:
    plan = bench_sim.bench_plan(users, mbps, 5.0)
    fair_pps = mbps * 1e6 / 8 / plan.frame / users
    shares = maxmin_pps(plan)
    assert len(shares) == users
    for flow, pps in shares.items():
        assert pps == pytest.approx(fair_pps, rel=1e-6), (flow, pps, fair_pps)


@pytest.mark.parametrize("capacity", ["2Mbit/s", "60Mbit/s", "155Mbit/s", "1Gbit/s", "10Gbit/s"])
@pytest.mark.parametrize("hosts", [1, 4, 7])
def test_inline_dumbbell_access_links_never_bind(capacity: str, hosts: int) -> None:
    """Whatever the capacity and the number of hosts, the access links of
    ``inline.dumbbell`` leave s1 -> s2 the only bottleneck, with room on every host's
    uplink (which no switch controls) for its flows' shares."""
    users = 50
    plan = plan_of(dumbbell(users, capacity, 1.0, hosts=hosts))
    bottleneck = [p for p in plan.ports.values() if (p.switch, p.peer) == ("s1", "s2")]
    assert len(bottleneck) == 1
    cap_pps = bottleneck[0].capacity_Bps(plan.frame) / plan.frame
    shares = maxmin_pps(plan)
    for flow, pps in shares.items():
        assert pps == pytest.approx(cap_pps / users, rel=1e-6), (flow, pps)
    for host in plan.hosts.values():
        sent = sum(shares[f.name] for f in plan.flows if f.src == host.name)
        uplink_pps = (host.uplink_bps or LINE_RATE_BPS) / 8 / plan.frame
        assert sent <= uplink_pps / 1.5, (host.name, sent, uplink_pps)
