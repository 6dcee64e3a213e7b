"""Processes a lab starts (controller, host agents), tracked and stopped by PID."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any


@dataclass
class Tracked:
    name: str
    proc: Any  # subprocess.Popen (Mininet's popen returns one too)
    log: IO[bytes] | None = None


@dataclass
class ProcessGroup:
    """Starts processes in Mininet hosts or the root namespace; ``stop_all``
    sends SIGINT, then SIGTERM, then SIGKILL to each PID it started."""

    log_dir: Path
    procs: list[Tracked] = field(default_factory=list)

    def _log(self, name: str) -> IO[bytes]:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        return open(self.log_dir / f"{name}.out", "ab")

    def start(self, name: str, cmd: list[str], host: Any = None) -> Tracked:
        """`cmd` in Mininet `host` (None: root namespace, new session)."""
        log = self._log(name)
        if host is None:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        else:
            proc = host.popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        tracked = Tracked(name, proc, log)
        self.procs.append(tracked)
        return tracked

    def running(self) -> list[str]:
        return [t.name for t in self.procs if t.proc.poll() is None]

    def wait(self, tracked: Tracked, timeout_s: float) -> int | None:
        try:
            return int(tracked.proc.wait(timeout_s))
        except subprocess.TimeoutExpired:
            return None

    def stop(self, tracked: Tracked, grace_s: float = 5.0) -> int | None:
        proc = tracked.proc
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)
            deadline = time.monotonic() + grace_s
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
        if tracked.log is not None:
            tracked.log.close()
            tracked.log = None
        return proc.poll()

    def stop_all(self, grace_s: float = 5.0) -> None:
        """Every process: SIGINT to all, then SIGTERM, then SIGKILL to what is left."""
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            alive = [t for t in self.procs if t.proc.poll() is None]
            if not alive:
                break
            for tracked in reversed(alive):
                with contextlib.suppress(ProcessLookupError):
                    tracked.proc.send_signal(sig)
            deadline = time.monotonic() + grace_s
            while any(t.proc.poll() is None for t in alive) and time.monotonic() < deadline:
                time.sleep(0.05)
        for tracked in self.procs:
            if tracked.log is not None:
                tracked.log.close()
                tracked.log = None
        self.procs.clear()
