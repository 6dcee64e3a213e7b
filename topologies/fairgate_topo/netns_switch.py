"""One BMv2 switch whose ports lead into a network namespace we create.

For benchmarks and controller integration tests that need a real switch but
not a whole Mininet: port i of the switch is the root-namespace end
``<tag>s<i>`` of a veth pair whose other end ``<tag>h<i>`` lives in the
namespace ``<tag>``. The switch's gRPC and Thrift servers are on loopback in
the root namespace (where the controller runs); packets are sent and received
inside the namespace (``run_in_ns``). Everything is removed on exit: the switch
by its PID, the veths and the namespace by their names, which this class owns.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from fairgate_topo.bmv2 import OFFLOADS, free_tcp_ports, isolation_sysctls, wait_for_port
from fairgate_topo.switch_cli import run_switch_cli


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class NetnsSwitch:
    log_dir: Path
    ports: int = 2
    switch_bin: str = field(default_factory=lambda: os.environ.get("SWITCH", "simple_switch_grpc"))
    device_id: int = 0
    tag: str = field(default_factory=lambda: f"fg{os.getpid() % 100000}")
    grpc_port: int = 0  # 0: two distinct free ports are picked together
    thrift_port: int = 0
    start_timeout_s: float = 15.0
    cpus: str | None = None  # e.g. "1": pin the switch with taskset (benchmarks)
    proc: subprocess.Popen[bytes] | None = None
    _created: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.grpc_port or not self.thrift_port:
            taken = {self.grpc_port, self.thrift_port}
            free = [p for p in free_tcp_ports(3) if p not in taken]
            self.grpc_port = self.grpc_port or free.pop(0)
            self.thrift_port = self.thrift_port or free.pop(0)

    @property
    def namespace(self) -> str:
        return self.tag

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def switch_intf(self, port: int) -> str:
        return f"{self.tag}s{port}"

    def host_intf(self, port: int) -> str:
        return f"{self.tag}h{port}"

    def __enter__(self) -> NetnsSwitch:
        if os.geteuid() != 0:
            raise PermissionError("NetnsSwitch needs root (namespaces and veths)")
        if shutil.which(self.switch_bin) is None:
            raise FileNotFoundError(f"{self.switch_bin} not found: install p4lang's BMv2")
        try:
            self._setup()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, v: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _setup(self) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        _ip("netns", "add", self.namespace)
        self._created.append("netns")
        self.run_in_ns(["ip", "link", "set", "lo", "up"])
        self.run_in_ns(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"])
        offloads = [w for o in OFFLOADS for w in (o, "off")]
        for i in range(1, self.ports + 1):
            sw, host = self.switch_intf(i), self.host_intf(i)
            _ip("link", "add", sw, "type", "veth", "peer", "name", host)
            self._created.append(sw)
            _ip("link", "set", host, "netns", self.namespace)
            _ip("link", "set", sw, "up")
            subprocess.run(["sysctl", "-qw", *isolation_sysctls(sw)], check=False)
            self.run_in_ns(["ip", "link", "set", host, "up"])
            subprocess.run(["ethtool", "-K", sw, *offloads], capture_output=True, check=False)
            self.run_in_ns(["ethtool", "-K", host, *offloads], check=False)
        self.start_switch()

    def start_switch(self) -> None:
        cmd = [
            self.switch_bin,
            "--no-p4",
            "--device-id",
            str(self.device_id),
            "--thrift-port",
            str(self.thrift_port),
        ]
        for i in range(1, self.ports + 1):
            cmd += ["-i", f"{i}@{self.switch_intf(i)}"]
        cmd += ["--", "--grpc-server-addr", self.grpc_address, "--cpu-port", "255"]
        if self.cpus is not None:
            cmd = ["taskset", "-c", self.cpus, *cmd]
        log = open(self.log_dir / "switch.log", "ab")  # noqa: SIM115 - owned by the child
        self.proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        (self.log_dir / "switch.pid").write_text(f"{self.proc.pid}\n")
        wait_for_port(self.grpc_port, self.proc.pid, self.start_timeout_s)

    def run_in_ns(
        self, cmd: list[str], check: bool = True, **kw: object
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["ip", "netns", "exec", self.namespace, *cmd],
            check=check,
            capture_output=True,
            text=True,
            **kw,
        )  # type: ignore[arg-type]

    def rx_packets(self, port: int) -> int:
        """Packets received by the namespace end of `port` (what the switch sent)."""
        out = self.run_in_ns(
            ["cat", f"/sys/class/net/{self.host_intf(port)}/statistics/rx_packets"]
        )
        return int(out.stdout)

    def switch_cli(self, commands: list[str]) -> str:
        return run_switch_cli(self.thrift_port, commands)

    def stop_switch(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None

    def restart_switch(self) -> None:
        """Kill the switch and start it again: pipeline and state are lost, as
        on a real switch restart; the ports stay."""
        self.stop_switch()
        self.start_switch()

    def close(self) -> None:
        self.stop_switch()
        for item in reversed(self._created):
            if item == "netns":
                subprocess.run(["ip", "netns", "del", self.namespace], capture_output=True)
            else:
                subprocess.run(["ip", "link", "del", item], capture_output=True)
        self._created.clear()
