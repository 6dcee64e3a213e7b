"""Session control's counts after the gated queue (session_counts.py). "servers", the
default ``--session-completions``: a gated port's completions are the servers' first FINs
on the gated switch's reverse path (the switch's FIN filter counts their retransmissions
as repeats) and its handshakes the clients' SYNs the neighbour switch passed on towards
the servers. "downstream": both are the clients' first FINs and SYNs the neighbour
passed on. Neither counts the copies the gated switch saw before its congested queue,
nor the servers' retransmitted FINs and SYN-ACKs on the reverse path."""

from __future__ import annotations

import copy
import logging

import pytest

from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.app import build_agents
from fairgate_controller.records import Recorder
from fairgate_controller.session_counts import (
    Downstream,
    SessionBoard,
    downstream_of,
    step,
    totals,
)
from fairgate_controller.telemetry import Snapshot
from fairgate_controller.topology import Topology, parse
from fairgate_p4 import generated as g

from .test_topology import dumbbell

BOTTLENECK = 3  # s1's port towards s2:2; s2:1 leads to the server h3
PERIOD = 0.5


def ev(port: int, event: int) -> int:
    return (port << g.FG_SESSION_EVENT_BITS) | event


def snapshot(events: dict[int, int]) -> Snapshot:
    return {g.COUNTER_SESSION_EVENTS: {i: (n, n * 60) for i, n in events.items()}}


def agents(topo: Topology, **cfg: object) -> tuple[SwitchAgent, SwitchAgent]:
    board = SessionBoard()
    config = ControlConfig(**cfg)  # type: ignore[arg-type]
    recorder = Recorder()
    s1, s2 = (
        SwitchAgent(
            topo.switches[name],
            topo,
            config,
            recorder,
            clock=lambda: 0.0,
            wall=lambda: 0.0,
            board=board,
        )
        for name in ("s1", "s2")
    )
    return s1, s2


# An overloaded period at the lab's numbers (per 0.5 s): at s1 the clients' FINs on
# the gated port (150/s), the servers' first FINs coming back through port 1 (44/s: the
# flows completed) and their retransmissions (22/s: the clients' ACKs dropped in s1's
# queue), and the servers' SYN-ACKs (68/s); at s2 the clients' first FINs and SYNs that
# got through, towards the server (s2:1; 48/s and 60/s), and the servers' on their way
# back (s2:2).
S1_PER_PERIOD = {
    ev(BOTTLENECK, g.FG_EVENT_FIN): 75,
    ev(BOTTLENECK, g.FG_EVENT_SYN_ADMITTED): 50,
    ev(1, g.FG_EVENT_FIN): 22,
    ev(1, g.FG_EVENT_FIN_REPEAT): 11,
    ev(1, g.FG_EVENT_SYNACK): 34,
}
S2_PER_PERIOD = {
    ev(1, g.FG_EVENT_FIN): 24,
    ev(1, g.FG_EVENT_SYN_UNGATED): 30,
    ev(2, g.FG_EVENT_FIN): 22,
    ev(2, g.FG_EVENT_FIN_REPEAT): 11,
    ev(2, g.FG_EVENT_SYNACK): 34,
}


def cumulative(per_period: dict[int, int], periods: int) -> dict[int, int]:
    return {i: n * periods for i, n in per_period.items()}


def test_downstream_of_a_link_is_the_far_switch_and_its_other_ports() -> None:
    topo = parse(dumbbell())
    assert downstream_of(topo, "s1", BOTTLENECK) == Downstream("s2", (1,))
    assert downstream_of(topo, "s2", 2) == Downstream("s1", (1, 2))
    assert downstream_of(topo, "s1", 1) is None  # a host's port: nothing after it


def test_totals_count_fins_and_the_syns_that_passed() -> None:
    cells = snapshot(
        {
            ev(1, g.FG_EVENT_FIN): 7,
            ev(1, g.FG_EVENT_SYN_UNGATED): 5,
            ev(1, g.FG_EVENT_SYN_ADMITTED): 2,
            ev(1, g.FG_EVENT_SYN_DROPPED): 100,  # a gate there dropped them: not through
            ev(1, g.FG_EVENT_SYNACK): 100,
            ev(2, g.FG_EVENT_FIN): 100,  # not a port counted
        }
    )[g.COUNTER_SESSION_EVENTS]
    assert totals(cells, (1,)) == (7, 7)
    assert totals(cells, (1, 2)) == (107, 7)


def test_step_is_the_difference_and_rebaselines() -> None:
    assert step(None, (10, 20)) == (0, 0)  # first reading
    assert step((10, 20), (15, 29)) == (5, 9)
    assert step((15, 29), (3, 4)) == (0, 0)  # the neighbour restarted


