"""A Mininet switch node that runs BMv2's simple_switch_grpc.

Each instance is given its device id, gRPC and Thrift ports explicitly (no
class-level counters), starts the switch with --no-p4 (the controller pushes
the pipeline over P4Runtime), writes its PID to a file, logs to its own file,
waits until gRPC answers, and is stopped by that PID only.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from mininet.node import Switch

OFFLOADS = ("tx", "rx", "tso", "gso", "gro")


def free_tcp_ports(n: int) -> list[int]:
    """``n`` distinct TCP ports free on loopback right now.

    All ``n`` sockets stay bound until every port is known: the kernel can hand the
    port of a socket just closed to the next bind to port 0, so picking ports one
    at a time once gave a switch the same port for gRPC and Thrift (its Thrift
    server then failed to bind and the switch never came up)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_for_port(port: int, pid: int, timeout_s: float, host: str = "127.0.0.1") -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise RuntimeError(f"switch process {pid} exited during start-up") from None
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing answers on {host}:{port} after {timeout_s:.0f} s")


def offloads_off(run: Any, intf: str) -> None:
    """BMv2 silently loses bursts on veths with offloads on: turn them off."""
    run(f"ethtool -K {intf} {' '.join(f'{o} off' for o in OFFLOADS)} >/dev/null 2>&1")


def isolation_sysctls(intf: str) -> list[str]:
    """Sysctls that keep the root namespace's own IP stack deaf on a switch port.

    BMv2 cannot bind its Thrift server to loopback (simple_switch_grpc 1.15.5
    has ``--thrift-port`` only and listens on every address, IPv4 and IPv6).
    The switch's interfaces live in the root namespace, whose kernel also sees
    every frame a lab host sends: a host that routes an address of the root
    namespace (e.g. eth0's) onto its link, or uses the interface's IPv6
    link-local address, would reach Thrift and the controller's ports. BMv2
    reads the interfaces with raw sockets, so the kernel needs none of this:
    no IPv6 on them, no ARP answers, and strict reverse-path filtering (no
    route leads back out of a switch port, so every IPv4 packet a host sends
    to the root namespace is dropped). docs/reliability.md has the threat model.
    """
    return [
        f"net.ipv6.conf.{intf}.disable_ipv6=1",
        f"net.ipv4.conf.{intf}.rp_filter=1",
        f"net.ipv4.conf.{intf}.arp_ignore=8",
        f"net.ipv4.conf.{intf}.accept_local=0",
        f"net.ipv4.conf.{intf}.route_localnet=0",
    ]


def isolate_intf(run: Any, intf: str) -> None:
    """Apply ``isolation_sysctls`` (a switch port: the root namespace's end)."""
    run(f"sysctl -qw {' '.join(isolation_sysctls(intf))}")


def isolation_ruleset(table: str, intfs: list[str]) -> str:
    """An nftables netdev table that drops every frame entering the root
    namespace's stack from `intfs`. The netdev ingress hook runs after the
    packet taps (BMv2's capture sockets still get every frame) and before
    ARP, IPv4 and IPv6: the kernel never answers a lab host on a switch port,
    whatever routes either side has."""
    chains = "".join(
        f"  chain in_{re.sub(r'[^A-Za-z0-9_]', '_', intf)} {{\n"
        f'    type filter hook ingress device "{intf}" priority 0; policy drop;\n'
        "  }\n"
        for intf in intfs
    )
    return f"table netdev {table} {{\n{chains}}}\n"


def nft_path() -> str:
    path = shutil.which("nft")
    if path is None:
        raise RuntimeError(
            "nft not found: make deps installs nftables (it keeps lab hosts away from the "
            "switches' management ports, docs/reliability.md)"
        )
    return path


def isolate_ports(table: str, intfs: list[str]) -> None:
    """(Re)create `table` for `intfs` (an existing table of that name is replaced)."""
    script = f"table netdev {table}\ndelete table netdev {table}\n"
    script += isolation_ruleset(table, intfs)
    proc = subprocess.run(
        [nft_path(), "-f", "-"], input=script, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"nft could not isolate {', '.join(intfs)}: {proc.stderr.strip()}")


def release_ports(table: str) -> None:
    nft = shutil.which("nft")
    if nft is not None:
        subprocess.run([nft, "delete", "table", "netdev", table], capture_output=True, check=False)


class Bmv2Switch(Switch):
    """simple_switch_grpc as a Mininet switch."""

    def __init__(
        self,
        name: str,
        device_id: int,
        grpc_port: int,
        thrift_port: int,
        log_dir: str | Path,
        sw_path: str = "simple_switch_grpc",
        start_timeout_s: float = 15.0,
        **params: Any,
    ) -> None:
        super().__init__(name, **params)
        if shutil.which(sw_path) is None:
            raise RuntimeError(f"{sw_path} not found: install p4lang's BMv2 (README)")
        self.device_id = device_id
        self.grpc_port = grpc_port
        self.thrift_port = thrift_port
        self.sw_path = sw_path
        self.start_timeout_s = start_timeout_s
        self.log_dir = Path(log_dir)
        self.log_path = self.log_dir / f"{name}.log"
        self.pid_path = self.log_dir / f"{name}.pid"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def grpc_address(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    def command(self) -> list[str]:
        cmd = [
            self.sw_path,
            "--no-p4",
            "--device-id",
            str(self.device_id),
            "--thrift-port",
            str(self.thrift_port),
        ]
        for port, intf in sorted(self.intfs.items()):
            if port > 0 and intf.name != "lo":
                cmd += ["-i", f"{port}@{intf.name}"]
        cmd += ["--", "--grpc-server-addr", self.grpc_address, "--cpu-port", "255"]
        return cmd

    @property
    def nft_table(self) -> str:
        return f"fairgate_{re.sub(r'[^A-Za-z0-9_]', '_', self.name)}"

    def ports_intfs(self) -> list[str]:
        return [i.name for p, i in sorted(self.intfs.items()) if p > 0 and i.name != "lo"]

    def start(self, controllers: list[Any]) -> None:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        for name in self.ports_intfs():
            offloads_off(self.cmd, name)
            isolate_intf(self.cmd, name)
        if self.ports_intfs():
            isolate_ports(self.nft_table, self.ports_intfs())
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
        self.pid_path.write_text(f"{self.proc.pid}\n")
        try:
            wait_for_port(self.grpc_port, self.proc.pid, self.start_timeout_s)
        except RuntimeError as exc:
            tail = self.log_path.read_text(errors="replace")[-500:]
            self.stop_process()
            raise RuntimeError(f"{self.name}: {exc}; log {self.log_path}:\n{tail}") from None

    def stop_process(self, timeout_s: float = 5.0) -> None:
        """Stop our switch by its PID (never by name)."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout_s)
        self.proc = None
        self.pid_path.unlink(missing_ok=True)

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_process()
        release_ports(self.nft_table)
        super().stop(deleteIntfs)

    def restart(self) -> None:
        """Kill and start again (a switch restart: pipeline and state are lost)."""
        self.stop_process()
        self.start([])
