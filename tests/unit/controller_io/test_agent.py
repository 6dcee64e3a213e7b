"""The control loop against a fake P4Runtime server: what it installs, what
it writes each period, how it resumes, and that a backup never writes."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any

import finsy as fy
import pytest
from finsy.proto import p4r

from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.telemetry import queue_buckets, uniform_queue_buckets
from fairgate_controller.topology import Topology, parse
from fairgate_controller.wire import ChannelClosedError
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g
from fairgate_p4.header import Bps_to_kbps

from .fake_p4rt import FakeP4Runtime
from .test_topology import dumbbell

BOTTLENECK = 3  # s1 port towards s2, 10 Mbit/s
C_BPS = 10_000 * 1000 / 8


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def options(election_id: int = 10) -> fy.SwitchOptions:
    return fy.SwitchOptions(
        p4info=artifacts.p4info_path(),
        p4blob=artifacts.bmv2_json_path(),
        device_id=0,
        initial_election_id=election_id,
    )


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def agent_for(topo: Topology, clock: Callable[[], float], **cfg: Any) -> SwitchAgent:
    return SwitchAgent(
        topo.switches["s1"], topo, ControlConfig(**cfg), Recorder(), clock=clock, wall=clock
    )


def gated_agent(clock: Callable[[], float], **cfg: Any) -> SwitchAgent:
    """The dumbbell's s1 with a gate on its admission port, counting completions on its
    own counters (``reverse``: the fakes serve one switch), ``cfg`` the rest."""
    return agent_for(parse(dumbbell()), clock, session_completions="reverse", **cfg)


def feedback(fake: FakeP4Runtime) -> dict[int, tuple[int, int]]:
    out = {}
    for e in fake.table(g.TABLE_PORT_FEEDBACK):
        port = int.from_bytes(e.match[0].exact.value, "big")
        params = {p.param_id: int.from_bytes(p.value, "big") for p in e.action.action.params}
        out[port] = (params[1], params[2])
    return out


def set_port_counters(
    fake: FakeP4Runtime, port: int, arrivals: tuple[int, int], departures: tuple[int, int]
) -> None:
    fake.set_counter(g.COUNTER_PORT_ARRIVALS, port, *arrivals)
    fake.set_counter(g.COUNTER_PORT_DEPARTURES, port, *departures)


def test_install_routes_buckets_admission_and_initial_rates() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), Clock())
            await agent.install(sw)
            assert fake.pipeline_pushes == 1
            assert len(fake.table(g.TABLE_IPV4_ROUTES)) == 3
            assert len(fake.table(g.TABLE_QUEUE_BUCKETS)) == g.FG_HIST_BUCKETS - 1
            assert len(fake.table(g.TABLE_RTT_BUCKETS)) == g.FG_HIST_BUCKETS - 1
            assert len(fake.table(g.TABLE_ADMISSION_PORTS)) == 1
            rates = feedback(fake)
            assert rates[BOTTLENECK] == (Bps_to_kbps(C_BPS), 0)
            assert sorted(rates) == [1, 2, 3]
            # Installing again writes nothing: everything is already right.
            writes = len(fake.writes)
            await agent.install(sw)
            table_writes = [
                w
                for _e, w in fake.writes[writes:]
                if any(u.entity.HasField("table_entry") for u in w.updates)
            ]
            assert table_writes == []

    run(scenario())


def test_each_period_writes_rates_from_counter_deltas() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), clock, algo="qfcp")
            await agent.install(sw)
            await agent.step(sw)  # baseline
            # 0.1 s at twice the capacity: QFCP must cut the rate and set the flag.
            clock.t += 0.1
            nbytes = int(2 * C_BPS * 0.1)
            set_port_counters(
                fake, BOTTLENECK, (nbytes // 1000, nbytes), (nbytes // 2000, nbytes // 2)
            )
            await agent.step(sw)
            rate, congested = feedback(fake)[BOTTLENECK]
            assert rate < Bps_to_kbps(C_BPS) and congested == 1
            # Idle ports keep a rate at or below C and are not congested.
            assert feedback(fake)[1][1] == 0
            rec = agent.recorder.latest[("s1", BOTTLENECK)]
            assert rec["y_Bps"] == pytest.approx(2 * C_BPS, rel=0.01)
            assert rec["drop_pkts"] == nbytes // 1000 - nbytes // 2000
            assert rec["rate_kbps"] == rate

    run(scenario())


def test_restarted_controller_continues_from_the_switch_rates() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        topo = parse(dumbbell())
        async with fake.serve():
            async with fy.Switch("s1", fake.address, options()) as sw:
                first = agent_for(topo, Clock())
                first.feedback = {1: (5_000, False), 2: (6_000, False), 3: (1_234, True)}
                await first.install(sw)
            async with fy.Switch("s1", fake.address, options()) as sw:
                writes = len(fake.writes)
                second = agent_for(topo, Clock(), algo="qfcp")
                await second.install(sw)
                assert second.rate_ctl[3].rate_Bps == pytest.approx(1_234 * 1000 / 8)
                assert feedback(fake)[3] == (1_234, 1)
                assert not any(
                    u.entity.HasField("table_entry")
                    for _e, w in fake.writes[writes:]
                    for u in w.updates
                )
                assert fake.pipeline_pushes == 1  # same pipeline: not pushed again

    run(scenario())


def test_stale_entries_are_removed_and_wrong_ones_fixed() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        topo = parse(dumbbell())
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            await sw.insert(
                [
                    fy.P4TableEntry(
                        g.TABLE_IPV4_ROUTES,
                        match=fy.Match(dst_addr="192.0.2.0/24"),
                        action=fy.Action(g.ACTION_DROP_NO_ROUTE),
                    ),
                    fy.P4TableEntry(
                        g.TABLE_IPV4_ROUTES,
                        match=fy.Match(dst_addr="10.0.1.1/32"),
                        action=fy.Action(g.ACTION_FORWARD, port=9, src_mac=0, dst_mac=0),
                    ),
                ]
            )
            await agent_for(topo, Clock()).install(sw)
            routes = fake.table(g.TABLE_IPV4_ROUTES)
            assert len(routes) == 3
            ports = sorted(int.from_bytes(e.action.action.params[0].value, "big") for e in routes)
            assert ports == [1, 2, 3]

    run(scenario())


def test_counter_reset_rebaselines_without_writing() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), clock)
            await agent.install(sw)
            set_port_counters(fake, BOTTLENECK, (1000, 1_000_000), (1000, 1_000_000))
            await agent.step(sw)
            clock.t += 0.1
            set_port_counters(fake, BOTTLENECK, (10, 10_000), (10, 10_000))  # switch restarted
            writes = len(fake.writes)
            await agent.step(sw)
            assert agent.resets == 1 and len(fake.writes) == writes
            clock.t += 0.1
            set_port_counters(fake, BOTTLENECK, (20, 20_000), (20, 20_000))
            await agent.step(sw)
            assert len(fake.writes) == writes + 1
            assert agent.recorder.latest[("s1", BOTTLENECK)]["arrival_pkts"] == 10

    run(scenario())


def test_backup_controller_never_writes() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        topo = parse(dumbbell())
        async with fake.serve(), fy.Switch("primary", fake.address, options(20)) as primary:
            await agent_for(topo, Clock()).install(primary)
            before = list(fake.writes)
            backup_agent = agent_for(topo, Clock())
            backup_agent.feedback = {3: (42, True)}
            async with fy.Switch("backup", fake.address, options(10)) as backup:
                assert not backup.is_primary
                await asyncio.wait_for(backup_agent.ready(backup), 5)  # returns at once
                with pytest.raises(fy.P4ClientError):
                    await backup.modify([fy.P4TableEntry(g.TABLE_PORT_FEEDBACK)])
            assert fake.writes == before
            assert all(eid == 20 for eid, _w in fake.writes)

    run(scenario())


async def session_step(
    fake: FakeP4Runtime,
    agent: SwitchAgent,
    sw: fy.Switch,
    clock: Clock,
    syn_event: int,
    syns: int,
    fins: int,
) -> dict[str, Any] | None:
    """0.5 s on: the gated port's ``syn_event`` counter at ``syns``, the servers' FINs
    (back through port 1, the reverse path) at ``fins``, one step; the port's record when
    the step closed a session window, else None."""
    clock.t += 0.5
    base = BOTTLENECK << g.FG_SESSION_EVENT_BITS
    fake.set_counter(g.COUNTER_SESSION_EVENTS, base | syn_event, syns, 0)
    fin = (1 << g.FG_SESSION_EVENT_BITS) | g.FG_EVENT_FIN
    fake.set_counter(g.COUNTER_SESSION_EVENTS, fin, fins, 0)
    await agent.step(sw)
    latest = agent.recorder.latest[("s1", BOTTLENECK)]
    return latest if "window_completions_fps" in latest else None


def test_session_control_writes_the_admit_rate_as_a_meter() -> None:
    """Per admission port, once a window has elapsed the session controller's
    admit rate is written as the port's SYN meter (cir = pir), and only when
    it changes."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = gated_agent(clock, session="strategy1", session_window_s=1.0)
            await agent.install(sw)
            meter_id = fake.schema.meters[g.METER_SYN_METER].id
            assert fake.meters[(meter_id, BOTTLENECK)] is None  # unconfigured: admit all
            await agent.step(sw)
            written = []
            windows: list[dict[str, object]] = []
            for i in range(1, 40):
                latest = await session_step(
                    fake, agent, sw, clock, g.FG_EVENT_SYN_UNGATED, 100 * i, 20 * i
                )
                if latest is not None:
                    windows.append(latest)
                cfg = fake.meters[(meter_id, BOTTLENECK)]
                if cfg is not None and (not written or written[-1] != cfg.pir):
                    written.append(cfg.pir)
                    assert cfg.cir == cfg.pir and cfg.pburst == agent.config.meter_burst
            assert written, "no admit rate was ever written"
            assert all(rate >= 1 for rate in written)  # the floor: never zero
            rec = agent.recorder.latest[("s1", BOTTLENECK)]
            assert "admit_fps" in rec
            # a window's record carries the search's state (its restarts mark a change
            # detected even when the restart keeps the gate, as a warm one does)
            assert windows and all(r["session_restarts"] == 0 for r in windows)
            assert windows[0]["session_phase"] == "baseline"
            assert windows[-1]["session_phase"] == "search"

    run(scenario())


