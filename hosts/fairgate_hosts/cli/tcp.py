"""fg-tcp: TCP flows with Poisson arrivals and Pareto sizes (the experiments' generator).

``h2 fg-tcp r2 --flows poisson:50/s --sizes pareto:1.5,10k --for 30``: the lab runs a TCP sink
(port 5001) on every host. Per-flow records and the summary go to ``$FG_RUN_DIR/cmds/``; the
terminal gets the summary's key numbers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from fairgate_hosts.cli.common import (
    CommandError,
    OneLineParser,
    Session,
    fail,
    local_address,
    log_path,
    parse_bytes,
    parse_seconds,
    registered,
    say,
)
from fairgate_hosts.traffic.client import main as client_main

PROG = "fg-tcp"
TCP_PORT = 5001


@dataclass(frozen=True)
class Arrivals:
    per_s: float


@dataclass(frozen=True)
class Sizes:
    shape: float
    mean_bytes: int


def parse_arrivals(text: str) -> Arrivals:
    """'poisson:50/s' or '50/s' -> Poisson arrivals at 50 flows/s."""
    m = re.fullmatch(r"\s*(?:poisson:)?(\d+(?:\.\d+)?)\s*(?:/s)?\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"expected poisson:RATE/s, e.g. poisson:50/s, not {text!r}"
        )
    return Arrivals(float(m.group(1)))


def parse_sizes(text: str) -> Sizes:
    """'pareto:1.5,10k' -> Pareto sizes of shape 1.5 and mean 10 kB."""
    m = re.fullmatch(r"\s*pareto:([^,]+),(.+)", text)
    if not m:
        raise argparse.ArgumentTypeError(
            f"expected pareto:SHAPE,MEAN, e.g. pareto:1.5,10k, not {text!r}"
        )
    try:
        shape = float(m.group(1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"Pareto shape is not a number: {m.group(1)!r}") from None
    if not shape > 1:
        raise argparse.ArgumentTypeError(f"Pareto shape must be > 1 (finite mean), not {shape}")
    return Sizes(shape, parse_bytes(m.group(2)))


def build_parser() -> OneLineParser:
    p = OneLineParser(
        prog=PROG,
        description="Open TCP flows to DST (a TCP sink listens on port 5001 of every lab host) "
        "with Poisson arrivals and Pareto sizes; report completions and flow completion times.",
    )
    p.add_argument("dst", help="destination host (r1) or IPv4 address")
    p.add_argument(
        "--flows", type=parse_arrivals, default=Arrivals(10.0), help="poisson:RATE/s (10/s)"
    )
    p.add_argument(
        "--sizes", type=parse_sizes, default=Sizes(1.5, 10_000), help="pareto:SHAPE,MEAN (1.5,10k)"
    )
    p.add_argument("--for", dest="seconds", type=parse_seconds, default=10.0, help="offer S s")
    p.add_argument("--seed", type=int, default=1, help="workload seed")
    p.add_argument("--timeout", type=parse_seconds, default=20.0, help="per-flow timeout, s")
    p.add_argument("--port", type=int, default=TCP_PORT, help="sink's TCP port")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        session = Session.load()
        dst = session.address(args.dst)
    except CommandError as exc:
        return fail(PROG, str(exc))
    me = session.name_of(local_address(dst, args.port))
    records = log_path(session, me, "tcp")
    summary = log_path(session, me, "tcp", ".summary.json")
    say(
        f"{me} -> {session.name_of(dst)}: {args.flows.per_s:g} flows/s for {args.seconds:g} s, "
        f"Pareto({args.sizes.shape:g}) sizes, mean {args.sizes.mean_bytes} B; records {records}"
    )
    argv2 = ["--dst", dst, "--port", str(args.port), "--rate", str(args.flows.per_s)]
    argv2 += ["--shape", str(args.sizes.shape), "--mean-size", str(args.sizes.mean_bytes)]
    argv2 += ["--seed", str(args.seed), "--duration", str(args.seconds), "--warmup", "0"]
    argv2 += ["--timeout", str(args.timeout), "--drain", str(args.timeout)]
    argv2 += ["--records", str(records), "--summary", str(summary)]
    with registered(session, f"{PROG} {' '.join(argv or sys.argv[1:])}"):
        code = client_main(argv2)
    try:
        doc = json.loads(summary.read_text())
    except (OSError, json.JSONDecodeError):
        return code
    say(f"{me} -> {session.name_of(dst)}: " + summary_line(doc))
    return code


def summary_line(doc: dict[str, Any]) -> str:
    """The summary's key numbers on one line."""
    fct = doc.get("fct_s") or {}
    mean, p99 = fct.get("mean"), fct.get("p99")
    return (
        f"{doc.get('flows', 0)} flows offered, outcomes {doc.get('outcomes', {})}, "
        f"{doc.get('completion_rate_per_s', 0):.1f} completed/s, FCT mean "
        f"{'-' if mean is None else f'{mean:.3f} s'} p99 {'-' if p99 is None else f'{p99:.3f} s'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
