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


def netns_unavailable_reason() -> str | None:
    """None when namespaces can be made here, else a one-line reason."""
    if os.geteuid() != 0:
        return "needs root (network namespaces)"
    if shutil.which("ip") is None:
        return "needs the `ip` command (iproute2)"
    return None


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


@dataclass
class VethPair:
    """Namespaces ``<prefix>-a`` (``10.77.0.1``) and ``<prefix>-b`` (``10.77.0.2``)."""

    prefix: str = field(default_factory=lambda: f"fgh-{os.getpid()}")
    addr_a: str = "10.77.0.1"
    addr_b: str = "10.77.0.2"
    created: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def ns_a(self) -> str:
        return f"{self.prefix}-a"

    @property
    def ns_b(self) -> str:
        return f"{self.prefix}-b"

    def up(self) -> VethPair:
        try:
            for ns in (self.ns_a, self.ns_b):
                _run("ip", "netns", "add", ns)
                self.created.append(ns)
                _run("ip", "-n", ns, "link", "set", "lo", "up")
            _run(
                "ip",
                "-n",
                self.ns_a,
                "link",
                "add",
                "veth0",
                "type",
                "veth",
                "peer",
                "name",
                "veth1",
                "netns",
                self.ns_b,
            )
            for ns, dev, addr in (
                (self.ns_a, "veth0", self.addr_a),
                (self.ns_b, "veth1", self.addr_b),
            ):
                _run("ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
                _run("ip", "-n", ns, "link", "set", dev, "up")
                if shutil.which("ethtool"):
                    subprocess.run(
                        [
                            "ip",
                            "netns",
                            "exec",
                            ns,
                            "ethtool",
                            "-K",
                            dev,
                            *[x for o in OFFLOADS for x in (o, "off")],
                        ],
                        capture_output=True,
                        check=False,
                    )
        except BaseException:
            self.down()
            raise
        return self

    def popen(
        self, ns: str, args: list[str], log: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``python -m <args>`` inside namespace ``ns``."""
        out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
        proc = subprocess.Popen(
            ["ip", "netns", "exec", ns, sys.executable, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.procs.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 5.0) -> int:
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

    def __enter__(self) -> VethPair:
        return self.up()

    def __exit__(self, *exc: object) -> None:
        self.down()
