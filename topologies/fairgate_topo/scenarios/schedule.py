"""Run a schedule of arbitrary host commands (CM apps, senders) with the
runner's once-a-second progress line."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fairgate_topo.scenarios.common import JsonlTail, LabContext


@dataclass(frozen=True)
class Job:
    """Command `cmd` started in host `host` at `start_s` (it stops itself)."""

    name: str
    host: str
    start_s: float
    cmd: list[str]


def run_jobs(
    ctx: LabContext, jobs: list[Job], end_s: float, watch: tuple[str, int], tick_s: float = 1.0
) -> None:
    pending = sorted(jobs, key=lambda j: j.start_s)
    tail = JsonlTail(ctx.records_path)
    tail.new()
    latest: dict[str, Any] | None = None
    ctx.t0 = time.time()
    start = time.monotonic()
    next_tick = 0.0
    started = []
    while True:
        now = time.monotonic() - start
        while pending and pending[0].start_s <= now:
            job = pending.pop(0)
            started.append(ctx.procs.start(job.name, job.cmd, ctx.host(job.host)))
        if now >= next_tick:
            for r in tail.new():
                if (r["switch"], r["port"]) == watch:
                    latest = r
            part = ""
            if latest is not None:
                part = (
                    f"util {latest['departure_Bps'] / latest['capacity_Bps']:4.0%}"
                    f" q {latest['queue_mean_bytes'] / ctx.topology.frame_bytes:4.1f} pkt"
                    f" R {latest.get('rate_kbps', '-')} kb/s"
                )
            active = sum(1 for s in started if s.proc.poll() is None)
            ctx.say(f"  t={now:5.1f}/{end_s:.0f} s  processes {active}  {part}")
            next_tick += tick_s
        if now >= end_s and not pending:
            break
        time.sleep(0.05)