def test_a_static_gate_is_written_at_install_and_its_windows_recorded() -> None:
    """``admit_fps`` (--admit-rate): the admission port's meter holds that rate from the
    install on, is never rewritten while it stays, and every window is recorded as a
    search's is (counts, phase "static"); a switch that restarted gets it back."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = gated_agent(clock, admit_fps=50.0, session_window_s=1.0)
            await agent.install(sw)
            meter_id = fake.schema.meters[g.METER_SYN_METER].id
            cfg = fake.meters[(meter_id, BOTTLENECK)]
            assert cfg is not None and cfg.cir == cfg.pir == 50
            writes = len(fake.writes)
            await agent.step(sw)
            windows = []
            for i in range(1, 9):
                latest = await session_step(
                    fake, agent, sw, clock, g.FG_EVENT_SYN_ADMITTED, 50 * i, 20 * i
                )
                if latest is not None:
                    windows.append(latest)
            assert len(windows) == 4
            for w in windows:
                assert w["session_phase"] == "static" and w["admit_fps"] == 50.0
                assert w["window_admitted_fps"] == pytest.approx(100.0)  # 50 per 0.5 s
                assert w["window_completions_fps"] == pytest.approx(40.0)
            meters = [
                u
                for _eid, w in fake.writes[writes:]
                for u in w.updates
                if u.entity.HasField("meter_entry")
            ]
            assert meters == []  # the rate stayed: no meter written after the install
            fake.meters[(meter_id, BOTTLENECK)] = None  # the switch restarted
            await agent.install(sw)
            cfg = fake.meters[(meter_id, BOTTLENECK)]
            assert cfg is not None and cfg.cir == cfg.pir == 50

    run(scenario())


def test_a_static_gate_excludes_a_search() -> None:
    with pytest.raises(ValueError, match="give one of them"):
        ControlConfig(session="strategy1", admit_fps=50.0)
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ValueError, match="--admit-rate must be > 0"):
            ControlConfig(admit_fps=bad)


def test_refused_writes_are_logged_and_the_loop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """A switch that refuses a write (here: our port_feedback entries were
    deleted behind our back, so MODIFY fails NOT_FOUND) does not stop the
    loop: the error is logged readably, the tables are reconciled again (the
    entries come back) and the periods go on."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), time.monotonic, period_s=0.05)
            task = asyncio.create_task(agent.ready(sw))
            for _ in range(100):
                await asyncio.sleep(0.02)
                if agent.periods >= 2:
                    break
            for key in [
                k
                for k, e in fake.entries.items()
                if e.table_id == fake.schema.tables[g.TABLE_PORT_FEEDBACK].id
            ]:
                del fake.entries[key]
            for _ in range(100):
                await asyncio.sleep(0.02)
                if agent.errors >= 1 and agent.periods >= 5:
                    break
            task.cancel()
            assert agent.errors == 1 and agent.periods >= 5
            assert sorted(feedback(fake)) == [1, 2, 3]

    with caplog.at_level("ERROR", logger="fairgate.controller"):
        run(scenario())
    assert "P4Runtime request refused" in caplog.text


