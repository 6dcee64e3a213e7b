"""TCP sink server for the traffic generator: accept, read to EOF, close.

``python -m fairgate_hosts.traffic.server --port 5001 [--records conns.jsonl]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

from fairgate_hosts.traffic.tcpgen import (
    DEFAULT_MAX_OPEN,
    ServerConfig,
    TcpSinkServer,
    fd_budget,
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.traffic.server",
        description="Accept TCP connections, read each to EOF and close it (the client's FIN "
        "ends a flow; our FIN tells the client everything arrived). Runs until SIGINT/SIGTERM "
        "or --duration, then writes a summary JSON.",
    )
    p.add_argument("--bind", default="0.0.0.0", help="address to listen on")
    p.add_argument("--port", type=int, default=5001, help="TCP port")
    p.add_argument("--backlog", type=int, default=4096, help="listen backlog (<= somaxconn)")
    p.add_argument(
        "--max-open",
        type=int,
        default=DEFAULT_MAX_OPEN,
        help="stop accepting while this many connections are open",
    )
    p.add_argument("--idle-timeout", type=float, default=120.0, help="close idle conns, s")
    p.add_argument("--duration", type=float, default=None, help="exit after S seconds")
    p.add_argument("--records", type=Path, default=None, help="per-connection JSONL")
    p.add_argument("--summary", type=Path, default=None, help="summary JSON (default stdout)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    cap, msg = fd_budget(args.max_open)
    if msg:
        print(f"tcpgen server: {msg}", file=sys.stderr)
    cfg = ServerConfig(args.bind, args.port, args.backlog, cap, args.idle_timeout)
    fh = open(args.records, "w", encoding="utf-8") if args.records else None  # noqa: SIM115

    def on_conn(row: dict[str, Any]) -> None:
        if fh is not None:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")

    server = TcpSinkServer(cfg, on_conn)

    async def run() -> dict[str, Any]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        if args.duration is not None:
            loop.call_later(args.duration, stop.set)
        return await server.run(stop)

    try:
        stats = asyncio.run(run())
    finally:
        if fh is not None:
            fh.close()
    stats = {"agent": "tcpgen-server", "wall_time": time.time(), **stats}
    text = json.dumps(stats, indent=2) + "\n"
    if args.summary:
        args.summary.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
