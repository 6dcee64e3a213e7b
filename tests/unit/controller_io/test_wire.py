"""The control period's requests (wire.py) against finsy's own encoding and the
fake P4Runtime server: the same bytes as finsy, only the agent's counter cells
read, and one period = exactly one Read and at most one Write."""

from __future__ import annotations

import random
from typing import Any

import finsy as fy
import pytest
from finsy.proto import p4r

from fairgate_controller import entities as ent
from fairgate_controller import ficcrd as fc
from fairgate_controller.routes import compute_routes
from fairgate_controller.telemetry import (
    COUNTERS,
    XCP_COUNTERS,
    Snapshot,
    counter_cells,
    event_count,
    measure_port,
    queue_buckets,
    queue_overflow,
    queue_top_pkts,
    rtt_buckets,
    xcp_sums,
)
from fairgate_controller.topology import parse
from fairgate_controller.wire import ChannelClosedError, CounterReader, UpdateEncoder
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g
from fairgate_p4.xcp_math import RatioBuckets

from .fake_p4rt import FakeP4Runtime
from .test_agent import (
    BOTTLENECK,
    Clock,
    agent_for,
    feedback,
    gated_agent,
    options,
    run,
    set_port_counters,
)
from .test_topology import dumbbell

SCHEMA = fy.P4Schema(artifacts.p4info_path())
PER_PORT = COUNTERS + XCP_COUNTERS + fc.COUNTERS


def finsy_modify(entities: list[Any]) -> list[p4r.Update]:
    return [p4r.Update(type=p4r.Update.MODIFY, entity=e.encode(SCHEMA)) for e in entities]


def test_encoder_gives_finsy_s_bytes() -> None:
    """Rates, flags, XCP factors, meters (set and reset), routes and bucket ranges,
    each port twice (the second time from the cache), encode exactly as finsy does."""
    rng = random.Random(7)
    encoder = UpdateEncoder(SCHEMA)
    routes = compute_routes(parse(dumbbell()))["s1"]
    for _round in range(2):
        entities: list[Any] = []
        for port in range(1, g.FG_MAX_PORTS):
            kbps = rng.choice([0, 1, rng.randrange(2**32), 2**32 - 1])
            entities.append(ent.feedback_entry(port, kbps, rng.random() < 0.5))
            entities.append(ent.xcp_factors_entry(port, rng.randrange(-2000, 2000), -32768))
            entities.append(ent.meter_entry(port, rng.choice([None, 0.2, 250.0]), 5))
        entities += [ent.route_entry(r) for r in routes]
        entities += ent.bucket_entries(g.TABLE_QUEUE_BUCKETS, queue_buckets(64))
        assert encoder.modify(entities) == finsy_modify(entities)


def test_encoder_refuses_what_finsy_refuses() -> None:
    """A value out of range and a missing parameter: the same ValueError as finsy's."""
    encoder = UpdateEncoder(SCHEMA)
    encoder.modify([ent.feedback_entry(3, 1, False)])  # the port's match is cached now
    bad = [
        ent.feedback_entry(3, 2**32, False),  # fair_rate_kbps has 32 bits
        fy.P4TableEntry(
            g.TABLE_PORT_FEEDBACK,
            match=fy.Match(egress_port=3),
            action=fy.Action(g.ACTION_SET_PORT_FEEDBACK, fair_rate_kbps=5),
        ),
    ]
    for entry in bad:
        with pytest.raises(ValueError) as finsy_error:
            entry.encode(SCHEMA)
        with pytest.raises(ValueError) as ours:
            encoder.modify([entry])
        assert str(ours.value) == str(finsy_error.value)


def full_snapshot(rng: random.Random) -> Snapshot:
    """Every cell of every per-port counter array, random values."""
    return {
        name: {
            i: (rng.randrange(50), rng.randrange(50_000)) for i in range(SCHEMA.counters[name].size)
        }
        for name in PER_PORT
    }


def test_counter_cells_hold_everything_the_agent_reads_of_its_ports() -> None:
    """Measurements, events, queue figures, XCP sums and FICCRD events of a port are
    the same from the cells counter_cells names as from every cell of the arrays;
    and the cells are in range and not shared between ports."""
    rng = random.Random(1)
    ports = [1, 4, 15]
    full = full_snapshot(rng)
    cut = {name: {i: full[name][i] for i in counter_cells(name, ports) or ()} for name in full}
    q, r, x = queue_buckets(64), rtt_buckets(), RatioBuckets()
    for port in ports:
        assert measure_port(cut, port, 0.1, 1e6, q, r) == measure_port(full, port, 0.1, 1e6, q, r)
        assert queue_top_pkts(cut, port, q, 64) == queue_top_pkts(full, port, q, 64)
        assert queue_overflow(cut, port) == queue_overflow(full, port)
        assert event_count(cut, port, g.FG_EVENT_FIN) == event_count(full, port, g.FG_EVENT_FIN)
        assert xcp_sums(cut, port, x) == xcp_sums(full, port, x)
        assert fc.port_events(cut, port) == fc.port_events(full, port)
    for name in PER_PORT:
        cells = [counter_cells(name, [p]) or [] for p in range(1, g.FG_MAX_PORTS)]
        flat = [i for c in cells for i in c]
        assert len(flat) == len(set(flat)) and all(
            0 <= i < SCHEMA.counters[name].size for i in flat
        )
    assert counter_cells(g.COUNTER_INPUT_ANOMALIES, ports) is None  # not laid out by port


