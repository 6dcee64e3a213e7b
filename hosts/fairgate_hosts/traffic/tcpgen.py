"""TCP flow generator: asyncio client (Poisson arrivals, Pareto sizes) and sink server.

The client opens one TCP connection per flow of a seeded :class:`Workload`, uploads
``size`` bytes, half-closes (its FIN is what the switch counts as a completion) and waits
for the server's FIN; the server reads to EOF and closes. One event loop, no thread per
flow. Concurrent sockets are capped (``max_open``): arrivals beyond the cap are not started
and recorded as ``capped``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.kernel_tcp import limit_segment_size
from fairgate_hosts.traffic.records import FlowRecord, data_acked, tcp_info
from fairgate_hosts.traffic.workload import FlowSpec, Workload

DEFAULT_MAX_OPEN = 4000
FD_RESERVE = 64  # descriptors kept for logs, the event loop, stdio
CHUNK = 64 * 1024
_ZEROS = bytes(CHUNK)


class _ClosedEarlyError(Exception):
    """The server's FIN arrived before it had acknowledged all of the flow's data."""


def fd_budget(want: int) -> tuple[int, str | None]:
    """Raise RLIMIT_NOFILE's soft limit to fit ``want`` sockets; returns the usable cap and
    a message when it had to be lowered."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = want + FD_RESERVE
    if soft != resource.RLIM_INFINITY and soft < need:
        target = need if hard == resource.RLIM_INFINITY else min(need, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft != resource.RLIM_INFINITY and soft < need:
        cap = max(1, soft - FD_RESERVE)
        return cap, (
            f"open-file limit is {soft}: socket cap lowered from {want} to {cap} "
            "(keep arrival rate x --timeout below it)"
        )
    return want, None


@dataclass(frozen=True, slots=True)
class ClientConfig:
    host: str
    port: int = 5001
    rate_per_s: float = 100.0
    shape: float = 1.5
    mean_bytes: float = 10_000.0
    seed: int = 1
    duration_s: float = 35.0
    timeout_s: float = 60.0
    drain_s: float | None = None  # wait for open flows after the last arrival; None: timeout
    max_open: int = DEFAULT_MAX_OPEN
    max_bytes: int | None = None
    bind: str | None = None
    mss: int | None = None  # data bytes per segment (None: the kernel's, from the path)


@dataclass
class TcpFlowClient:
    cfg: ClientConfig
    on_record: Callable[[FlowRecord], None]
    warn: Callable[[str], None] = field(default=lambda msg: print(msg, file=sys.stderr))
    open_now: int = 0
    peak_open: int = 0
    capped: int = 0
    started: int = 0
    _t0: float = 0.0
    _cap_warned: bool = False

    def _now(self) -> float:
        return asyncio.get_running_loop().time() - self._t0

    async def run(self, stop: asyncio.Event) -> dict[str, Any]:
        """Offer the workload until ``duration_s`` or ``stop``; returns run statistics."""
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        cfg = self.cfg
        wl = Workload(cfg.rate_per_s, cfg.shape, cfg.mean_bytes, cfg.seed, cfg.max_bytes)
        tasks: set[asyncio.Task[None]] = set()
        stopped = False
        for spec in wl.flows(cfg.duration_s):
            delay = spec.start_s - self._now()
            if delay > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
            if stop.is_set():
                stopped = True
                break
            if self.open_now >= cfg.max_open:
                self._capped(spec)
                continue
            # Take the slot now, not when the task first runs: arrivals that are
            # already due start without yielding, so a count kept by the tasks
            # would let a burst of them past the cap.
            self.open_now += 1
            self.peak_open = max(self.peak_open, self.open_now)
            task = asyncio.create_task(self._flow(spec))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if not stopped:
            wait = cfg.timeout_s if cfg.drain_s is None else cfg.drain_s
            end = asyncio.ensure_future(stop.wait())
            pending = {*tasks, end}
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(wait):
                    while tasks and not stop.is_set():
                        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                        pending = {*tasks, end}
            end.cancel()
        for task in list(tasks):
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "elapsed_s": self._now(),
            "interrupted": stop.is_set(),
            "peak_open": self.peak_open,
            "capped": self.capped,
            "max_open": cfg.max_open,
        }

    def _capped(self, spec: FlowSpec) -> None:
        self.capped += 1
        if not self._cap_warned:
            self._cap_warned = True
            self.warn(
                f"tcpgen: socket cap reached ({self.cfg.max_open} open) at "
                f"t={self._now():.1f} s: further arrivals are skipped (outcome 'capped') "
                "until flows end; lower the arrival rate or --timeout, or raise --max-open"
            )
        rec = FlowRecord(spec.index, spec.start_s, spec.size_bytes, outcome="capped")
        self.on_record(rec)

    async def _flow(self, spec: FlowSpec) -> None:
        loop = asyncio.get_running_loop()
        cfg = self.cfg
        rec = FlowRecord(spec.index, spec.start_s, spec.size_bytes)
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:
            self.open_now -= 1
            rec.outcome, rec.error = "error", errno.errorcode.get(exc.errno or 0, str(exc))
            self.on_record(rec)
            return
        self.started += 1
        rec.start_s = self._now()
        try:
            sock.setblocking(False)
            if cfg.bind:
                sock.bind((cfg.bind, 0))
            if cfg.mss is not None:
                limit_segment_size(sock, cfg.mss)
            async with asyncio.timeout(cfg.timeout_s):
                rec.phase = "connect"
                await loop.sock_connect(sock, (cfg.host, cfg.port))
                rec.connect_s = self._now() - rec.start_s
                info = tcp_info(sock)
                rec.syn_retrans = info.total_retrans if info else None
                rec.phase = "send"
                left = spec.size_bytes
                view = memoryview(_ZEROS)
                while left > 0:
                    n = min(left, CHUNK)
                    await loop.sock_sendall(sock, view[:n])
                    left -= n
                    rec.sent += n
                sock.shutdown(socket.SHUT_WR)
                rec.phase = "wait_eof"
                while await loop.sock_recv(sock, 4096):
                    pass
                if not data_acked(tcp_info(sock), spec.size_bytes):
                    # the server closed before all our data arrived (its idle timeout):
                    # its FIN is not a completion
                    raise _ClosedEarlyError
                rec.fct_s = self._now() - rec.start_s
                rec.phase, rec.outcome = "done", "completed"
        except _ClosedEarlyError:
            rec.outcome, rec.error = "reset", "peer closed before acknowledging all data"
        except TimeoutError as exc:
            rec.outcome = "timeout"
            if exc.errno:
                rec.error = "ETIMEDOUT (kernel gave up)"
        except ConnectionRefusedError:
            rec.outcome = "refused"
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
            rec.outcome = "reset"
        except asyncio.CancelledError:
            rec.outcome = "interrupted"
        except OSError as exc:
            rec.outcome = "error"
            rec.error = errno.errorcode.get(exc.errno or 0, str(exc))
        finally:
            info = tcp_info(sock)
            rec.retrans = info.total_retrans if info else None
            sock.close()
            self.open_now -= 1
            rec.end_s = self._now()
            self.on_record(rec)


