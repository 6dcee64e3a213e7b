"""XCP's control plane against the fake P4Runtime server: install writes the
histogram bounds and every port's factors, each port is updated on its own
interval (its average RTT) from its own counter deltas, and what is written is
XCP's equations (DESIGN.md) encoded for the switch."""

from __future__ import annotations

import finsy as fy
import pytest
from finsy.proto import p4r

from fairgate_controller.topology import parse
from fairgate_p4 import generated as g
from fairgate_p4 import xcp_math as xm

from .fake_p4rt import FakeP4Runtime
from .test_agent import BOTTLENECK, C_BPS, Clock, agent_for, options, run
from .test_topology import dumbbell

ALPHA, BETA, GAMMA = 0.4, 0.226, 0.1


def _signed16(raw: bytes) -> int:
    return xm.from_u16(int.from_bytes(raw, "big"))


def factors(fake: FakeP4Runtime) -> dict[int, tuple[int, int]]:
    out = {}
    for e in fake.table(g.TABLE_XCP_FACTORS):
        port = int.from_bytes(e.match[0].exact.value, "big")
        params = {p.param_id: _signed16(p.value) for p in e.action.action.params}
        out[port] = (params[1], params[2])
    return out


def factor_writes(fake: FakeP4Runtime, since: int) -> list[p4r.Update]:
    assert fake.schema is not None
    table_id = fake.schema.tables[g.TABLE_XCP_FACTORS].id
    return [
        u
        for _e, w in fake.writes[since:]
        for u in w.updates
        if u.entity.HasField("table_entry") and u.entity.table_entry.table_id == table_id
    ]


def test_install_writes_buckets_and_idle_factors_and_no_rates() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), Clock(), algo="xcp")
            await agent.install(sw)
            assert len(fake.table(g.TABLE_XCP_RATIO_BUCKETS)) == g.FG_XCP_HIST_BUCKETS - 1
            got = factors(fake)
            assert sorted(got) == [1, 2, 3]
            # idle port: phi = alpha d C > 0, no packets: xi_p = phi / d^2, xi_n = 0
            d = 0.05
            assert got[BOTTLENECK] == (xm.encode_factor(ALPHA * d * C_BPS / d**2), xm.LG_NONE)
            assert fake.table(g.TABLE_PORT_FEEDBACK) == []  # XCP stamps no rates
            writes = len(fake.writes)
            await agent.install(sw)  # nothing to change
            assert factor_writes(fake, writes) == []

    run(scenario())


