"""Three network namespaces in a row, ``a - d - b``, with a delay line in ``d``
bridging its two veths: for the delay line's netns test and benchmark (root).

``a`` has 10.78.0.1/24 on ``veth0``, ``b`` 10.78.0.2/24 on ``veth0``; ``d`` has no
address. Offloads are off on every end. Only what this object created is
deleted, and only processes it started are stopped (by PID).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_hosts.netns import NetnsGroup, run_ip


@dataclass
class DelayChain(NetnsGroup):
    prefix: str = field(default_factory=lambda: f"fgd-{os.getpid()}")
    addr_a: str = "10.78.0.1"
    addr_b: str = "10.78.0.2"

    @property
    def ns_a(self) -> str:
        return f"{self.prefix}-a"

    @property
    def ns_d(self) -> str:
        return f"{self.prefix}-d"

    @property
    def ns_b(self) -> str:
        return f"{self.prefix}-b"

    def up(self) -> DelayChain:
        try:
            for ns in (self.ns_a, self.ns_d, self.ns_b):
                self.add_namespace(ns)
                run_ip(
                    "ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"
                )
            for ns, peer in ((self.ns_a, "da"), (self.ns_b, "db")):
                run_ip(
                    "ip", "-n", ns, "link", "add", "veth0", "type", "veth",
                    "peer", "name", peer, "netns", self.ns_d,
                )  # fmt: skip
            for ns, dev, addr in (
                (self.ns_a, "veth0", self.addr_a),
                (self.ns_b, "veth0", self.addr_b),
                (self.ns_d, "da", None),
                (self.ns_d, "db", None),
            ):
                if addr:
                    run_ip("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
                run_ip("ip", "-n", ns, "link", "set", dev, "up")
                self.offloads_off(ns, dev)
        except BaseException:
            self.down()
            raise
        return self

    def popen(
        self, ns: str, args: list[str], log: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """``ip netns exec ns <args>`` (args[0] "python" means this interpreter)."""
        if args and args[0] == "python":
            args = [sys.executable, *args[1:]]
        return self.spawn(ns, args, log, env)

    def start_delay(
        self, delay_ms: float, log: Path, pid_file: Path, extra: list[str] | None = None
    ) -> subprocess.Popen[bytes]:
        """The delay line in ``d``; returns once it wrote its PID file."""
        cmd = ["python", "-m", "fairgate_topo.delayline", "--a", "da", "--b", "db"]
        cmd += ["--delay-ms", str(delay_ms), "--pid-file", str(pid_file), *(extra or [])]
        proc = self.popen(self.ns_d, cmd, log)
        deadline = time.monotonic() + 10
        while not pid_file.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop(proc)
                raise RuntimeError(f"delay line did not start:\n{log.read_text()[-800:]}")
            time.sleep(0.02)
        return proc

    def __enter__(self) -> DelayChain:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()


def exit_counts(log: Path) -> dict[str, Any]:
    """The delay line's exit counts (its last JSON line)."""
    for line in reversed(log.read_text(errors="replace").splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    raise ValueError(f"no exit counts in {log}")


def ping_rtts_ms(out: str) -> list[float]:
    """Per-reply RTTs from `ping -n` output."""
    return [float(w.split("=")[1]) for w in out.split() if w.startswith("time=")]
