"""The event core keeps SimPy's semantics: ties in time run in scheduling order, a time
in the past runs now, ``run(until)`` stops before events at ``until`` and leaves the
clock there, and a later ``run`` continues from it."""

from __future__ import annotations

import pytest

from fairgate_sim.engine import Clock


def test_ties_run_in_scheduling_order_and_past_runs_now() -> None:
    clock = Clock()
    seen: list[tuple[float, str]] = []

    def note(tag: str) -> None:
        seen.append((clock.now, tag))

    clock.at(0.5, note, "b")
    clock.at(0.2, note, "a")
    clock.at(0.5, note, "c")
    clock.push(0.5, note, ("d",))

    def late() -> None:
        clock.at(0.1, note, "past")  # in the past: runs at 0.3, after what is due now
        note("late")

    clock.at(0.3, late)
    clock.run(1.0)
    assert seen == [(0.2, "a"), (0.3, "late"), (0.3, "past"), (0.5, "b"), (0.5, "c"), (0.5, "d")]
    assert clock.events == 6 and clock.now == 1.0


def test_run_stops_before_until_and_continues() -> None:
    clock = Clock()
    seen: list[float] = []
    for t in (0.5, 1.0, 1.5):
        clock.at(t, lambda: seen.append(clock.now))
    clock.run(1.0)
    assert seen == [0.5] and clock.now == 1.0  # the event at 1.0 waits
    clock.run(2.0)
    assert seen == [0.5, 1.0, 1.5] and clock.now == 2.0
    with pytest.raises(ValueError, match="must be greater"):
        clock.run(2.0)


def test_after_and_now_us() -> None:
    clock = Clock()
    got: list[int] = []
    clock.after(0.25, lambda: got.append(clock.now_us()))
    clock.run(1)
    assert got == [250_000] and clock.now == 1


def test_int_times_stay_ints_as_in_simpy() -> None:
    """The clock starts at the int 0 and int arithmetic stays int (SimPy's behaviour,
    which the mypyc build keeps: ``Clock.now`` is not a C double there)."""
    clock = Clock()
    seen: list[object] = []
    clock.at(2, lambda: seen.append(clock.now))
    assert clock.now == 0 and type(clock.now) is int
    clock.run(3)
    assert seen == [2] and type(seen[0]) is int


def test_packet_init_is_the_dataclass_signature() -> None:
    """``Packet.__init__`` is written out (compiled by mypyc); it must take the
    dataclass's fields in order, with their defaults, and set every one (checked by
    calls, so it holds in the compiled build too)."""
    import dataclasses

    from fairgate_sim.packet import Packet

    fields = dataclasses.fields(Packet)
    values: list[object] = ["10.0.0.1", "10.0.0.2", 1, 2, 3, 6, b"x", 4, 5, 6, 7, 8, 9]
    values += [object(), True, True, 1.5, 2.5, 3.5, True, ((10, 20),), True]
    assert len(values) == len(fields)
    pkt = Packet(*values)  # type: ignore[arg-type]
    assert [getattr(pkt, f.name) for f in fields] == values
    required = [f for f in fields if f.default is dataclasses.MISSING]
    assert [f.name for f in required] == ["src", "dst", "sport", "dport", "size"]
    bare = Packet("a", "b", 1, 2, 3)
    for f in fields[len(required) :]:
        assert getattr(bare, f.name) == f.default, f.name


def test_port_delivers_in_time_order_when_a_later_packet_lands_first() -> None:
    """A port's packets in flight wait in a FIFO behind the first one's event; a packet
    that would land before the last one in flight (its link's delay lowered meanwhile)
    gets an event of its own, so every packet lands at its own time."""
    from fairgate_sim.packet import Packet
    from fairgate_sim.port import OutputPort, PortParams

    clock = Clock()
    got: list[tuple[float, str]] = []
    out = OutputPort(clock, PortParams(rate_Bps=1e6, delay_s=1.0))
    out.deliver = lambda pkt: got.append((clock.now, pkt.src))
    out.send(Packet("a", "x", 1, 2, 1000))  # lands at 0.001 + 1.0
    out.send(Packet("b", "x", 1, 2, 1000))  # at 0.002 + 1.0
    out.params = PortParams(rate_Bps=1e6, delay_s=0.1)
    out.send(Packet("c", "x", 1, 2, 1000))  # at 0.003 + 0.1: before a and b
    clock.run(2)
    assert [src for _t, src in got] == ["c", "a", "b"]
    assert [round(t, 6) for t, _src in got] == [0.103, 1.001, 1.002]
    assert clock.events == 3


def test_compiled_heap_pops_in_heapq_order() -> None:
    """``engine.push``/``pop`` (the mypyc build's heap, ``engine.NATIVE``) keep heapq's
    order: events by time, ties in time by sequence number, int and float times mixed,
    the same heap layout as heapq's after every step (the same algorithm). Run here in
    pure Python; test_sim_ext runs the digests with the compiled ones."""
    import heapq
    import random

    from fairgate_sim.engine import pop, push

    rng = random.Random(7)
    ours: list[tuple[object, ...]] = []
    theirs: list[tuple[object, ...]] = []
    popped: list[tuple[object, ...]] = []
    for seq in range(3000):
        t = rng.choice([1, 2, 2.0, 0.5, rng.random() * 3, float(rng.randrange(4))])
        event = (t, seq, None, ())
        push(ours, event)
        heapq.heappush(theirs, event)
        if rng.random() < 0.4:
            got = pop(ours)
            assert got is heapq.heappop(theirs)
            popped.append(got)
        assert ours == theirs
    while ours:
        got = pop(ours)
        assert got is heapq.heappop(theirs)
        popped.append(got)
    assert len(popped) == 3000 and not theirs