@pytest.mark.parametrize("mode,expected", [("reverse", 7 + 2), ("same", 40)])
def test_completions_count_reverse_fins_or_the_gated_ports(mode: str, expected: int) -> None:
    """Retransmitted client FINs on a congested gated port would inflate the
    completion rate; "reverse" counts the FINs leaving the switch's other ports (the
    servers' FINs), "same" those of the gated port. (The default, "downstream":
    tests/unit/controller_io/test_session_counts.py.)"""
    agent = agent_for(parse(dumbbell()), Clock(), session="strategy1", session_completions=mode)

    def fin(port: int) -> int:
        return (port << g.FG_SESSION_EVENT_BITS) | g.FG_EVENT_FIN

    delta = {g.COUNTER_SESSION_EVENTS: {fin(BOTTLENECK): (40, 0), fin(1): (7, 0), fin(2): (2, 0)}}
    assert agent.completions(BOTTLENECK, delta) == expected
    agent.ensure_controllers()
    _writes, _meters = agent.compute(delta, 0.5)
    assert agent.recorder.latest[("s1", BOTTLENECK)]["completions"] == expected


def test_handshakes_count_syn_acks_of_the_other_ports() -> None:
    """Strategy 2's admissions are the servers' SYN-ACKs on the reverse path (flows that
    got through the gate and the queue behind it), not the SYNs the gate passed."""
    agent = gated_agent(Clock(), session="strategy2")

    def ev(port: int, event: int) -> int:
        return (port << g.FG_SESSION_EVENT_BITS) | event

    delta = {
        g.COUNTER_SESSION_EVENTS: {
            ev(BOTTLENECK, g.FG_EVENT_SYN_ADMITTED): (50, 0),
            ev(BOTTLENECK, g.FG_EVENT_SYNACK): (30, 0),  # another direction's handshakes
            ev(1, g.FG_EVENT_SYNACK): (30, 0),
            ev(2, g.FG_EVENT_SYNACK): (8, 0),
            ev(1, g.FG_EVENT_FIN): (35, 0),
        }
    }
    assert agent.handshakes(BOTTLENECK, delta) == 38
    agent.ensure_controllers()
    agent.compute(delta, 0.5)
    assert agent.recorder.latest[("s1", BOTTLENECK)]["handshakes"] == 38