def test_reader_reads_only_the_agent_s_cells_and_the_values_finsy_reads() -> None:
    """s1 of the dumbbell has 3 ports: the histograms and events are read cell by cell
    (3 of 16 ports), and every value matches finsy's public read of the whole array."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), Clock())
            rng = random.Random(3)
            for name in COUNTERS:
                for i in range(fake.schema.counters[name].size):  # type: ignore[union-attr]
                    fake.set_counter(name, i, rng.randrange(100), rng.randrange(10**6))
            snap = await agent.read_snapshot(sw)
            read = fake.reads[-1]
            public: Snapshot = {name: {} for name in COUNTERS}
            async for e in sw.read([fy.P4CounterEntry(name) for name in COUNTERS]):
                public[e.counter_id][e.index] = (e.packet_count, e.byte_count)
            ports = [1, 2, 3]
            for name in COUNTERS:
                cells = counter_cells(name, ports)
                assert cells is not None
                assert snap[name] == {i: public[name][i] for i in cells}
            indexed = [e for e in read.entities if e.counter_entry.HasField("index")]
            assert len(indexed) == sum(len(counter_cells(n, ports) or ()) for n in COUNTERS)

    run(scenario())


def test_reader_reads_an_array_whole_when_the_agent_needs_most_of_it() -> None:
    reader = CounterReader(
        SCHEMA,
        0,
        [g.COUNTER_RTT_HIST, g.COUNTER_PORT_ARRIVALS],
        {
            g.COUNTER_RTT_HIST: counter_cells(g.COUNTER_RTT_HIST, range(1, 10)) or [],
            g.COUNTER_PORT_ARRIVALS: [1, 2],
        },
    )
    wildcard = [e for e in reader.request.entities if not e.counter_entry.HasField("index")]
    assert [e.counter_entry.counter_id for e in wildcard] == [
        SCHEMA.counters[g.COUNTER_RTT_HIST].id
    ]
    assert reader.indexed == {g.COUNTER_PORT_ARRIVALS: 2}


def test_a_period_is_one_read_and_one_write() -> None:
    """A period in which every rate and an admit rate change: exactly one Read and one
    Write request, the Write holding the rates and the meter; a period with nothing
    to write (the baseline) sends no Write at all."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        clock = Clock()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = gated_agent(clock, session="strategy1", session_window_s=0.05)
            await agent.install(sw)
            reads, writes = len(fake.reads), len(fake.writes)
            await agent.step(sw)  # baseline: reads, writes nothing
            assert (len(fake.reads), len(fake.writes)) == (reads + 1, writes)
            meter_id = fake.schema.meters[g.METER_SYN_METER].id  # type: ignore[union-attr]
            for i in range(1, 4):
                clock.t += 0.1
                nbytes = int(i * 250_000)
                set_port_counters(fake, BOTTLENECK, (nbytes // 1000, nbytes), (nbytes // 2000, 0))
                base = BOTTLENECK << g.FG_SESSION_EVENT_BITS
                fake.set_counter(g.COUNTER_SESSION_EVENTS, base | g.FG_EVENT_SYN_UNGATED, 50 * i, 0)
                agent.admit[BOTTLENECK] = -1.0  # so this period's admit rate is a change
                reads, writes = len(fake.reads), len(fake.writes)
                await agent.step(sw)
                assert len(fake.reads) == reads + 1
                assert len(fake.writes) == writes + 1
                updates = fake.writes[-1][1].updates
                kinds = sorted(u.entity.WhichOneof("entity") for u in updates)
                assert kinds == ["meter_entry"] + ["table_entry"] * 3
                assert agent.updates == 4
            assert feedback(fake)[BOTTLENECK][0] == agent.feedback[BOTTLENECK][0]
            assert fake.meters[(meter_id, BOTTLENECK)] is not None

    run(scenario())


def test_a_failed_read_is_finsy_s_client_error() -> None:
    """The loop's error path (log, reconcile, re-baseline) catches fy.P4ClientError:
    the prepared Read raises it too."""

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), Clock())
            await agent.read_snapshot(sw)
            fake.schema = None  # the server fails every Read from now on
            with pytest.raises(fy.P4ClientError):
                await agent.read_snapshot(sw)

    run(scenario())


def test_a_read_after_the_switch_went_down_is_channel_closed() -> None:
    """finsy drops its client's channel when the switch goes down, before it cancels the
    agent's loop: a read in between says so (the loop ends quietly), instead of failing on
    the missing channel with an AttributeError."""

    class Down:
        channel = None

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            agent = agent_for(parse(dumbbell()), Clock())
            await agent.read_snapshot(sw)
            wire = agent._wire(sw)
            assert wire is not None
            with pytest.raises(ChannelClosedError, match="switch down"):
                await wire[0].read(Down())

    run(scenario())
