"""Run one SwitchAgent per switch of a topology under one finsy Controller."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from pathlib import Path

import finsy as fy

from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.topology import Topology
from fairgate_p4 import artifacts

LOG = logging.getLogger("fairgate.controller")


def build_agents(topo: Topology, config: ControlConfig, recorder: Recorder) -> list[SwitchAgent]:
    return [SwitchAgent(spec, topo, config, recorder) for spec in topo.switches.values()]


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
) -> None:
    recorder = Recorder(records)
    agents = build_agents(topo, config, recorder)
    controller = fy.Controller(build_switches(agents, election_id, device_id=device_id))
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, controller.stop)
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
        recorder.close()
        LOG.info("controller stopped; the switches keep the last rates")
