"""Says which switches the controller is waiting for, and when it has waited too long.

finsy retries a switch that does not answer silently (gRPC reconnects with a
backoff of up to 15 s). ``Liveness`` turns the connection state of every
switch, sampled once a second, into log lines: "waiting for switch s2 at
127.0.0.1:50002 (attempt n)" while a switch is down, "switch s2 at ... is up"
when it comes, and after ``timeout_s`` one error naming every switch still
unreachable and the ones being controlled meanwhile. ``tune_finsy`` shortens
finsy's reconnect backoff so that a switch that comes up is reached within
about a second.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

LOG = logging.getLogger("fairgate.controller")

RECONNECT_BACKOFF_MS = 1000
"""gRPC's maximum reconnect backoff for switch channels (finsy's default is 15 s)."""
RETRY_AFTER_FAILURE_S = 1.0
"""finsy's wait before retrying a switch whose session failed within 2 s (its default: 10 s)."""


@dataclass
class Liveness:
    """Pure bookkeeping: connection state in, log lines out."""

    addresses: dict[str, str]  # switch name -> P4Runtime address
    timeout_s: float
    started_s: float
    attempts: dict[str, int] = field(default_factory=dict)
    down_since: dict[str, float] = field(default_factory=dict)
    ever_up: set[str] = field(default_factory=set)
    reported: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        for name in self.addresses:
            self.down_since.setdefault(name, self.started_s)
            self.attempts.setdefault(name, 0)

    def tick(self, now: float, up: dict[str, bool]) -> list[tuple[int, str]]:
        lines: list[tuple[int, str]] = []
        for name, addr in self.addresses.items():
            if up.get(name, False):
                if name in self.down_since:
                    waited = now - self.down_since.pop(name)
                    lines.append(
                        (
                            logging.INFO,
                            f"switch {name} at {addr} is up "
                            f"({'after' if self.attempts[name] else 'within'} {waited:.1f} s)",
                        )
                    )
                self.attempts[name] = 0
                self.ever_up.add(name)
                self.reported.discard(name)
                continue
            self.down_since.setdefault(name, now)
            self.attempts[name] += 1
            lines.append(
                (
                    logging.WARNING,
                    f"waiting for switch {name} at {addr} (attempt {self.attempts[name]})",
                )
            )
        late = [
            name
            for name, since in self.down_since.items()
            if now - since >= self.timeout_s and name not in self.reported
        ]
        if late:
            self.reported.update(late)
            down = [
                f"{n} at {self.addresses[n]} ({'down' if n in self.ever_up else 'never reached'})"
                for n in self.addresses
                if n in self.down_since and now - self.down_since[n] >= self.timeout_s
            ]
            healthy = [n for n in self.addresses if n not in self.down_since]
            lines.append(
                (
                    logging.ERROR,
                    f"switches unreachable for {self.timeout_s:g} s or more: {', '.join(down)}; "
                    f"controlling {', '.join(healthy) or 'none'}; still trying",
                )
            )
        return lines


async def watch(
    switches: Sequence[Any],
    timeout_s: float,
    interval_s: float = 1.0,
    first_s: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Log the switches' liveness every `interval_s` (the first time after `first_s`)."""
    live = Liveness({sw.name: sw.address for sw in switches}, timeout_s, clock())
    await asyncio.sleep(first_s)
    while True:
        for level, line in live.tick(clock(), {sw.name: sw.is_up for sw in switches}):
            LOG.log(level, line)
        await asyncio.sleep(interval_s)


def tune_finsy(
    backoff_ms: int = RECONNECT_BACKOFF_MS, retry_s: float = RETRY_AFTER_FAILURE_S
) -> None:
    """Shorten finsy's reconnect delays (finsy is pinned in requirements.txt:
    it builds its gRPC options inside P4Client.open, so we replace the options
    class it uses there, and its module-level retry throttle)."""
    import finsy.p4client as p4client
    import finsy.switch as switch
    from finsy.grpcutil import GRPCOptions

    class FastReconnect(GRPCOptions):
        def to_native(self) -> list[tuple[str, int | str]]:
            native = [(k, v) for k, v in super().to_native() if "reconnect_backoff" not in k]
            return [
                *native,
                ("grpc.initial_reconnect_backoff_ms", min(250, backoff_ms)),
                ("grpc.min_reconnect_backoff_ms", min(250, backoff_ms)),
                ("grpc.max_reconnect_backoff_ms", backoff_ms),
            ]

    p4client.GRPCOptions = FastReconnect  # type: ignore[misc]
    switch._FAIL_THROTTLE_SECS = retry_s  # type: ignore[attr-defined]
