"""The CM daemon: one per user, the sans-IO CM on a UNIX socket and a UDP probe socket.

``python -m fairgate_hosts.cm.daemon [--socket PATH]``. The socket lives in a directory the
user owns with mode 0700 and is itself mode 0600; peers with another uid are refused
(SO_PEERCRED). Malformed requests get an error reply; they never stop the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_hosts.agentio import monotonic_us
from fairgate_hosts.cm.core import (
    AppNotify,
    ChangeRate,
    CMConfig,
    CongestionManager,
    Event,
    SendProbe,
)
from fairgate_hosts.cm.protocol import (
    MAX_LINE,
    ProtocolError,
    default_socket_path,
    int_arg,
    secure_dir,
)
from fairgate_p4 import generated as g


class _ProbeProtocol(asyncio.DatagramProtocol):
    def __init__(self, daemon: CMDaemon) -> None:
        self.daemon = daemon

    def datagram_received(self, data: bytes, addr: tuple[str | Any, int]) -> None:
        self.daemon.route(self.daemon.cm.on_probe_response(str(addr[0]), data, monotonic_us()))

    def error_received(self, exc: Exception) -> None:
        pass


@dataclass
class CMDaemon:
    cm: CongestionManager
    socket_path: Path
    probe_port: int = g.FG_UDP_PORT
    probing: bool = True
    owners: dict[int, asyncio.StreamWriter] = field(default_factory=dict)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    probe_transport: asyncio.DatagramTransport | None = None
    errors: int = 0

    # ------------------------------------------------------------------ events
    def route(self, events: list[Event]) -> None:
        for ev in events:
            if isinstance(ev, SendProbe):
                if self.probe_transport is not None:
                    with contextlib.suppress(OSError):
                        self.probe_transport.sendto(ev.data, (ev.dst, self.probe_port))
                continue
            writer = self.owners.get(ev.flow)
            if writer is None or writer.is_closing():
                continue
            if isinstance(ev, AppNotify):
                msg = {"event": "app_notify", "flow": ev.flow, "nbytes": ev.nbytes}
            else:
                assert isinstance(ev, ChangeRate)
                msg = {"event": "change_rate", "flow": ev.flow, "rate_Bps": ev.rate_Bps}
            writer.write((json.dumps(msg) + "\n").encode())
        self.wake.set()

    # ------------------------------------------------------------------ requests
    def handle(self, line: bytes, writer: asyncio.StreamWriter) -> dict[str, Any]:
        rid: Any = None
        try:
            try:
                req = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ProtocolError(f"bad JSON: {exc}") from None
            if not isinstance(req, dict):
                raise ProtocolError("a request is a JSON object")
            rid = req.get("id")
            result = self._dispatch(req, writer)
            return {"id": rid, "ok": True, "result": result}
        except (ProtocolError, KeyError, ValueError, TypeError) as exc:
            self.errors += 1
            return {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}"}

    def _owned(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> int:
        fid = int_arg(req, "flow", lo=1)
        if self.owners.get(fid) is not writer:
            raise ProtocolError(f"flow {fid} is not open on this connection")
        return fid

    def _dispatch(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        op = req.get("op")
        now = monotonic_us()
        cm = self.cm
        if op == "ping":
            return {"pong": True, "flows": len(cm.flows)}
        if op == "open":
            dst, src, weight = req.get("dst"), req.get("src", ""), req.get("weight", 1.0)
            if not isinstance(dst, str) or not dst or not isinstance(src, str):
                raise ProtocolError("open needs dst (string) and optional src (string)")
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
                raise ProtocolError("weight must be a positive number")
            fid = cm.open(src, dst, float(weight), now_us=now)
            self.owners[fid] = writer
            self.route([ChangeRate(fid, cm.query(fid)["rate_Bps"])])
            return {"flow": fid}
        if op == "request":
            fid = self._owned(req, writer)
            self.route(cm.request(fid, int_arg(req, "nbytes", lo=1), now))
            return None
        if op == "notify":
            fid = self._owned(req, writer)
            self.route(cm.notify(fid, int_arg(req, "nsent"), now))
            return None
        if op == "update":
            fid = self._owned(req, writer)
            rtt = req.get("rtt_us")
            if rtt is not None:
                rtt = int_arg(req, "rtt_us", lo=1)
            rate = req.get("explicit_rate_kbps")
            if rate is not None:
                rate = int_arg(req, "explicit_rate_kbps")
            loss, persistent = req.get("loss", False), req.get("persistent", False)
            if not isinstance(loss, bool) or not isinstance(persistent, bool):
                raise ProtocolError("loss and persistent must be booleans")
            self.route(
                cm.update(
                    fid,
                    int_arg(req, "nrecd", default=0),
                    loss,
                    rtt,
                    now,
                    persistent=persistent,
                    explicit_rate_kbps=rate,
                )
            )
            return None
        if op == "query":
            return cm.query(self._owned(req, writer))
        if op == "close":
            fid = self._owned(req, writer)
            del self.owners[fid]
            self.route(cm.close(fid, now))
            return None
        raise ProtocolError(f"unknown op {op!r}")

    # ------------------------------------------------------------------ serving
    async def client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        try:
            cred = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", cred)
        except OSError:
            uid = -1
        if uid not in (os.getuid(), 0):
            writer.close()
            return
        try:
            while True:
                try:
                    line = await reader.readline()
                except (ValueError, asyncio.LimitOverrunError):
                    writer.write(b'{"id": null, "ok": false, "error": "line too long"}\n')
                    break
                if not line:
                    break
                if not line.strip():
                    continue
                writer.write((json.dumps(self.handle(line, writer)) + "\n").encode())
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            for fid in [f for f, w in self.owners.items() if w is writer]:
                del self.owners[fid]
                self.route(self.cm.close(fid, monotonic_us()))
            writer.close()

    async def ticker(self) -> None:
        while True:
            now = monotonic_us()
            self.route(self.cm.tick(now))
            self.wake.clear()
            deadline = self.cm.next_deadline(now)
            timeout = 0.05 if deadline is None else min(0.05, max(0.0, (deadline - now) / 1e6))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), timeout)

    async def serve(self, stop: asyncio.Event) -> None:
        secure_dir(self.socket_path.parent)
        with contextlib.suppress(FileNotFoundError):
            self.socket_path.unlink()
        old = os.umask(0o177)
        try:
            server = await asyncio.start_unix_server(
                self.client, path=str(self.socket_path), limit=MAX_LINE
            )
        finally:
            os.umask(old)
        os.chmod(self.socket_path, 0o600)
        loop = asyncio.get_running_loop()
        if self.probing:
            transport, _ = await loop.create_datagram_endpoint(
                lambda: _ProbeProtocol(self), local_addr=("0.0.0.0", 0)
            )
            self.probe_transport = transport
        tick = asyncio.create_task(self.ticker())
        try:
            async with server:
                await stop.wait()
        finally:
            tick.cancel()
            if self.probe_transport is not None:
                self.probe_transport.close()
            with contextlib.suppress(FileNotFoundError):
                self.socket_path.unlink()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.cm.daemon",
        description="FairGate Congestion Manager daemon (per user).",
    )
    p.add_argument(
        "--socket",
        type=Path,
        default=None,
        help=f"UNIX socket path (default {default_socket_path()})",
    )
    p.add_argument(
        "--probe-port",
        type=int,
        default=g.FG_UDP_PORT,
        help="UDP port of the receivers' agents answering probes",
    )
    p.add_argument("--no-probe", action="store_true", help="do not send probes")
    p.add_argument("--mss", type=int, default=1200, help="bytes per grant / AIMD MSS")
    p.add_argument(
        "--initial-rate", type=float, default=192.0, help="initial macroflow rate, kbit/s"
    )
    p.add_argument("--max-rate", type=float, default=1_000_000.0, help="cap, kbit/s")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cfg = CMConfig(
        mss=args.mss,
        initial_rate_Bps=args.initial_rate * 125.0,
        max_rate_Bps=args.max_rate * 125.0,
        probing=not args.no_probe,
        burst_bytes=2 * args.mss,
        probe_on_data=False,  # its clients send their own data: probes go on their own
    )
    daemon = CMDaemon(
        CongestionManager(cfg),
        args.socket or default_socket_path(),
        probe_port=args.probe_port,
        probing=not args.no_probe,
    )

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await daemon.serve(stop)

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