def test_each_port_runs_on_its_own_rtt_with_xcp_equations() -> None:
    """Port 3 overloaded (y = 2C) with 20 ms RTTs, port 1 lightly loaded with
    200 ms RTTs: after one update each, port 3 is updated every 20 ms and port 1
    only after 200 ms; the factors are the paper's, from the counters."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), clock, algo="xcp")
            await agent.install(sw)
            await agent.step(sw)  # baseline of every port
            rb, xb = agent.rbuckets, xm.RatioBuckets()

            def load(port: int, rtt_us: int, nbytes: int) -> None:
                """Cumulative counters of `nbytes` of XCP data with one RTT, 1000-B frames."""
                fake.set_counter(g.COUNTER_PORT_ARRIVALS, port, nbytes // 1000, nbytes)
                fake.set_counter(g.COUNTER_PORT_DEPARTURES, port, nbytes // 1000, nbytes)
                b = rb.bucket_of(rtt_us)
                fake.set_counter(
                    g.COUNTER_RTT_HIST, (port << g.FG_HIST_BUCKET_BITS) | b, nbytes // 1000, 0
                )
                lg_pos, lg_neg = xm.sender_terms(rtt_us / 1e6, 1000, 15_000)
                xb_index = (port << g.FG_XCP_HIST_BUCKET_BITS) | xb.bucket_of(lg_pos - lg_neg)
                fake.set_counter(g.COUNTER_XCP_RATIO_HIST, xb_index, nbytes // 1000, nbytes)

            # first interval: d(0) = 50 ms for both ports
            clock.t += 0.05
            y3 = int(2 * C_BPS * 0.05)
            load(BOTTLENECK, 20_000, y3)
            y1 = int(0.1 * 12_500_000 * 0.05)  # port 1: 100 Mbit/s host port at 10 %
            load(1, 200_000, y1)
            await agent.step(sw)
            got = factors(fake)
            # port 3: S = C - y < 0, phi = alpha d S, h = max(0, gamma y d - |phi|)
            d3 = rb.value(rb.bucket_of(20_000)) / 1e6  # the RTT the histogram gives
            y = y3 / 0.05
            phi = ALPHA * d3 * (C_BPS - y)
            h = max(0.0, GAMMA * y * d3 - abs(phi))
            scale = d3 / 0.05
            xi_n = (h + max(-phi, 0.0)) / (d3 * y3 * scale)
            assert got[BOTTLENECK][1] == xm.encode_factor(xi_n)
            assert h == 0.0  # y = 2C: |phi| = 0.4 C d exceeds the shuffled 0.1 y d
            assert got[BOTTLENECK][0] == xm.LG_NONE  # no positive part
            rec = agent.recorder.latest[("s1", BOTTLENECK)]
            assert rec["xcp_lg_xi_n"] == got[BOTTLENECK][1]
            assert rec["xcp_sum_s_bytes"] == y3
            assert agent.xcp is not None
            intervals = {p: s.ctl.interval_s for p, s in agent.xcp.ports.items()}
            assert intervals[BOTTLENECK] == pytest.approx(d3)
            assert intervals[1] == pytest.approx(rb.value(rb.bucket_of(200_000)) / 1e6)
            # the loop ticks at half the shortest interval (period_min bounds it)
            assert agent.period_s == pytest.approx(max(agent.config.period_min_s, d3 / 2))

            # d3 later only port 3 is due
            before = len(fake.writes)
            clock.t += d3
            load(BOTTLENECK, 20_000, int(y3 * 1.5))
            load(1, 200_000, int(y1 * 1.5))
            await agent.step(sw)
            ports_written = {
                int.from_bytes(u.entity.table_entry.match[0].exact.value, "big")
                for u in factor_writes(fake, before)
            }
            assert 1 not in ports_written
            assert agent.xcp.ports[1].prev_t < clock.t
            assert agent.xcp.ports[BOTTLENECK].prev_t == clock.t
            # once port 1's own interval has passed, it is updated
            clock.t += intervals[1]
            load(1, 200_000, int(y1 * 3))
            await agent.step(sw)
            assert agent.xcp.ports[1].prev_t == clock.t
            xi_p1, _xi_n1 = factors(fake)[1]
            assert xi_p1 != xm.LG_NONE  # spare capacity: a positive part

    run(scenario())


def test_counter_reset_rebaselines_the_port() -> None:
    """Counters that went backwards (switch restart) write nothing and become
    the port's new baseline; the next interval is measured from them."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), clock, algo="xcp")
            await agent.install(sw)
            fake.set_counter(g.COUNTER_PORT_ARRIVALS, BOTTLENECK, 100, 100_000)
            await agent.step(sw)
            idle = factors(fake)
            fake.set_counter(g.COUNTER_PORT_ARRIVALS, BOTTLENECK, 1, 1_000)  # went back
            clock.t += 0.06
            writes = len(fake.writes)
            await agent.step(sw)
            assert factor_writes(fake, writes) == []
            assert agent.xcp is not None
            assert agent.xcp.ports[BOTTLENECK].prev_t == clock.t
            # 199 kB in 60 ms from the new baseline: overloaded, the factors change
            fake.set_counter(g.COUNTER_PORT_ARRIVALS, BOTTLENECK, 200, 200_000)
            clock.t += 0.06
            await agent.step(sw)
            rec = agent.recorder.latest[("s1", BOTTLENECK)]
            assert rec["xcp_y_Bps"] == pytest.approx(199_000 / 0.06)
            assert factors(fake)[BOTTLENECK] != idle[BOTTLENECK]

    run(scenario())


def test_tick_runs_xcp_and_the_loop_wakes_when_the_earliest_port_is_due() -> None:
    """The pure path both engines call: tick() gives each XCP port its first baseline,
    then updates a port (writes its factors) exactly when its own d has elapsed, and
    next_wakeup is that moment, not a fixed tick."""
    clock = Clock()
    agent = agent_for(parse(dumbbell()), clock, algo="xcp", period_s=None)
    assert agent.xcp is not None
    empty: dict[str, dict[int, tuple[int, int]]] = {}
    start = clock.t
    writes, _ = agent.tick(empty, clock.t)  # baselines
    assert writes == []
    d = agent.xcp.ports[BOTTLENECK].ctl.interval_s  # d(0) = 0.05 s on every port
    assert agent.next_wakeup(clock.t) == pytest.approx(clock.t + d)
    clock.t += d / 2
    agent.tick(empty, clock.t)  # nobody due yet
    assert all(p.prev_t == start for p in agent.xcp.ports.values())
    clock.t += d / 2
    agent.tick(empty, clock.t)  # every port's d has elapsed: all updated
    assert all(p.prev_t == clock.t for p in agent.xcp.ports.values())
    assert agent.next_wakeup(clock.t) == pytest.approx(clock.t + d)
