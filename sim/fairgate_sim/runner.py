"""Runs scheduled UDP flows of the host agents over a simulated network with the
controller, and returns what a lab run returns: per-flow rate series (from the
receivers, 0.2 s intervals) and the controller's per-port records."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_controller.agent import Algo, ControlConfig
from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import Mode, SenderConfig
from fairgate_sim.control import MemoryRecorder, SimController
from fairgate_sim.network import Network
from fairgate_sim.topo import NetSpec
from fairgate_sim.udp import UdpReceiver, UdpSender

#: The sender mode each algorithm's hosts use (as the labs: RCP hosts are QFCP hosts).
SENDER_MODE = {"qfcp": Mode.QFCP, "rcp": Mode.QFCP, "lestas": Mode.LESTAS, "none": Mode.QFCP}


@dataclass(frozen=True)
class Flow:
    """Flow ``name`` from host ``src`` to host ``dst``, sending from ``start_s`` to ``stop_s``."""

    name: str
    src: str
    dst: str
    start_s: float
    stop_s: float


@dataclass(frozen=True)
class RunConfig:
    algo: Algo = "qfcp"
    ack_delay_s: float = 0.0  # receivers hold acks (the labs' RTT emulation)
    period_s: float | None = None  # None: every port follows its carried RTT (the labs' "auto")
    period_min_s: float = 0.001
    period_max_s: float = 1.0
    q_ref_pkts: float = 10.0
    packet_bytes: int = 1200
    initial_rate_kbps: int = 400  # the labs' senders
    sample_s: float = 0.2
    seed: int = 1
    start_jitter_s: float = 0.0  # each flow starts up to this much late (seeded)
    records: Path | None = None

    def control(self) -> ControlConfig:
        return ControlConfig(
            algo=self.algo,
            period_s=self.period_s,
            period_min_s=self.period_min_s,
            period_max_s=self.period_max_s,
            q_ref_pkts=self.q_ref_pkts,
        )


@dataclass
class UdpRun:
    net: Network
    controller: SimController
    senders: dict[str, UdpSender] = field(default_factory=dict)
    receivers: dict[str, UdpReceiver] = field(default_factory=dict)
    series: dict[str, list[list[float]]] = field(default_factory=dict)
    _last: dict[str, int] = field(default_factory=dict)


def start_udp(spec: NetSpec, flows: list[Flow], cfg: RunConfig) -> UdpRun:
    net = Network(spec)
    ctl = SimController(net, cfg.control(), MemoryRecorder(cfg.records))
    run = UdpRun(net, ctl)
    rng = random.Random(cfg.seed)
    mode = SENDER_MODE[cfg.algo]
    for f in flows:
        if f.dst not in run.receivers:
            core = ReceiverCore(ack_delay_us=round(cfg.ack_delay_s * 1e6))
            run.receivers[f.dst] = UdpReceiver(net.clock, net.hosts[f.dst], core)
        start = f.start_s + rng.uniform(0.0, cfg.start_jitter_s)
        scfg = SenderConfig(
            mode=mode,
            packet_bytes=cfg.packet_bytes,
            duration_us=round((f.stop_s - start) * 1e6),
            initial_rate_kbps=cfg.initial_rate_kbps,
            give_up_us=30_000_000,
        )
        run.senders[f.name] = UdpSender(
            net.clock, net.hosts[f.src], net.ip(f.dst), scfg, f.name, start
        )
        run.series[f.name] = []
    net.clock.at(cfg.sample_s, _sample, run, flows, cfg.sample_s)
    return run


def _sample(run: UdpRun, flows: list[Flow], every: float) -> None:
    now = run.net.clock.now
    for f in flows:
        tx = run.senders[f.name]
        rx = run.receivers[f.dst]
        n = rx.packets_from(run.net.ip(f.src), tx.sport)
        last = run._last.get(f.name)
        if last is not None and n >= last and (n > 0 or last > 0):
            run.series[f.name].append([round(now, 3), round((n - last) / every, 2)])
        run._last[f.name] = n
    run.net.clock.after(every, _sample, run, flows, every)


def port_series(records: list[dict[str, Any]], switch: str, port: int) -> dict[str, Any]:
    """Controller records of one port as the labs' columns (t, util, y_util, queue_pkts,
    drops, rate_kbps)."""
    rs = [r for r in records if r["switch"] == switch and r["port"] == port]

    def frame(r: dict[str, Any]) -> float:
        pkts, period = r.get("departure_pkts") or 0, r.get("period_s") or 0
        return r["departure_Bps"] * period / pkts if pkts and period else 1242.0

    return {
        "t": [round(r["t"], 3) for r in rs],
        "util": [r["departure_Bps"] / r["capacity_Bps"] for r in rs],
        "y_util": [r["y_Bps"] / r["capacity_Bps"] for r in rs],
        "queue_pkts": [r["queue_mean_bytes"] / max(1.0, frame(r)) for r in rs],
        "drops": [r["drop_pkts"] for r in rs],
        "rate_kbps": [r.get("rate_kbps") for r in rs],
    }


def window_mean(series: list[list[float]], t_from: float, t_to: float) -> float:
    vals = [v for t, v in series if t_from <= t < t_to]
    return sum(vals) / len(vals) if vals else 0.0