# --------------------------------------------------------------------- server
@dataclass(frozen=True, slots=True)
class ServerConfig:
    host: str = "0.0.0.0"
    port: int = 5001
    backlog: int = 4096
    max_open: int = DEFAULT_MAX_OPEN
    idle_timeout_s: float = 120.0


@dataclass
class TcpSinkServer:
    """Accepts, reads to EOF, closes. At ``max_open`` it stops accepting (connections wait
    in the kernel's backlog) until one ends."""

    cfg: ServerConfig
    on_conn: Callable[[dict[str, Any]], None] | None = None
    open_now: int = 0
    peak_open: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    bytes_total: int = 0
    port: int = 0
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    _slot: asyncio.Event = field(default_factory=asyncio.Event)
    _t0: float = 0.0

    async def run(self, stop: asyncio.Event) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        self._t0 = loop.time()
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind((self.cfg.host, self.cfg.port))
        lsock.listen(self.cfg.backlog)
        lsock.setblocking(False)
        self.port = lsock.getsockname()[1]
        self.ready.set()
        tasks: set[asyncio.Task[None]] = set()
        stopper = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                if self.open_now >= self.cfg.max_open:
                    self._slot.clear()
                    await asyncio.wait(
                        {stopper, asyncio.ensure_future(self._slot.wait())},
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    continue
                acc = asyncio.ensure_future(loop.sock_accept(lsock))
                await asyncio.wait({stopper, acc}, return_when=asyncio.FIRST_COMPLETED)
                if not acc.done():
                    acc.cancel()
                    with contextlib.suppress(asyncio.CancelledError, OSError):
                        await acc
                    break
                try:
                    conn, peer = acc.result()
                except OSError as exc:  # EMFILE and friends: back off briefly
                    self._count(f"accept_{errno.errorcode.get(exc.errno or 0, 'error')}")
                    await asyncio.sleep(0.01)
                    continue
                task = asyncio.create_task(self._serve(conn, peer))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            stopper.cancel()
            lsock.close()
            for task in list(tasks):
                task.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)
        return {
            "elapsed_s": loop.time() - self._t0,
            "connections": dict(self.counts),
            "bytes": self.bytes_total,
            "peak_open": self.peak_open,
        }

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    async def _serve(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        loop = asyncio.get_running_loop()
        self.open_now += 1
        self.peak_open = max(self.peak_open, self.open_now)
        start = loop.time()
        nbytes, outcome = 0, "eof"
        try:
            conn.setblocking(False)
            while True:
                async with asyncio.timeout(self.cfg.idle_timeout_s):
                    chunk = await loop.sock_recv(conn, CHUNK)
                if not chunk:
                    break
                nbytes += len(chunk)
        except TimeoutError:
            outcome = "timeout"
        except (ConnectionResetError, BrokenPipeError, ConnectionAbortedError):
            outcome = "reset"
        except asyncio.CancelledError:
            outcome = "interrupted"
        except OSError:
            outcome = "error"
        finally:
            conn.close()
            self.open_now -= 1
            self._slot.set()
            self.bytes_total += nbytes
            self._count(outcome)
            if self.on_conn is not None:
                self.on_conn(
                    {
                        "type": "conn",
                        "peer": f"{peer[0]}:{peer[1]}",
                        "accept_s": start - self._t0,
                        "duration_s": loop.time() - start,
                        "bytes": nbytes,
                        "outcome": outcome,
                    }
                )
