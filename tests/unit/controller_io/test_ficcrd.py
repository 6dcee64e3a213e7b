"""FICCRD on the controller side: the DPF table from BUR, alpha and the
buffer, the roles and entities per switch, the counters it reads, and the
agent wiring (off by default)."""

from __future__ import annotations

import itertools
import math

import finsy as fy
import pytest

from fairgate_controller import ficcrd as fc
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.topology import parse
from fairgate_p4 import generated as g

from .fake_p4rt import FakeP4Runtime
from .test_agent import Clock, options, run
from .test_topology import dumbbell

ONE = g.FG_DPF_ONE


# ---- the paper's function -------------------------------------------------------
def test_dpf_shape() -> None:
    assert fc.dpf(0, 200) == pytest.approx(1.15)
    assert fc.dpf(100, 200) == pytest.approx(1.0)  # Q0 = 0.5 * 200
    assert fc.dpf(200, 200) == 0.0
    assert fc.dpf(150, 200) == pytest.approx(0.5)
    assert fc.dpf(50, 200) == pytest.approx(1.075)
    assert fc.dpf(250, 200) == 0.0  # never negative
    assert fc.dpf(0, 100, bur=0.25, alpha=2.0) == pytest.approx(2.0)
    # continuous at Q0 from both sides
    assert fc.dpf(100 + 1e-9, 200) == pytest.approx(fc.dpf(100 - 1e-9, 200))


def test_fixed_point_is_q6_10_and_clamped() -> None:
    assert fc.to_fixed(1.0) == ONE == 1 << g.FG_DPF_SHIFT
    assert fc.to_fixed(1.15) == 1178
    assert fc.to_fixed(0.0) == 0
    assert fc.to_fixed(-1) == 0
    assert fc.to_fixed(1000.0) == 0xFFFF


@pytest.mark.parametrize("buffer", [2, 3, 10, 33, 64, 200, 1000, 5000])
@pytest.mark.parametrize("bur", [0.25, 0.5, 0.8])
def test_dpf_table_covers_every_depth_once(buffer: int, bur: float) -> None:
    table = fc.dpf_levels(buffer, bur=bur)
    assert table[0].lo == 0 and table[-1].hi == fc.QDEPTH_MAX
    for a, b in itertools.pairwise(table):
        assert b.lo == a.hi + 1  # no gaps, no overlaps
    assert len(table) <= fc.MAX_RANGES_PER_PORT
    # the Q > Q0 test of the switch: exactly the depths above BUR * buffer
    q0 = bur * buffer
    for level in table:
        for q in {level.lo, level.hi}:
            assert level.above_q0 == (q > q0), (q, q0, level)
    # DPF never grows with the queue, starts near alpha and ends at 0
    values = [lv.dpf for lv in table]
    assert values == sorted(values, reverse=True)
    assert values[-1] == 0
    assert all(lv.dpf <= ONE for lv in table if lv.above_q0)
    assert all(lv.dpf >= ONE for lv in table if not lv.above_q0)


def test_dpf_table_entries_are_midpoints_and_exact_for_small_buffers() -> None:
    table = fc.dpf_levels(20, bur=0.5, alpha=1.15, levels=15)
    # Q0 = 10: depths 0..10 are 11 one-packet ranges; 11..19 nine more
    assert [(lv.lo, lv.hi) for lv in table[:11]] == [(q, q) for q in range(11)]
    for lv in table[:-1]:
        assert lv.dpf == fc.to_fixed(fc.dpf(lv.lo, 20))
    assert table[0].dpf == 1178 and table[10].dpf == ONE
    assert (table[-1].lo, table[-1].dpf) == (20, 0)
    big = fc.dpf_levels(1000)
    for lv in big[:-1]:
        assert lv.dpf == fc.to_fixed(fc.dpf((lv.lo + lv.hi) / 2, 1000))
    # the worst error of a range is half its width times the slope
    slope_above = 1 / (1000 - 500)
    width = max(lv.hi - lv.lo + 1 for lv in big[:-1])
    for q in range(0, 1000, 7):
        got = fc.dpf_lookup(big, q).dpf / ONE
        assert got == pytest.approx(fc.dpf(q, 1000), abs=width / 2 * slope_above + 1 / ONE)


