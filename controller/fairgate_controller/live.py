"""A live terminal table of the latest record of every port (rich)."""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from rich.live import Live
from rich.table import Table

from fairgate_controller.records import Recorder


def render(recorder: Recorder) -> Table:
    table = Table(title="FairGate controller")
    for col in (
        "switch",
        "port",
        "y Mbit/s",
        "out Mbit/s",
        "drops",
        "queue B",
        "RTT ms",
        "rate kbit/s",
        "cong",
        "admit/s",
        "FIN/s",
    ):
        table.add_column(col, justify="right")
    for (sw, port), r in sorted(recorder.latest.items()):
        period = r.get("period_s") or 1.0
        rtt = r.get("rtt_mean_s")
        admit = r.get("admit_fps")
        table.add_row(
            sw,
            str(port),
            f"{r['y_Bps'] * 8e-6:.2f}",
            f"{r['departure_Bps'] * 8e-6:.2f}",
            f"{r['drop_pkts']:.0f}",
            f"{r['queue_mean_bytes']:.0f}",
            "-" if rtt is None else f"{rtt * 1e3:.1f}",
            str(r.get("rate_kbps", "-")),
            "x" if r.get("congested") else "",
            "-" if admit is None else f"{admit:.0f}",
            f"{r['fins'] / period:.1f}",
        )
    return table


class LiveView:
    def __init__(self, recorder: Recorder, refresh_s: float = 0.5) -> None:
        self.recorder = recorder
        self.refresh_s = refresh_s
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        with Live(render(self.recorder), auto_refresh=False) as live:
            while True:
                await asyncio.sleep(self.refresh_s)
                live.update(render(self.recorder), refresh=True)

    async def __aenter__(self) -> LiveView:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