def run_windows(s1: SwitchAgent, s2: SwitchAgent, expect: tuple[int, int]) -> dict:
    """Tick both agents through 12 periods; every record after the first two periods
    counts ``expect`` (completions, handshakes); the last window's record."""
    for agent in (s1, s2):
        agent.ensure_controllers()
    windows = []
    for i in range(12):
        t = i * PERIOD
        s2.tick(snapshot(cumulative(S2_PER_PERIOD, i)), t)
        s1.tick(snapshot(cumulative(S1_PER_PERIOD, i)), t)
        rec = s1.recorder.latest.get(("s1", BOTTLENECK), {})
        if i >= 2:  # the first period only takes the neighbour's baseline
            assert (rec["completions"], rec["handshakes"]) == expect
        if "window_completions_fps" in rec and rec not in windows:
            windows.append(copy.deepcopy(rec))
    assert windows
    return windows[-1]


def test_completions_are_the_servers_first_fins_and_handshakes_the_syns_passed_on() -> None:
    """By default s1's gated port counts the servers' first FINs on its reverse path
    (44 flows/s here, where all their copies say 66/s and the clients' FINs s2 passed
    on 48/s) and the clients' SYNs s2 passed on towards the server (60/s, where the
    servers' SYN-ACKs say 68/s)."""
    s1, s2 = agents(parse(dumbbell()), session="strategy2", session_window_s=1.0)
    assert s1.completions_from == {BOTTLENECK: "servers"}
    last = run_windows(s1, s2, (22, 30))
    assert last["completions_from"] == "servers"
    assert last["window_completions_fps"] == pytest.approx(44.0)
    assert last["window_connected_fps"] == pytest.approx(60.0)


def test_downstream_completions_are_the_fins_the_next_switch_passed_on() -> None:
    """With "downstream" s1's gated port counts s2's first FINs and SYNs towards the
    server: 48 and 60 flows/s here, where the servers' FINs and SYN-ACKs on the reverse
    path ("reverse": 44 and 68/s) and the clients' FINs before the queue (150/s) say
    otherwise; a window's rates are those of s2."""
    s1, s2 = agents(
        parse(dumbbell()),
        session="strategy2",
        session_window_s=1.0,
        session_completions="downstream",
    )
    assert s1.completions_from == {BOTTLENECK: "downstream"}
    last = run_windows(s1, s2, (24, 30))
    assert last["completions_from"] == "downstream"
    assert last["window_completions_fps"] == pytest.approx(48.0)
    assert last["window_connected_fps"] == pytest.approx(60.0)
    # the same counters, counted on the reverse path: first FINs only, every SYN-ACK
    reverse = snapshot(S1_PER_PERIOD)
    assert (s1.completions(BOTTLENECK, reverse), s1.handshakes(BOTTLENECK, reverse)) == (22, 34)


@pytest.mark.parametrize(("mode", "field"), [("downstream", 0), ("servers", 1)])
def test_a_neighbour_restart_loses_one_period_not_the_window(mode: str, field: int) -> None:
    """The neighbour's counts (downstream: FINs and SYNs; servers: the SYNs) count zero
    for the period its totals went backwards, then resume."""
    s1, s2 = agents(parse(dumbbell()), session="strategy1", session_completions=mode)
    s1.ensure_controllers()
    counts = []
    board = s2.board
    assert board is not None and s1.board is board
    for i, scale in enumerate([0, 1, 2, 3, 1, 2, 3]):  # s2 restarts after the 4th read
        board.publish("s2", snapshot(cumulative(S2_PER_PERIOD, scale)))
        s1.tick(snapshot(cumulative(S1_PER_PERIOD, i)), i * PERIOD)
        rec = s1.recorder.latest.get(("s1", BOTTLENECK), {})
        counts.append((rec.get("completions"), rec.get("handshakes")))
    per_period = (24, 30)[field]
    assert [c[field] for c in counts[2:]] == [per_period, per_period, 0, per_period, per_period]
    if mode == "servers":  # s1's own counters carry on
        assert [c[0] for c in counts[1:]] == [22] * 6


def test_a_gated_port_towards_a_host_counts_on_the_reverse_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    doc = dumbbell()
    doc["hosts"][0]["admission"] = True  # s1:1, towards h1
    topo = parse(doc)
    with caplog.at_level(logging.WARNING, logger="fairgate.controller"):
        s1, _s2 = agents(topo, session="strategy1")
    assert s1.completions_from == {1: "reverse", BOTTLENECK: "servers"}
    assert "gated port 1 leads to a host" in caplog.text
    delta = snapshot({ev(BOTTLENECK, g.FG_EVENT_FIN): 9, ev(2, g.FG_EVENT_FIN): 4})
    assert s1.session_counts(1, delta) == (13, 0)  # this switch's other ports


def test_downstream_needs_a_shared_board() -> None:
    topo = parse(dumbbell())
    with pytest.raises(ValueError, match="must share a SessionBoard"):
        SwitchAgent(topo.switches["s1"], topo, ControlConfig(session="strategy1"), Recorder())
    # reverse needs none; neither does an agent without session control
    SwitchAgent(
        topo.switches["s1"],
        topo,
        ControlConfig(session="strategy1", session_completions="reverse"),
        Recorder(),
    )
    SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder())


def test_the_controllers_agents_share_one_board() -> None:
    built = build_agents(
        parse(dumbbell()), ControlConfig(session="strategy1"), Recorder(), None, None
    )
    assert len(built) == 2 and built[0].board is not None
    assert all(a.board is built[0].board for a in built)