def test_explicit_rate_and_window_match_the_switch() -> None:
    table = fc.dpf_levels(64)
    empty = fc.dpf_lookup(table, 0)
    assert fc.explicit_rate(10_000, g.FG_RATE_UNLIMITED, empty) == (10_000 * empty.dpf) >> 10
    assert fc.explicit_rate(10_000, 5_000, empty) == 5_000
    assert fc.explicit_rate(0, 7_000, empty) == 7_000  # MAPR unknown: untouched
    full = fc.dpf_lookup(table, 64)
    assert fc.explicit_rate(10_000, 7_000, full) == 0
    # ER x RTT / 8000 via >> 13, floored at two segments, then scaled
    assert fc.window_limit(8_000, 100_000, 7) == 97_656 >> 7
    assert fc.window_limit(8_000, 100_000, 0) == 97_656
    assert fc.window_limit(1, 10, 0) == g.FG_FICCRD_MIN_WINDOW
    assert fc.window_limit(1, 10, 14) == 1
    exact = 8_000 * 100_000 / 8000
    assert fc.window_limit(8_000, 100_000, 0) == pytest.approx(exact, rel=0.025)
    assert fc.window_limit(8_000, 100_000, 0) <= exact


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rd_interval": -1},
        {"rd_interval": 1 << 16},
        {"bur": 0},
        {"bur": 1},
        {"alpha": 0.9},
        {"alpha": 64},
        {"levels": 0},
        {"levels": 16},
        {"rtt_min_us": -5},
        {"core": "hosts"},
    ],
)
def test_config_rejects_bad_values(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        fc.FiccrdConfig(**kwargs)


def test_dpf_levels_rejects_tiny_buffers() -> None:
    with pytest.raises(ValueError):
        fc.dpf_levels(1)
    with pytest.raises(ValueError):
        fc.dpf(1, 0)


# ---- roles and entities ----------------------------------------------------------
def test_roles_hosts_are_edges_links_are_cores() -> None:
    topo = parse(dumbbell())
    r = fc.roles(topo, "s1", fc.FiccrdConfig())
    assert r.edge == (1, 2)
    assert [p.port for p in r.core] == [3]
    r_all = fc.roles(topo, "s1", fc.FiccrdConfig(core="all"))
    assert [p.port for p in r_all.core] == [1, 2, 3]
    assert fc.roles(topo, "s2", fc.FiccrdConfig()).edge == (1,)


def test_table_entries_for_a_switch() -> None:
    topo = parse(dumbbell())
    cfg = fc.FiccrdConfig(rd_interval=5, rtt_min_us=30_000)
    entries = fc.table_entries(topo, "s1", cfg)
    by_table: dict[str, list[fy.P4TableEntry]] = {}
    for e in entries:
        by_table.setdefault(e.table_id, []).append(e)
    assert len(by_table[g.TABLE_FICCRD_SOURCES]) == 2
    assert len(by_table[g.TABLE_FICCRD_EDGES]) == 2
    assert {e.action.args["rd_interval"] for e in by_table[g.TABLE_FICCRD_SOURCES]} == {5}
    assert {e.action.args["rtt_min_us"] for e in by_table[g.TABLE_FICCRD_EDGES]} == {30_000}
    dpf = by_table[g.TABLE_FICCRD_DPF]
    assert len(dpf) == len(fc.dpf_levels(64))  # the link's queue_depth
    assert all(int(e.match["port"]) == 3 for e in dpf)
    assert all(e.priority == 1 for e in dpf)
    sessions = fc.clone_sessions(topo, "s1")
    assert [s.session_id for s in sessions] == [g.FG_RD_SESSION_BASE + p for p in (1, 2, 3)]


def test_default_buffer_when_the_topology_has_none() -> None:
    doc = dumbbell()
    del doc["links"][0]["queue_depth"]
    topo = parse(doc)
    entries = fc.table_entries(topo, "s1", fc.FiccrdConfig(default_buffer_pkts=100))
    dpf = [e for e in entries if e.table_id == g.TABLE_FICCRD_DPF]
    assert len(dpf) == len(fc.dpf_levels(100))


def test_port_events_from_counter_deltas() -> None:
    port = 3
    base = port << g.FG_FICCRD_EVENT_BITS
    delta = {
        g.COUNTER_FICCRD_EDGE_EVENTS: {
            base | g.FG_EDGE_RD_EMITTED: (7, 7 * 78),
            base | g.FG_EDGE_WINDOW_REWRITTEN: (4, 400),
            (port + 1) << g.FG_FICCRD_EVENT_BITS: (99, 0),  # another port
        },
        g.COUNTER_FICCRD_CORE_EVENTS: {base | g.FG_CORE_ER_LOWERED: (2, 0)},
    }
    ev = fc.port_events(delta, port)
    assert ev["rd_emitted"] == 7 and ev["rd_emitted_bytes"] == 546
    assert ev["windows_rewritten"] == 4 and ev["er_lowered"] == 2
    assert ev["rd_consumed"] == 0 and ev["mapr_updated"] == 0
    assert set(ev) == set(fc.EDGE_EVENTS) | set(fc.CORE_EVENTS) | {"rd_emitted_bytes"}


def test_counter_and_event_geometry() -> None:
    assert math.log2(g.FG_FICCRD_FLOWS) == int(math.log2(g.FG_FICCRD_FLOWS))
    assert g.FG_FICCRD_FLOW_MASK == g.FG_FICCRD_FLOWS - 1
    assert g.FG_MAX_PORTS << g.FG_FICCRD_EVENT_BITS == g.FG_FICCRD_EVENT_ENTRIES
    assert max(fc.EDGE_EVENTS.values()) < 1 << g.FG_FICCRD_EVENT_BITS
    assert max(fc.CORE_EVENTS.values()) < 1 << g.FG_FICCRD_EVENT_BITS
    # the RD packet: fg_rate_t + fg_rd_t
    bits = sum(w for _, w in g.HEADER_LAYOUTS["fg_rd_t"])
    assert bits == g.FG_RD_HEADER_BYTES * 8


# ---- agent wiring ----------------------------------------------------------------
def agent(**cfg) -> SwitchAgent:
    topo = parse(dumbbell())
    clock = Clock()
    return SwitchAgent(
        topo.switches["s1"], topo, ControlConfig(**cfg), Recorder(), clock=clock, wall=clock
    )


def test_ficcrd_is_off_by_default() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            a = agent()
            await a.install(sw)
            for table in fc.TABLES:
                assert fake.table(table) == []
            assert not set(fc.COUNTERS) & set(a.counters)
            snap = await a.read_snapshot(sw)
            assert not set(fc.COUNTERS) & set(snap)

    run(scenario())


def test_agent_installs_roles_and_records_events() -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            a = agent(ficcrd=fc.FiccrdConfig(rd_interval=4))
            await a.install(sw)
            assert len(fake.table(g.TABLE_FICCRD_SOURCES)) == 2
            assert len(fake.table(g.TABLE_FICCRD_EDGES)) == 2
            assert len(fake.table(g.TABLE_FICCRD_DPF)) == len(fc.dpf_levels(64))
            sessions = [
                u
                for _e, w in fake.writes
                for u in w.updates
                if u.entity.HasField("packet_replication_engine_entry")
            ]
            assert len(sessions) == 3
            # installing again changes no table entry
            before = len(fake.writes)
            await a.install(sw)
            assert not any(
                u.entity.HasField("table_entry")
                for _e, w in fake.writes[before:]
                for u in w.updates
            )
            await a.step(sw)
            fake.set_counter(
                g.COUNTER_FICCRD_EDGE_EVENTS,
                1 << g.FG_FICCRD_EVENT_BITS | g.FG_EDGE_WINDOW_REWRITTEN,
                5,
                300,
            )
            fake.set_counter(
                g.COUNTER_FICCRD_CORE_EVENTS,
                3 << g.FG_FICCRD_EVENT_BITS | g.FG_CORE_ER_LOWERED,
                2,
                0,
            )
            a.clock.t += 0.1
            await a.step(sw)
            assert a.recorder.latest[("s1", 1)]["windows_rewritten"] == 5
            assert a.recorder.latest[("s1", 3)]["er_lowered"] == 2

    run(scenario())
