"""BMv2's Thrift CLI (simple_switch_CLI), for what P4Runtime does not cover:
egress queue rate (packets/s) and depth (packets), and register reads (this
P4Runtime cannot read registers). The labs set queues with it
when they start; the controller sets them again whenever it (re)gains a switch,
so a restarted switch gets its queues back. Thrift is reached on loopback only
(docs/reliability.md).

simple_switch_CLI is a Python script started with whatever `python3` is first
on PATH; that interpreter may lack the `thrift` module even when Debian's
python3-thrift is installed. We run the script with our own interpreter
(the project venv sees Debian's dist-packages), which always has it after
`make deps`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys


class SwitchCliError(RuntimeError):
    pass


def cli_path() -> str:
    name = os.environ.get("SWITCH_CLI", "simple_switch_CLI")
    path = shutil.which(name)
    if path is None:
        raise SwitchCliError(f"{name} not found: install p4lang's BMv2 (README)")
    return path


def run_switch_cli(thrift_port: int, commands: list[str], timeout_s: float = 30.0) -> str:
    """Run CLI commands against the switch on `thrift_port`; raise on any error."""
    text = "\n".join(commands) + "\n"
    proc = subprocess.run(
        [sys.executable, cli_path(), "--thrift-port", str(thrift_port)],
        input=text,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if proc.returncode != 0 or "Error" in proc.stdout or "Traceback" in proc.stderr:
        raise SwitchCliError(
            f"simple_switch_CLI {commands} on port {thrift_port} failed: {proc.stdout}{proc.stderr}"
        )
    return proc.stdout


def parse_register_reads(text: str) -> dict[str, list[int]]:
    """Whole-array ``register_read <name>`` output (``RuntimeCmd: name= 1, 2``)."""
    out: dict[str, list[int]] = {}
    for line in text.splitlines():
        m = re.search(r"(\w+)= (\d+(?:, \d+)*)\s*$", line)
        if m:
            out[m.group(1)] = [int(v) for v in m.group(2).split(", ")]
    return out


def read_registers(thrift_port: int, names: list[str]) -> dict[str, list[int]]:
    """Every cell of each register in `names`, in one CLI run; raise if one is missing."""
    values = parse_register_reads(
        run_switch_cli(thrift_port, [f"register_read {n}" for n in names])
    )
    missing = [n for n in names if n not in values]
    if missing:
        raise SwitchCliError(f"register_read on port {thrift_port}: no value for {missing}")
    return values


QueueSetting = tuple[int, int | None, int | None]
"""(port, rate in packets/s or None, depth in packets or None)."""


def queue_commands(settings: list[QueueSetting]) -> list[str]:
    commands = []
    for port, rate_pps, depth in settings:
        if rate_pps is not None:
            commands.append(f"set_queue_rate {rate_pps} {port}")
        if depth is not None:
            commands.append(f"set_queue_depth {depth} {port}")
    return commands


def set_queues(thrift_port: int, settings: list[QueueSetting]) -> None:
    """Every egress queue in `settings` in one CLI run (rate 0 = unlimited)."""
    commands = queue_commands(settings)
    if commands:
        run_switch_cli(thrift_port, commands)


def set_queue(thrift_port: int, port: int, rate_pps: int | None, depth: int | None) -> None:
    """Egress queue of `port`: rate in packets/s (0 = unlimited), depth in packets."""
    set_queues(thrift_port, [(port, rate_pps, depth)])
