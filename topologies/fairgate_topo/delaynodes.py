"""Delay-line nodes in a Mininet lab: a host's access link with a fixed delay.

For a host with ``delay_ms``, ``LabNet`` puts a node ``d<host>`` (a Mininet host
with two interfaces and no address) between the host and its switch port, and
runs ``fairgate_topo.delayline`` in it, bridging its two interfaces with that
one-way delay (both directions). Each line writes a PID file once running and
removes it on exit; ``stop`` sends SIGTERM to each PID we started (SIGKILL
after a grace period), collects the exit counts and returns them.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# SCHED_FIFO priority of the lines: on two busy cores (BMv2, TCP, controller) a
# normal-priority line released frames up to 10-40 ms late; a line needs ~1 % CPU.
RT_PRIORITY = 10


def node_name(host: str) -> str:
    return f"d{host}"


@dataclass
class DelayLine:
    host: str
    node: Any  # the Mininet node
    delay_ms: float
    log: Path
    pid_file: Path
    stats: Path
    proc: subprocess.Popen[bytes] | None = None


@dataclass
class DelayNodes:
    """The delay lines of one lab network."""

    run_dir: Path
    lines: list[DelayLine] = field(default_factory=list)
    counts: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.run_dir / "delaylines"

    def add(self, net: Any, host: Any, switch: Any, port: int, delay_ms: float) -> None:
        """Links host - d<host> - switch:port (call before ``net.build()``)."""
        name = node_name(host.name)
        node = net.addHost(name, ip=None)
        net.addLink(host, node)
        net.addLink(node, switch, port2=port)
        self.lines.append(
            DelayLine(
                host.name,
                node,
                delay_ms,
                self.dir / f"{name}.log",
                self.dir / f"{name}.pid",
                self.dir / f"{name}.json",
            )
        )

    def start(self, timeout_s: float = 15.0) -> None:
        """Starts every line; returns once each has written its PID file."""
        self.dir.mkdir(parents=True, exist_ok=True)
        for line in self.lines:
            a, b = (i.name for i in line.node.intfList())
            line.node.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
            for intf in (a, b):
                line.node.cmd(f"ip link set dev {intf} up")
            cmd = [sys.executable, "-m", "fairgate_topo.delayline", "--a", a, "--b", b]
            cmd += ["--delay-ms", f"{line.delay_ms:g}", "--pid-file", str(line.pid_file)]
            cmd += ["--stats", str(line.stats), "--rt-priority", str(RT_PRIORITY)]
            with open(line.log, "ab") as log:
                line.proc = line.node.popen(
                    cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
        deadline = time.monotonic() + timeout_s
        for line in self.lines:
            while not line.pid_file.exists():
                if (line.proc and line.proc.poll() is not None) or time.monotonic() > deadline:
                    tail = line.log.read_text(errors="replace")[-800:]
                    raise RuntimeError(f"delay line of {line.host} did not start:\n{tail}")
                time.sleep(0.02)

    def stop(self, grace_s: float = 5.0) -> dict[str, dict[str, Any]]:
        """SIGTERM to every running line (by PID), SIGKILL after `grace_s`;
        returns the exit counts per host (read from each line's --stats file)."""
        running = [x for x in self.lines if x.proc is not None and x.proc.poll() is None]
        for line in running:
            assert line.proc is not None
            line.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for line in running:
            assert line.proc is not None
            try:
                line.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                line.proc.kill()
                line.proc.wait()
        for line in self.lines:
            if line.proc is not None and line.stats.exists():
                self.counts[line.host] = json.loads(line.stats.read_text())
            line.proc = None
        return dict(self.counts)
