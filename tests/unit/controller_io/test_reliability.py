"""Issue #16, control plane, against the fake P4Runtime server: a restarted
switch gets everything back (entries, rates, queues over Thrift); a controller
that regains primacy continues from the switch's rates, not its stale ones;
the controller says which switches it is waiting for, reconnects quickly and
names the unreachable ones after a timeout while driving the others."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable
from typing import Any

import finsy as fy
import pytest

from fairgate_controller import entities as ent
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.liveness import Liveness, tune_finsy
from fairgate_controller.records import Recorder
from fairgate_controller.thrift_cli import QueueSetting, queue_commands
from fairgate_controller.topology import Topology, parse
from fairgate_p4 import generated as g

from .fake_p4rt import FakeP4Runtime
from .test_agent import BOTTLENECK, feedback, options
from .test_topology import dumbbell

LOGGER = "fairgate.controller"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


async def until(cond: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Wait for `cond`; return how long it took."""
    start = time.monotonic()
    while not cond():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"not within {timeout_s} s: {what}")
        await asyncio.sleep(0.02)
    return time.monotonic() - start


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class QueueLog:
    def __init__(self) -> None:
        self.calls: list[tuple[int, list[QueueSetting]]] = []

    def __call__(self, thrift_port: int, settings: list[QueueSetting]) -> None:
        self.calls.append((thrift_port, list(settings)))


def test_queue_settings_are_the_data_ends_only() -> None:
    topo = parse(dumbbell())  # link a=s1:3 (833 pkt/s, 64), b=s2:2
    s1 = SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder())
    s2 = SwitchAgent(topo.switches["s2"], topo, ControlConfig(), Recorder())
    assert s1.queue_settings() == [(3, 833, 64)]
    assert s2.queue_settings() == []
    assert queue_commands(s1.queue_settings()) == ["set_queue_rate 833 3", "set_queue_depth 64 3"]


def test_switch_restart_gets_entries_rates_and_queues_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The switch forgets everything (a new server on the same port); within
    2 s the controller has re-pushed the pipeline, the entries, the last rates
    and the queue rate and depth, and logged the queues."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    tune_finsy()
    port = free_port()
    topo = parse(dumbbell())
    queues = QueueLog()
    agent = SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder(), queue_setter=queues)

    async def scenario() -> None:
        opts = dataclasses.replace(options(), ready_handler=agent.ready)
        sw = fy.Switch("s1", f"127.0.0.1:{port}", opts)
        first = FakeP4Runtime()
        async with first.serve(port):
            task = asyncio.create_task(sw.run())
            await until(
                lambda: first.schema is not None and len(first.table(g.TABLE_IPV4_ROUTES)) == 3,
                5,
                "first install",
            )
            await until(lambda: len(queues.calls) == 1, 5, "queues set at first install")
            # What the control loop computed last: this is what must come back.
            agent.feedback[BOTTLENECK] = (1_234, True)
        second = FakeP4Runtime()  # the restarted switch: no pipeline, no entries
        async with second.serve(port):
            took = await until(
                lambda: second.schema is not None and len(second.table(g.TABLE_IPV4_ROUTES)) == 3,
                5,
                "re-install after the switch restart",
            )
            await until(lambda: len(queues.calls) == 2, 2, "queues set again")
            assert took < 2.0
            assert second.pipeline_pushes == 1
            assert feedback(second)[BOTTLENECK] == (1_234, 1)
            assert len(second.table(g.TABLE_ADMISSION_PORTS)) == 1
            assert queues.calls[1] == (9090, [(BOTTLENECK, 833, 64)])
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        logs = caplog.text
        assert "the switch holds no rates (restarted?): restoring ours" in logs
        assert "s1: egress queues set over Thrift (port 9090): port 3: 833 pkt/s, depth 64" in logs

    run(scenario())


def test_failed_queue_setting_is_logged_once_and_retried(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from fairgate_controller.thrift_cli import SwitchCliError

    caplog.set_level(logging.INFO, logger=LOGGER)
    topo = parse(dumbbell())
    outcomes = [SwitchCliError("connection refused"), SwitchCliError("refused"), None]

    def flaky(thrift_port: int, settings: list[QueueSetting]) -> None:
        err = outcomes.pop(0)
        if err is not None:
            raise err

    agent = SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder(), queue_setter=flaky)

    async def scenario() -> None:
        assert not await agent.restore_queues()
        assert agent.queues_pending
        assert not await agent.restore_queues()
        assert await agent.restore_queues()
        assert not agent.queues_pending and agent.queue_restores == 1

    run(scenario())
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "could not set the egress queues" in errors[0].getMessage()


