"""What a BMv2 lab run needs besides the network: the run context (network, processes,
the controller), JSONL logs of the host agents, and the SYN gates' static meters.
Used by the experiment engine (``fairgate_exp.engines.bmv2``) and the interactive lab."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_hosts.agentio import JsonlTail
from fairgate_topo.labnet import LabNet, LabTopology
from fairgate_topo.procs import ProcessGroup, Tracked

PY = sys.executable

# Host settings for TCP generators: backlogs and port range for thousands of short flows.
# The hosts' TCP is the one the simulator models (fairgate_sim.tcp) and the papers used:
# Reno congestion control (this kernel's default is BBR, which paces and hardly backs off
# on loss) and SYN retransmissions with exponential back-off (kernels >= 6.5 retry the
# first tcp_syn_linear_timeouts = 4 SYNs every 1 s and give up after 4 s with 3 retries:
# three times the SYN load on a gated queue; older kernels lack the key and ignore it).
# All per network namespace.
SYSCTLS = {
    "net.core.somaxconn": "4096",
    "net.ipv4.tcp_max_syn_backlog": "4096",
    "net.ipv4.ip_local_port_range": "1024 65535",
    "net.ipv4.tcp_tw_reuse": "1",
    "net.ipv4.tcp_syn_retries": "3",
    "net.ipv4.tcp_syn_linear_timeouts": "0",
    "net.ipv4.tcp_congestion_control": "reno",
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The complete records of a JSONL log ([] if it does not exist)."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a stop
    return out


@dataclass
class LabContext:
    """One run with one algorithm: the network, its processes, where logs go."""

    name: str
    algo: str
    run_dir: Path
    net: LabNet
    procs: ProcessGroup
    say: Callable[[str], None] = print
    records_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.records_path = self.run_dir / "controller.jsonl"

    @property
    def topology(self) -> LabTopology:
        return self.net.topology

    def start_controller(
        self, algo: str, extra: list[str] | None = None, timeout_s: float = 30.0
    ) -> Tracked:
        """The controller in the root namespace; returns once it has written a
        record for every switch (pipeline pushed, routes in, first period)."""
        cmd = [PY, "-m", "fairgate_controller", "--topo", str(self.net.topo_path)]
        cmd += ["--algo", algo, "--records", str(self.records_path), "--no-live"]
        cmd += extra or []
        tracked = self.procs.start("controller", cmd)
        deadline = time.monotonic() + timeout_s
        seen: set[str] = set()
        tail = JsonlTail(self.records_path)
        while time.monotonic() < deadline:
            if tracked.proc.poll() is not None:
                log = (self.procs.log_dir / "controller.out").read_text(errors="replace")
                raise RuntimeError(f"controller exited:\n{log[-1500:]}")
            seen |= {r["switch"] for r in tail.new()}
            if seen >= set(self.topology.switches):
                return tracked
            time.sleep(0.1)
        raise RuntimeError(f"controller not ready after {timeout_s:.0f} s (saw {sorted(seen)})")

    def log_path(self, name: str) -> Path:
        path = self.run_dir / "hosts" / f"{name}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        return path
