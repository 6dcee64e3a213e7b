"""What the CLI runs: a lab scenario at one scale (``SimLab``), and the UDP flow runs
the newer lab scenarios need beyond ``runner.start_udp``: an RTT per receiver (the
labs' ack delay) or per path (link delays), the senders' own logs (windows, losses)
and per-peer receive rates for flows that are not plain senders (CM flows).

The per-peer series are what the labs' receiver agents log: packets received from
one sender ``ip:port`` per 0.2 s interval, from its first packet until it has been
silent for a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import SenderConfig
from fairgate_sim.control import MemoryRecorder, SimController
from fairgate_sim.network import Network
from fairgate_sim.probe import QueueProbe
from fairgate_sim.runner import SENDER_MODE, Flow, RunConfig, port_series
from fairgate_sim.topo import NetSpec
from fairgate_sim.udp import UdpReceiver, UdpSender

__all__ = ["FlowLab", "FlowRun", "QueueProbe", "SimLab", "start_flows"]

SAMPLE_S = 0.2  # the labs' receiver log interval
IDLE_SAMPLES = 5  # a peer silent this many samples is no longer logged

RunFn = Callable[[str, int, Path | None], tuple[dict[str, Any], Network]]


@dataclass
class SimLab:
    """One scenario at one scale: the lab's ``Scenario`` object (summarize, plot,
    scaling), how long it runs, and ``run(algo, seed, records)`` returning the
    lab's per-run result and the simulated network."""

    sc: Any
    end_s: float
    note: dict[str, Any]
    run: RunFn
    rtt_emulation: str = "ack-delay"
    smoke: bool = False  # the lab's seconds-long variant


@dataclass(frozen=True)
class FlowLab:
    """Scheduled sender flows over ``spec``; receivers hold acks ``ack_delay_s[host]``."""

    spec: NetSpec
    flows: list[Flow]
    ack_delay_s: dict[str, float]
    end_s: float
    q_ref_pkts: float = 10.0
    packet_bytes: int = 1200
    factor: float = 1.0  # simulated pkt/s per reported unit
    receivers: tuple[str, ...] = ()  # receiver agents without a sender flow (CM)
    exact_queue: bool = False  # report the exact queue instead of the histogram's


@dataclass
class PeerSampler:
    """Per-peer receive rates at every receiver agent, sampled every ``every_s``."""

    net: Network
    receivers: dict[str, UdpReceiver]
    factor: float = 1.0
    every_s: float = SAMPLE_S
    series: dict[str, list[list[float]]] = field(default_factory=dict)
    _last: dict[str, tuple[int, int]] = field(default_factory=dict)  # packets, idle samples

    def start(self) -> None:
        self.net.clock.after(self.every_s, self._sample)

    def _sample(self) -> None:
        now = round(self.net.clock.now, 3)
        for rx in self.receivers.values():
            for peer, stats in rx.core.flows.items():
                key = f"{peer[0]}:{peer[1]}"  # type: ignore[index]
                last = self._last.get(key)
                n = stats.packets
                if last is None:
                    self._last[key] = (n, 0)
                    continue
                idle = last[1] + 1 if n == last[0] else 0
                self._last[key] = (n, idle)
                if idle < IDLE_SAMPLES:
                    rate = (n - last[0]) / self.every_s / self.factor
                    self.series.setdefault(key, []).append([now, round(rate, 2)])
        self.net.clock.after(self.every_s, self._sample)

    def of(self, host_ip: str, sport: int) -> list[list[float]]:
        return self.series.get(f"{host_ip}:{sport}", [])


@dataclass
class FlowRun:
    net: Network
    controller: SimController
    senders: dict[str, UdpSender]
    receivers: dict[str, UdpReceiver]
    peers: PeerSampler
    queues: QueueProbe | None = None

    def port_series(self, switch: str, port: int) -> dict[str, Any]:
        """The labs' port columns; with an exact-queue probe on the port, ``queue_pkts``
        is the exact mean queue per control period (``queue_pkts_histogram`` keeps the
        controller's)."""
        cols = port_series(self.records, switch, port)
        if self.queues is not None and (switch, port) in self.queues.samples:
            rs = [r for r in self.records if r["switch"] == switch and r["port"] == port]
            cols["queue_pkts_histogram"] = cols["queue_pkts"]
            cols["queue_pkts"] = self.queues.period_means(
                (switch, port), [r["t"] for r in rs], [r["period_s"] for r in rs]
            )
        return cols

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.controller.recorder.records

    def flow_series(self, name: str) -> list[list[float]]:
        tx = self.senders[name]
        return self.peers.of(tx.host.ip, tx.sport)

    def window_series(self, name: str) -> list[list[float]]:
        """[t_s, cwnd] from the sender's own 0.2 s log samples."""
        tx = self.senders[name]
        return [
            [round(tx.start_s + r["t_us"] / 1e6, 3), float(r["cwnd"])]
            for r in tx.log
            if r.get("type") == "sample"
        ]

    def losses(self, names: list[str]) -> int:
        """Packets the senders found lost (gaps and timeouts), as the labs count them."""
        return sum(max((r.get("losses", 0) for r in self.senders[n].log), default=0) for n in names)


def start_flows(
    lab: FlowLab,
    algo: str,
    seed: int,
    records: Path | None = None,
    watch: list[tuple[str, int]] | None = None,
) -> FlowRun:
    """Starts the flows; with ``lab.exact_queue`` the ``watch`` ports' queues are probed."""
    cfg = RunConfig(algo=algo, seed=seed, q_ref_pkts=lab.q_ref_pkts, records=records)  # type: ignore[arg-type]
    net = Network(lab.spec)
    ctl = SimController(net, cfg.control(), MemoryRecorder(cfg.records))
    receivers: dict[str, UdpReceiver] = {}
    for host in [*lab.receivers, *(f.dst for f in lab.flows)]:
        if host not in receivers:
            delay = round(lab.ack_delay_s.get(host, 0.0) * 1e6)
            receivers[host] = UdpReceiver(net.clock, net.hosts[host], ReceiverCore(delay))
    senders: dict[str, UdpSender] = {}
    for f in lab.flows:
        scfg = SenderConfig(
            mode=SENDER_MODE[algo],  # type: ignore[index]
            packet_bytes=lab.packet_bytes,
            duration_us=round((f.stop_s - f.start_s) * 1e6),
            initial_rate_kbps=cfg.initial_rate_kbps,
            give_up_us=30_000_000,
            log_interval_us=round(SAMPLE_S * 1e6),
        )
        senders[f.name] = UdpSender(
            net.clock, net.hosts[f.src], net.ip(f.dst), scfg, f.name, f.start_s, keep_log=True
        )
    peers = PeerSampler(net, receivers, lab.factor)
    peers.start()
    probe = None
    if lab.exact_queue and watch:
        probe = QueueProbe(net, list(watch))
        probe.start()
    return FlowRun(net, ctl, senders, receivers, peers, probe)
