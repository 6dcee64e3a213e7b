"""What every scenario uses: the run context (network, processes, controller,
progress) and helpers to run scheduled UDP flows of the host agents."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabNet, LabTopology
from fairgate_topo.procs import ProcessGroup, Tracked

PY = sys.executable
SENDER_MODE = {"qfcp": "qfcp", "rcp": "qfcp", "lestas": "lestas"}
RTT_EMULATION = "ack-delay"  # the kernels here have no netem (DESIGN.md)
# Control period: the mean RTT carried by packets, within 40-200 ms.
LAB_PERIOD = ["--period", "auto", "--period-min", "0.04", "--period-max", "0.2"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
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
class JsonlTail:
    """Reads the complete lines appended to a JSONL file since the last call."""

    path: Path
    offset: int = 0

    def new(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self.offset += end
        out = []
        for line in data[:end].splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out


@dataclass
class LabContext:
    """One run of one scenario with one algorithm."""

    name: str
    algo: str
    smoke: bool
    run_dir: Path
    net: LabNet
    procs: ProcessGroup
    say: Callable[[str], None] = print
    t0: float = 0.0  # wall clock of the schedule's time 0
    records_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.records_path = self.run_dir / "controller.jsonl"

    @property
    def topology(self) -> LabTopology:
        return self.net.topology

    def host(self, name: str) -> Any:
        return self.net.host(name)

    def ip(self, host: str) -> str:
        return self.topology.hosts[host].ip

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


@dataclass(frozen=True)
class UdpFlow:
    """Flow `name` from host `src` to host `dst`, sending from `start_s` to `stop_s`."""

    name: str
    src: str
    dst: str
    start_s: float
    stop_s: float


def start_receivers(ctx: LabContext, ack_delay_ms: dict[str, float]) -> None:
    for host, delay in ack_delay_ms.items():
        cmd = [PY, "-m", "fairgate_hosts.receiver", "--ack-delay-ms", str(delay)]
        cmd += ["--log", str(ctx.log_path(f"rx-{host}")), "--log-interval", "0.2"]
        ctx.procs.start(f"rx-{host}", cmd, ctx.host(host))


def sender_cmd(ctx: LabContext, flow: UdpFlow, mode: str) -> list[str]:
    cmd = [PY, "-m", "fairgate_hosts.sender", "--dst", ctx.ip(flow.dst), "--mode", mode]
    cmd += ["--duration", f"{flow.stop_s - flow.start_s:.3f}", "--flow-id", flow.name]
    cmd += ["--log", str(ctx.log_path(f"tx-{flow.name}")), "--log-interval", "0.2"]
    cmd += ["--initial-rate", "400", "--spin-us", "100", "--give-up", "30"]
    return cmd


def run_udp_schedule(
    ctx: LabContext,
    flows: list[UdpFlow],
    mode: str,
    watch: list[tuple[str, int]],
    tick_s: float = 1.0,
) -> None:
    """Starts each flow at its time (senders stop themselves), printing progress
    every `tick_s`: the watched ports' input rate, queue and stamped rate."""
    pending = sorted(flows, key=lambda f: f.start_s)
    end = max(f.stop_s for f in flows) + 1.0
    tail = JsonlTail(ctx.records_path)
    tail.new()
    latest: dict[tuple[str, int], dict[str, Any]] = {}
    ctx.t0 = time.time()
    start = time.monotonic()
    next_tick = 0.0
    senders: list[Tracked] = []
    while True:
        now = time.monotonic() - start
        while pending and pending[0].start_s <= now:
            flow = pending.pop(0)
            senders.append(
                ctx.procs.start(f"tx-{flow.name}", sender_cmd(ctx, flow, mode), ctx.host(flow.src))
            )
        if now >= next_tick:
            for r in tail.new():
                latest[(r["switch"], r["port"])] = r
            parts = []
            for key in watch:
                r = latest.get(key)
                if r is not None:
                    rate = r.get("rate_kbps")
                    parts.append(
                        f"{key[0]}:{key[1]} util {r['departure_Bps'] / r['capacity_Bps']:4.0%}"
                        f" q {r['queue_mean_bytes'] / ctx.topology.frame_bytes:4.1f} pkt"
                        f" R {rate if rate is not None else '-'} kb/s"
                    )
            active = sum(1 for s in senders if s.proc.poll() is None)
            ctx.say(f"  t={now:5.1f}/{end:.0f} s  flows {active}  " + " | ".join(parts))
            next_tick += tick_s
        if now >= end and not pending:
            break
        time.sleep(0.05)


def rx_series(
    run_dir: Path, t0: float, key: Callable[[str], str] = lambda peer: peer
) -> dict[str, list[list[float]]]:
    """From the receivers' logs, [t_s, pkt/s] per logged interval, keyed by
    ``key(peer)`` where peer is the sender's ``ip:port``."""
    series: dict[str, list[list[float]]] = {}
    for path in sorted((run_dir / "hosts").glob("rx-*.jsonl")):
        recs = read_jsonl(path)
        agent = next((r for r in recs if r.get("type") == "agent"), None)
        if agent is None:
            continue
        base = agent["wall_time"] - t0
        last: dict[str, tuple[float, int]] = {}
        for r in recs:
            if r.get("type") != "rx":
                continue
            k = key(r["peer"])
            t = base + r["t_us"] / 1e6
            prev = last.get(k)
            if prev is not None and t > prev[0]:
                pps = (r["packets"] - prev[1]) / (t - prev[0])
                series.setdefault(k, []).append([round(t, 3), round(pps, 2)])
            last[k] = (t, r["packets"])
    return series


def flow_series(ctx_run_dir: Path, t0: float, frame_bytes: int) -> dict[str, list[list[float]]]:
    """Per sender host (flow source IP -> flow name is the caller's): from the
    receivers' logs, [t_s, pkt/s] per 0.2 s interval, keyed by peer IP."""
    return rx_series(ctx_run_dir, t0, key=lambda peer: peer.rsplit(":", 1)[0])


def port_series(records: list[dict[str, Any]], switch: str, port: int, t0: float) -> dict[str, Any]:
    """Controller records of one port as columns (t relative to t0)."""
    rs = [r for r in records if r["switch"] == switch and r["port"] == port]
    return {
        "t": [round(r["t"] - t0, 3) for r in rs],
        "util": [r["departure_Bps"] / r["capacity_Bps"] for r in rs],
        "y_util": [r["y_Bps"] / r["capacity_Bps"] for r in rs],
        "queue_pkts": [r["queue_mean_bytes"] / max(1, _frame(r)) for r in rs],
        "drops": [r["drop_pkts"] for r in rs],
        "rate_kbps": [r.get("rate_kbps") for r in rs],
    }


def _frame(r: dict[str, Any]) -> float:
    pkts = r.get("departure_pkts") or 0
    period = r.get("period_s") or 0
    if pkts and period:
        return r["departure_Bps"] * period / pkts
    return 1242.0


def jain(values: list[float]) -> float:
    if not values or not any(values):
        return 0.0
    return sum(values) ** 2 / (len(values) * sum(v * v for v in values))


def window_mean(series: list[list[float]], t_from: float, t_to: float) -> float:
    vals = [v for t, v in series if t_from <= t < t_to]
    return sum(vals) / len(vals) if vals else 0.0