def test_regained_primacy_reads_the_switch_before_writing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Controller A (election id 20) writes, leaves; B (10) takes over and
    writes other rates; A comes back with stale rates in memory: it becomes
    primary again, continues from B's rates, and never writes its stale ones."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    topo = parse(dumbbell())
    a = SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder())
    b = SwitchAgent(topo.switches["s1"], topo, ControlConfig(), Recorder())

    async def run_ready(agent: SwitchAgent, sw: fy.Switch, seconds: float) -> None:
        task = asyncio.create_task(agent.ready(sw))
        await asyncio.sleep(seconds)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve():
            async with fy.Switch("s1", fake.address, options(20)) as sw_a:
                a.feedback = {1: (5_000, False), 2: (6_000, False), BOTTLENECK: (1_234, True)}
                await a.install(sw_a)
            assert feedback(fake)[BOTTLENECK] == (1_234, 1)
            async with fy.Switch("s1", fake.address, options(10)) as sw_b:
                assert sw_b.is_primary
                await b.install(sw_b)
                await sw_b.modify([ent.feedback_entry(BOTTLENECK, 777, False)])
                assert feedback(fake)[BOTTLENECK] == (777, 0)
                stale_writes_from = len(fake.writes)
                async with fy.Switch("s1", fake.address, options(20)) as sw_a:
                    await until(lambda: not sw_b.is_primary, 5, "B demoted")
                    assert sw_a.is_primary
                    await run_ready(a, sw_a, 0.5)  # install + a few periods
                    await run_ready(b, sw_b, 0.1)  # B now backup: logs and returns
                assert a.rate_ctl[BOTTLENECK].rate_Bps == pytest.approx(
                    777 * 1000 / 8
                )  # idle: held
                for eid, w in fake.writes[stale_writes_from:]:
                    assert eid == 20
                    for u in w.updates:
                        e = u.entity.table_entry
                        if e.table_id == fake.schema.tables[g.TABLE_PORT_FEEDBACK].id:
                            rate = int.from_bytes(e.action.action.params[0].value, "big")
                            assert rate != 1_234, "A wrote its stale rate"

    run(scenario())
    logs = caplog.text
    assert "s1: primary controller (election id 20): reading the switch before writing" in logs
    assert f"continuing from the rates on the switch: {{1: 5000, 2: 6000, {BOTTLENECK}: 777}}" in (
        logs
    )
    assert f"(ours were {{{BOTTLENECK}: 1234}})" in logs
    assert "s1: backup controller (our election id 10, the primary's 20): not writing" in logs


# ---- liveness ------------------------------------------------------------------
def test_liveness_lines_attempts_and_timeout() -> None:
    live = Liveness({"s1": "127.0.0.1:1", "s2": "127.0.0.1:2"}, timeout_s=3.0, started_s=0.0)
    assert live.tick(0.5, {"s1": True, "s2": False}) == [
        (logging.INFO, "switch s1 at 127.0.0.1:1 is up (within 0.5 s)"),
        (logging.WARNING, "waiting for switch s2 at 127.0.0.1:2 (attempt 1)"),
    ]
    assert live.tick(1.5, {"s1": True, "s2": False}) == [
        (logging.WARNING, "waiting for switch s2 at 127.0.0.1:2 (attempt 2)")
    ]
    live.tick(2.5, {"s1": True, "s2": False})
    lines = live.tick(3.5, {"s1": True, "s2": False})
    assert lines[-1] == (
        logging.ERROR,
        "switches unreachable for 3 s or more: s2 at 127.0.0.1:2 (never reached); "
        "controlling s1; still trying",
    )
    assert lines[0] == (logging.WARNING, "waiting for switch s2 at 127.0.0.1:2 (attempt 4)")
    assert all(level != logging.ERROR for level, _ in live.tick(4.5, {"s1": True, "s2": False}))
    assert live.tick(5.0, {"s1": True, "s2": True}) == [
        (logging.INFO, "switch s2 at 127.0.0.1:2 is up (after 5.0 s)")
    ]
    # s1 goes down later: reported again after its own timeout, as "down".
    for t in (6.0, 7.0, 8.0):
        live.tick(t, {"s1": False, "s2": True})
    lines = live.tick(9.0, {"s1": False, "s2": True})
    assert lines[-1][1].startswith("switches unreachable for 3 s or more: s1 at 127.0.0.1:1 (down)")


