"""A finsy P4Runtime Switch driven from synchronous code.

finsy is asyncio; PTF tests and Mininet tests are synchronous. This runs the
switch connection on a private event loop in a background thread and hands
results back. The controller's own loop uses finsy's asyncio API directly.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import finsy as fy

T = TypeVar("T")


class P4RuntimeError(RuntimeError):
    """A P4Runtime request the switch refused, with what was asked."""


def describe(entity: object, limit: int = 400) -> str:
    text = repr(entity)
    return text if len(text) < limit else text[:limit] + "..."


class SyncSwitch:
    """Connects, arbitrates and (when the switch holds another pipeline)
    pushes `p4info` + `p4blob`; then insert/modify/delete/read synchronously."""

    def __init__(
        self,
        address: str,
        p4info: Path,
        p4blob: Path,
        device_id: int = 0,
        election_id: int = 10,
        timeout_s: float = 15.0,
        name: str = "sync",
    ) -> None:
        self._timeout_s = timeout_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        options = fy.SwitchOptions(
            p4info=p4info, p4blob=p4blob, device_id=device_id, initial_election_id=election_id
        )
        self.switch = fy.Switch(name, address, options)
        try:
            self._run(self.switch.__aenter__())
        except BaseException:
            self._stop_loop()
            raise

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(self._timeout_s)

    def write(self, op: str, entities: list[Any]) -> None:
        """op is insert, modify or delete."""
        try:
            self._run(getattr(self.switch, op)(entities))
        except fy.P4ClientError as exc:
            what = "; ".join(describe(e) for e in entities)
            raise P4RuntimeError(
                f"P4Runtime {op} refused by the switch: {exc}\n  wrote: {what}"
            ) from None

    def insert(self, *entities: Any) -> None:
        self.write("insert", list(entities))

    def modify(self, *entities: Any) -> None:
        self.write("modify", list(entities))

    def delete(self, *entities: Any) -> None:
        self.write("delete", list(entities))

    def read(self, entity: Any) -> list[Any]:
        async def collect() -> list[Any]:
            return [e async for e in self.switch.read(entity)]

        try:
            return self._run(collect())
        except fy.P4ClientError as exc:
            raise P4RuntimeError(f"P4Runtime read of {describe(entity)} failed: {exc}") from None

    def read_counters(self, counter: str) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) for every index of an indirect counter."""
        return {
            e.index: (e.packet_count, e.byte_count)
            for e in self.read(fy.P4CounterEntry(counter))
            if e.index is not None
        }

    def close(self) -> None:
        try:
            self._run(self.switch.__aexit__(None, None, None))
        finally:
            self._stop_loop()

    def __enter__(self) -> SyncSwitch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _stop_loop(self) -> None:
        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        with contextlib.suppress(Exception):
            self._run(drain())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
        self._loop.close()
