"""Small I/O helpers shared by the real agents: clock, precise waits, JSONL logs, signals."""

from __future__ import annotations

import json
import select
import signal
import socket
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO


def monotonic_us() -> int:
    return time.monotonic_ns() // 1000


def wait_until(sock: socket.socket | None, deadline_us: int, spin_us: int) -> bool:
    """Wait until ``deadline_us`` or until ``sock`` is readable, whichever is first.

    Sleeps (in select) until ``spin_us`` before the deadline, then busy-waits, so the
    wake-up error is that of a spin loop rather than that of the scheduler. Returns True
    when the socket became readable.
    """
    now = monotonic_us()
    remaining = deadline_us - now
    if remaining > spin_us:
        timeout = (remaining - spin_us) / 1e6
        if sock is None:
            time.sleep(timeout)
        else:
            readable, _, _ = select.select([sock], [], [], timeout)
            if readable:
                return True
    while monotonic_us() < deadline_us:
        pass
    return False


def parse_size(text: str) -> int:
    """'1500', '10k', '2M', '1G' (powers of 1000) to bytes."""
    mult = {"k": 1000, "m": 1000**2, "g": 1000**3}
    t = text.strip().lower().removesuffix("b")
    factor = mult.get(t[-1:], 1)
    if factor != 1:
        t = t[:-1]
    value = float(t) * factor
    if value <= 0:
        raise ValueError(f"size must be > 0: {text!r}")
    return int(value)


@dataclass
class JsonlLog:
    """Writes one JSON object per line to a file or stdout ('-')."""

    path: str
    _fh: TextIO | None = None

    def __post_init__(self) -> None:
        self._fh = sys.stdout if self.path == "-" else open(self.path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, record: dict[str, Any]) -> None:
        assert self._fh is not None
        self._fh.write(json.dumps(record, separators=(",", ":")) + "\n")

    def flush(self) -> None:
        if self._fh is not None:
            self._fh.flush()

    def close(self) -> None:
        if self._fh is not None and self._fh is not sys.stdout:
            self._fh.close()
        elif self._fh is not None:
            self._fh.flush()
        self._fh = None


@dataclass
class JsonlTail:
    """Reads the complete JSON lines appended to a JSONL file since the last call
    (a missing or unreadable file reads as nothing yet; a cut or bad line is skipped)."""

    path: Path
    offset: int = 0

    def new(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(self.offset)
                data = f.read()
        except OSError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


@dataclass
class StopFlag:
    """Set by SIGINT/SIGTERM once :meth:`install` ran."""

    stopped: bool = False
    signals: list[int] = field(default_factory=list)

    def install(self) -> StopFlag:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handler)
        return self

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = True
        self.signals.append(signum)
