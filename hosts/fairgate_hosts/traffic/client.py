"""TCP traffic generator client.

``python -m fairgate_hosts.traffic.client --dst 10.0.0.2 --rate 250 --duration 35
--records flows.jsonl --summary summary.json``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from pathlib import Path

from fairgate_hosts.agentio import parse_size
from fairgate_hosts.kernel_tcp import add_mss_argument
from fairgate_hosts.traffic.records import RecordSink, summarize
from fairgate_hosts.traffic.tcpgen import DEFAULT_MAX_OPEN, ClientConfig, TcpFlowClient, fd_budget


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.traffic.client",
        description="Open TCP flows with Poisson arrivals and Pareto sizes (seeded), upload "
        "each flow's bytes, half-close, wait for the server's FIN. Writes one JSONL record "
        "per flow and a summary JSON (completion rate in a window after a warm-up, FCT, "
        "size mix of completed flows).",
    )
    p.add_argument("--dst", required=True, help="server IPv4 address")
    p.add_argument("--port", type=int, default=5001, help="server TCP port")
    p.add_argument("--bind", default=None, help="local address to connect from")
    p.add_argument("--rate", type=float, default=100.0, help="arrivals, flows/s (Poisson)")
    p.add_argument("--shape", type=float, default=1.5, help="Pareto shape (> 1)")
    p.add_argument("--mean-size", type=parse_size, default=10_000, help="mean flow size (10k)")
    p.add_argument("--max-size", type=parse_size, default=None, help="truncate sizes to this")
    p.add_argument("--seed", type=int, default=1, help="workload seed")
    p.add_argument("--duration", type=float, default=35.0, help="offer flows for S seconds")
    p.add_argument("--warmup", type=float, default=10.0, help="count completions after S seconds")
    p.add_argument(
        "--window-end",
        type=float,
        default=None,
        help="end of the measurement window, s (default: --duration)",
    )
    p.add_argument(
        "--timeout", type=float, default=60.0, help="per-flow timeout, s (connect included)"
    )
    p.add_argument(
        "--drain",
        type=float,
        default=None,
        help="after the last arrival wait S for open flows (default: --timeout)",
    )
    p.add_argument(
        "--max-open",
        type=int,
        default=DEFAULT_MAX_OPEN,
        help=f"cap on concurrent sockets (default {DEFAULT_MAX_OPEN}; a process here cannot "
        "open more than ~20000 files)",
    )
    add_mss_argument(p)
    p.add_argument("--records", type=Path, default=None, help="per-flow JSONL output")
    p.add_argument("--summary", type=Path, default=None, help="summary JSON (default stdout)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    warmup = args.warmup if args.warmup < (args.window_end or args.duration) else 0.0
    if warmup != args.warmup:
        print(f"tcpgen: warm-up {args.warmup} s >= window end: using 0", file=sys.stderr)
    cap, msg = fd_budget(args.max_open)
    if msg:
        print(f"tcpgen: {msg}", file=sys.stderr)
    cfg = ClientConfig(
        host=args.dst,
        port=args.port,
        rate_per_s=args.rate,
        shape=args.shape,
        mean_bytes=args.mean_size,
        seed=args.seed,
        duration_s=args.duration,
        timeout_s=args.timeout,
        drain_s=args.drain,
        max_open=cap,
        max_bytes=args.max_size,
        bind=args.bind,
        mss=args.mss,
    )
    sink = RecordSink(args.records)
    run_args = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
    sink.header(
        {"type": "run", "agent": "tcpgen-client", "wall_time": time.time(), "args": run_args}
    )
    client = TcpFlowClient(cfg, sink.add)

    async def run() -> dict[str, object]:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await client.run(stop)

    try:
        stats = asyncio.run(run())
    finally:
        sink.close()
    summary = summarize(
        sink.records,
        duration_s=args.duration,
        warmup_s=warmup,
        window_end_s=args.window_end,
        extra={
            "run": stats,
            "workload": {
                "rate_per_s": args.rate,
                "shape": args.shape,
                "mean_bytes": args.mean_size,
                "seed": args.seed,
            },
        },
    )
    text = json.dumps(summary, indent=2) + "\n"
    if args.summary:
        args.summary.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 130 if stats["interrupted"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