def queue_ranges(fake: FakeP4Runtime) -> list[tuple[int, int, int]]:
    out = []
    for e in fake.table(g.TABLE_QUEUE_BUCKETS):
        r = e.match[0].range
        bucket = int.from_bytes(e.action.action.params[0].value, "big")
        out.append((int.from_bytes(r.low, "big"), int.from_bytes(r.high, "big"), bucket))
    return sorted(out)


def test_queue_buckets_follow_the_algorithms_target() -> None:
    """QFCP (no target queue) keeps the uniform layout; Lestas gets fine buckets
    around q_ref; a controller restarted with the other algorithm replaces the
    ranges (deletes before inserts, so they never overlap) and touches nothing else."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        topo = parse(dumbbell())
        async with fake.serve():
            async with fy.Switch("s1", fake.address, options()) as sw:
                qfcp = agent_for(topo, Clock(), algo="qfcp")
                await qfcp.install(sw)
                assert qfcp.qbuckets == queue_buckets(64) == uniform_queue_buckets(64)
                assert queue_ranges(fake) == qfcp.qbuckets.ranges()
            async with fy.Switch("s1", fake.address, options()) as sw:
                writes = len(fake.writes)
                lestas = agent_for(topo, Clock(), algo="lestas", q_ref_pkts=10.0)
                await lestas.install(sw)
                assert lestas.qbuckets == queue_buckets(64, 10.0) != qfcp.qbuckets
                ranges = queue_ranges(fake)
                assert ranges == lestas.qbuckets.ranges()
                assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False))
                touched = {
                    (u.type, u.entity.table_entry.table_id)
                    for _e, w in fake.writes[writes:]
                    for u in w.updates
                    if u.entity.HasField("table_entry")
                }
                qid = sw.p4info.tables[g.TABLE_QUEUE_BUCKETS].id
                assert {t for _u, t in touched} == {qid}  # routes, RTT buckets, rates kept
                kinds = [
                    u.type
                    for _e, w in fake.writes[writes:]
                    for u in w.updates
                    if u.entity.table_entry.table_id == qid
                ]
                assert kinds.index(p4r.Update.INSERT) > max(
                    i for i, k in enumerate(kinds) if k == p4r.Update.DELETE
                )

    run(scenario())


def test_records_flag_a_saturated_queue_histogram() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), clock, algo="lestas", q_ref_pkts=10.0)
            await agent.install(sw)
            await agent.step(sw)  # baseline
            clock.t += 0.1
            set_port_counters(fake, BOTTLENECK, (100, 100_000), (100, 100_000))
            qb = agent.qbuckets
            base = BOTTLENECK << g.FG_HIST_BUCKET_BITS
            fake.set_counter(g.COUNTER_QUEUE_DEPTH_HIST, base + qb.bucket_of(12), 60, 0)
            fake.set_counter(g.COUNTER_QUEUE_DEPTH_HIST, base + qb.bucket_of(64), 40, 0)
            await agent.step(sw)
            rec = agent.recorder.latest[("s1", BOTTLENECK)]
            assert rec["queue_overflow_pkts"] == 40
            assert rec["queue_min_bytes"] == qb.value(qb.bucket_of(12)) * 1000 == 11_500  # [11, 12]
            assert rec["queue_mean_bytes"] == pytest.approx((0.6 * 11.5 + 0.4 * 64) * 1000)

    run(scenario())


def test_every_port_runs_on_its_own_interval_the_mean_carried_rtt() -> None:
    """period auto: d(0) = 0.05 s for every port; then each port's interval is the mean
    RTT its packets carried (port 3: 20 ms, port 1: 100 ms), port 2 (no RTT carried)
    keeps 0.05 s, and each port is measured over exactly its own interval."""
    clock = Clock()
    agent = agent_for(parse(dumbbell()), clock, algo="lestas", period_s=None)
    agent.ensure_controllers()
    rtt_us = {3: 20_000, 1: 100_000}
    counts = {p: 0 for p in (1, 2, 3)}

    def snap() -> dict[str, dict[int, tuple[int, int]]]:
        hist = {
            (p << g.FG_HIST_BUCKET_BITS) | agent.rbuckets.bucket_of(us): (counts[p], 0)
            for p, us in rtt_us.items()
        }
        arrivals = {p: (n, 1000 * n) for p, n in counts.items()}
        return {
            g.COUNTER_PORT_ARRIVALS: arrivals,
            g.COUNTER_PORT_DEPARTURES: dict(arrivals),
            g.COUNTER_RTT_HIST: hist,
        }

    def at(t: float) -> None:
        clock.t = t
        for p in counts:
            counts[p] += 10
        agent.tick(snap(), t)

    at(100.0)  # baseline
    assert agent.next_wakeup(100.0) == pytest.approx(100.05)
    at(100.05)  # every port due after d(0)
    assert agent.interval == {
        3: pytest.approx(0.02, rel=0.13),
        1: pytest.approx(0.1, rel=0.13),
    }
    d3, d1 = agent.interval[3], agent.interval[1]
    assert agent.next_wakeup(100.05) == pytest.approx(100.05 + d3)
    at(100.05 + d3)  # only port 3 is due
    latest = agent.recorder.latest
    assert latest[("s1", 3)]["t"] == pytest.approx(100.05 + d3)
    assert latest[("s1", 3)]["period_s"] == pytest.approx(d3, abs=1e-5)
    assert latest[("s1", 1)]["t"] == pytest.approx(100.05)
    assert latest[("s1", 2)]["t"] == pytest.approx(100.05)
    at(100.1)  # port 2 (no RTT carried: keeps 0.05 s)
    assert latest[("s1", 2)]["t"] == pytest.approx(100.1)
    assert latest[("s1", 2)]["interval_s"] == 0.05
    at(100.05 + d1)  # port 1 after its 100 ms, measured over all of them
    assert latest[("s1", 1)]["period_s"] == pytest.approx(d1, abs=1e-5)
    assert latest[("s1", 1)]["arrival_pkts"] > 10  # every read since its last update


def test_fixed_period_serves_every_port_together() -> None:
    clock = Clock()
    agent = agent_for(parse(dumbbell()), clock, algo="qfcp", period_s=0.2)
    agent.ensure_controllers()
    agent.tick({}, 100.0)
    assert agent.next_wakeup(100.0) == pytest.approx(100.2)
    writes, _ = agent.tick({}, 100.2)
    assert len(writes) == 3 and agent.periods == 1


def test_a_channel_closed_mid_period_ends_the_loop_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A switch restart closes the channel while the loop may be reading: the loop ends
    (finsy runs it again once the switch is back) and logs why, with no traceback and no
    error counted."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), time.monotonic, period_s=0.05)

            async def down(_sw: fy.Switch) -> None:
                raise ChannelClosedError("the P4Runtime channel is closed (switch down?)")

            agent.step = down  # type: ignore[method-assign]
            await asyncio.wait_for(agent.ready(sw), 5)  # returns after the install
            assert agent.errors == 0

    with caplog.at_level("INFO", logger="fairgate.controller"):
        run(scenario())
    assert "s1: channel closed mid-period (switch down?)" in caplog.text
    assert "Traceback" not in caplog.text
