"""Two network namespaces joined by a veth pair, for tests and benchmarks (needs root).

Only what this object created is ever deleted, and only processes it started are stopped
(by PID). All traffic stays inside the two namespaces.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

OFFLOADS = ("tx", "rx", "tso", "gso", "gro")
OFFLOAD_OFF_ARGS = tuple(x for o in OFFLOADS for x in (o, "off"))


def netns_unavailable_reason() -> str | None:
    """None when namespaces can be made here, else a one-line reason."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs the `ip` command (iproute2)"
    return None


def run_ip(*cmd: str) -> None:
    """Run a set-up command; a failure raises with its output."""
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@dataclass
class NetnsGroup:
    """The namespaces and processes one test or benchmark created: ``down()``
    deletes exactly those namespaces and stops exactly those processes (by PID)."""

    created: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def add_namespace(self, ns: str) -> None:
        run_ip("ip", "netns", "add", ns)
        self.created.append(ns)
        run_ip("ip", "-n", ns, "link", "set", "lo", "up")

    def offloads_off(self, ns: str, dev: str, check: bool = True) -> None:
        """tx/rx checksum, TSO, GSO, GRO off: frames stay within the MTU and carry
        full checksums."""
        cmd = ["ip", "netns", "exec", ns, "ethtool", "-K", dev, *OFFLOAD_OFF_ARGS]
        subprocess.run(cmd, capture_output=True, text=True, check=check)

    def spawn(
        self, ns: str, cmd: list[str], log: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """``ip netns exec ns <cmd>``, output to ``log``; stopped by ``down()``."""
        out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, *cmd], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
        """SIGTERM (then SIGKILL) to a process we started, by PID."""
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        return proc.returncode

    def down(self) -> None:
        for proc in self.procs:
            self.stop(proc, timeout=2.0)
        self.procs.clear()
        for ns in reversed(self.created):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)
        self.created.clear()


@dataclass
class VethPair(NetnsGroup):
    """Namespaces ``<prefix>-a`` (``10.77.0.1``) and ``<prefix>-b`` (``10.77.0.2``)."""

    prefix: str = field(default_factory=lambda: f"fgh-{os.getpid()}")
    addr_a: str = "10.77.0.1"
    addr_b: str = "10.77.0.2"

    @property
    def ns_a(self) -> str:
        return f"{self.prefix}-a"

    @property
    def ns_b(self) -> str:
        return f"{self.prefix}-b"

    def up(self) -> VethPair:
        try:
            for ns in (self.ns_a, self.ns_b):
                self.add_namespace(ns)
            run_ip(
                "ip", "-n", self.ns_a, "link", "add", "veth0", "type", "veth",
                "peer", "name", "veth1", "netns", self.ns_b,
            )  # fmt: skip
            for ns, dev, addr in (
                (self.ns_a, "veth0", self.addr_a),
                (self.ns_b, "veth1", self.addr_b),
            ):
                run_ip("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
                run_ip("ip", "-n", ns, "link", "set", dev, "up")
                if shutil.which("ethtool"):
                    self.offloads_off(ns, dev, check=False)
        except BaseException:
            self.down()
            raise
        return self

    def popen(
        self, ns: str, args: list[str], log: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``python -m <args>`` inside namespace ``ns``."""
        return self.spawn(ns, [sys.executable, *args], log, env)

    def __enter__(self) -> VethPair:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()
