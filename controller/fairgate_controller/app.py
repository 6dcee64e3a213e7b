"""Run one SwitchAgent per switch of a topology under one finsy Controller."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable
from pathlib import Path

import finsy as fy

from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.liveness import tune_finsy, watch
from fairgate_controller.records import Recorder
from fairgate_controller.session_counts import SessionBoard
from fairgate_controller.thrift_cli import QueueSetting, read_registers, set_queues
from fairgate_controller.topology import Topology
from fairgate_p4 import artifacts

LOG = logging.getLogger("fairgate.controller")


QueueSetter = Callable[[int, list[QueueSetting]], None]
RegisterReader = Callable[[int, list[str]], dict[str, list[int]]]


def build_agents(
    topo: Topology,
    config: ControlConfig,
    recorder: Recorder,
    queue_setter: QueueSetter | None = set_queues,
    register_reader: RegisterReader | None = read_registers,
) -> list[SwitchAgent]:
    board = SessionBoard()  # the switches' session counts, shared (session_counts.py)
    return [
        SwitchAgent(
            spec,
            topo,
            config,
            recorder,
            queue_setter=queue_setter,
            register_reader=register_reader,
            board=board,
        )
        for spec in topo.switches.values()
    ]


def build_switches(
    agents: list[SwitchAgent],
    election_id: int,
    program: str = "fairgate",
    device_id: int | None = None,
) -> list[fy.Switch]:
    switches = []
    for agent in agents:
        options = fy.SwitchOptions(
            p4info=artifacts.p4info_path(program),
            p4blob=artifacts.bmv2_json_path(program),
            device_id=agent.spec.device_id if device_id is None else device_id,
            initial_election_id=election_id,
            ready_handler=agent.ready,
        )
        switches.append(fy.Switch(agent.spec.name, agent.spec.grpc_addr, options))
    return switches


async def run(
    topo: Topology,
    config: ControlConfig,
    election_id: int,
    records: Path | None,
    device_id: int | None = None,
    live: bool = False,
    switch_timeout_s: float = 10.0,
    queue_setter: QueueSetter | None = set_queues,
) -> None:
    recorder = Recorder(records)
    agents = build_agents(topo, config, recorder, queue_setter)
    tune_finsy()
    switches = build_switches(agents, election_id, device_id=device_id)
    controller = fy.Controller(switches)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, controller.stop)
    watcher = asyncio.create_task(watch(switches, switch_timeout_s))
    view = None
    if live:
        from fairgate_controller.live import LiveView

        view = LiveView(recorder)
    try:
        async with contextlib.AsyncExitStack() as stack:
            if view is not None:
                await stack.enter_async_context(view)
            await controller.run()
    except asyncio.CancelledError:
        pass
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        recorder.close()
        LOG.info("controller stopped; the switches keep the last rates")