def test_controller_waits_loudly_reconnects_fast_and_names_unreachable_switches(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """s1 answers, s2 does not (yet): "waiting for switch s2 ..." within the
    first second and at least every 2 s; s1 is controlled meanwhile; after
    the timeout one error names s2; s2 comes up and is installed within 2 s."""
    from fairgate_controller.app import run as run_controller

    caplog.set_level(logging.INFO, logger=LOGGER)
    p2 = free_port()

    def messages(level: int = logging.WARNING) -> list[tuple[float, str]]:
        return [(r.created, r.getMessage()) for r in caplog.records if r.levelno == level]

    async def scenario() -> None:
        fake1, fake2 = FakeP4Runtime(), FakeP4Runtime()
        async with fake1.serve():
            doc = dumbbell()
            doc["switches"][0]["grpc_addr"] = fake1.address
            doc["switches"][1]["grpc_addr"] = f"127.0.0.1:{p2}"
            for sw in doc["switches"]:
                sw.pop("thrift_port")
            topo: Topology = parse(doc)
            t0 = time.time()
            ctl = asyncio.create_task(
                run_controller(topo, ControlConfig(), 10, None, switch_timeout_s=2.0)
            )
            await until(lambda: bool(messages()), 1.0, "a waiting line in the first second")
            await until(lambda: fake1.schema is not None and bool(feedback(fake1)), 3, "s1 up")
            await until(lambda: bool(messages(logging.ERROR)), 3.5, "the timeout error")
            waits = [(t, m) for t, m in messages() if m.startswith("waiting for switch s2")]
            assert waits[0][0] - t0 < 1.0
            assert waits[0][1] == f"waiting for switch s2 at 127.0.0.1:{p2} (attempt 1)"
            gaps = [b[0] - a[0] for a, b in zip(waits, waits[1:], strict=False)]
            assert gaps and max(gaps) <= 2.0, gaps
            error = messages(logging.ERROR)[-1][1]
            assert f"s2 at 127.0.0.1:{p2} (never reached)" in error and "controlling s1" in error
            assert "s1 at" not in error
            # s1 is driven meanwhile: the control loop writes its rates every period.
            writes = len(fake1.writes)
            await until(lambda: len(fake1.writes) > writes + 3, 2, "s1 controlled")
            async with fake2.serve(p2):
                took = await until(
                    lambda: fake2.schema is not None and bool(feedback(fake2)), 2.0, "s2 installed"
                )
                assert took < 2.0
                await until(
                    lambda: any(
                        m.startswith("switch s2 at") and "is up" in m
                        for _t, m in messages(logging.INFO)
                    ),
                    1.5,
                    "the liveness line saying s2 is up",
                )
            ctl.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ctl

    run(scenario())


def test_reinstall_keeps_the_algorithm_state_when_the_switch_holds_our_rates() -> None:
    """A refused request or a reconnect re-runs install: the switch holds what
    we wrote, so each port keeps its controller (and, e.g., Lestas's N_hat)."""
    topo = parse(dumbbell())
    agent = SwitchAgent(topo.switches["s1"], topo, ControlConfig(algo="lestas"), Recorder())

    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            await agent.install(sw)
            before = dict(agent.rate_ctl)
            await agent.install(sw)
            assert all(agent.rate_ctl[p] is before[p] for p in before)
            # Someone else changed port 3's rate: only that port restarts from it.
            await sw.modify([ent.feedback_entry(BOTTLENECK, 555, False)])
            await agent.install(sw)
            assert agent.rate_ctl[BOTTLENECK] is not before[BOTTLENECK]
            assert agent.rate_ctl[BOTTLENECK].rate_Bps == pytest.approx(555 * 1000 / 8)
            assert all(agent.rate_ctl[p] is before[p] for p in before if p != BOTTLENECK)

    run(scenario())
