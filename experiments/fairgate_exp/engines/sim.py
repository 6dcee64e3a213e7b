"""The simulator engine: a ``Plan`` on ``fairgate_sim``'s network, switch, controller and
host-agent adapters. It imports nothing from ``fairgate_topo``."""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fairgate_controller.agent import ControlConfig
from fairgate_controller.ficcrd import FiccrdConfig
from fairgate_exp.engine import controller_algo
from fairgate_exp.plan import LINE_RATE_BPS, CmPlan, FlowPlan, Plan, TcpPlan
from fairgate_exp.traffic import SENDER_MODE, tcp_specs
from fairgate_hosts.apps.audio import AudioApp, LayeredAudio, audio_account
from fairgate_hosts.apps.bulk import BulkApp
from fairgate_hosts.cm.core import CMConfig
from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import RATE_UNLIMITED, Mode, SenderConfig
from fairgate_hosts.traffic.records import FlowRecord
from fairgate_hosts.traffic.workload import FlowSpec
from fairgate_sim.cmhost import MemoryLog, SimCMHost, TcpCmApp
from fairgate_sim.control import MemoryRecorder, SimController
from fairgate_sim.network import Network
from fairgate_sim.port import PortParams
from fairgate_sim.probe import QueueProbe
from fairgate_sim.tcp import TcpConfig, TcpServer
from fairgate_sim.tcp_cm import CmTcpFlow
from fairgate_sim.tcp_traffic import TcpClient
from fairgate_sim.topo import UPLINK_DEPTH, NetSpec
from fairgate_sim.udp import UdpReceiver, UdpSender


def port_params(pps: float | None, bps: float | None, depth: int, delay_s: float) -> PortParams:
    if pps is not None:
        return PortParams(rate_pps=pps, depth=depth, delay_s=delay_s)
    return PortParams(
        rate_Bps=(bps if bps is not None else LINE_RATE_BPS) / 8, depth=depth, delay_s=delay_s
    )


def control_config(plan: Plan, algo: str) -> ControlConfig:
    v = plan.variant
    session = v.session if v is not None else "off"
    fic = plan.file.ficcrd
    return ControlConfig(
        algo=controller_algo(algo),  # type: ignore[arg-type]
        ficcrd=FiccrdConfig(rd_interval=fic.rd_interval, core=fic.core)
        if algo == "ficcrd"
        else None,
        period_s=plan.period_s,
        period_min_s=plan.period_min_s,
        period_max_s=plan.period_max_s,
        q_ref_pkts=plan.q_ref_pkts,
        min_rate_kbps=plan.min_rate_kbps,
        session=session,  # type: ignore[arg-type]
        # a static gate: the controller keeps it and records its windows, as on BMv2
        admit_fps=v.admit_fps if v is not None and session == "off" else None,
        session_window_s=plan.session_window_s,
    )


def sender_config(plan: Plan, algo: str, flow: FlowPlan) -> SenderConfig:
    desired = RATE_UNLIMITED if flow.max_rate_bps is None else round(flow.max_rate_bps / 1000)
    return SenderConfig(
        mode=Mode(SENDER_MODE[controller_algo(algo)]),
        packet_bytes=plan.payload,
        duration_us=round((flow.stop_s - flow.start_s) * 1e6),
        desired_rate_kbps=desired,
        initial_rate_kbps=plan.initial_rate_kbps,
        min_rate_kbps=plan.min_rate_kbps,
        give_up_us=30_000_000,
        log_interval_us=200_000,
    )


def cm_flows(a: CmPlan, app: BulkApp | AudioApp | TcpCmApp) -> list[tuple[str, Any]]:
    """(recorded name, flow) of a CM app's open flows."""
    if isinstance(app, BulkApp | TcpCmApp):
        return [(f"{a.name}-{i}", f) for i, f in enumerate(app.flows)]
    out = [(f"{a.name}-audio", app.flow)] if app.flow is not None else []
    return out + [(f"{a.name}-{i}", f) for i, f in enumerate(app.bulk_flows)]


def cm_facts(app: BulkApp | AudioApp | TcpCmApp, host: SimCMHost) -> dict[str, Any]:
    """A CM app's counters at the end: the macroflow's losses, timeouts and agings (kept
    past its close), probes; for TCP/CM, grants used and unused and how often a Reno
    window would have stopped a segment the CM let out (TCP's cwnd never binds)."""
    out: dict[str, Any] = {"loss_events": host.loss_events(), "probes_sent": host.probes_sent}
    # probes riding on data, and the bytes the answered probes covered and found lost
    stats = host.stats()
    keys = ("probes_on_data", "probed_bytes", "probe_lost_bytes")
    out |= {k: stats[k] for k in keys if k in stats}
    out |= {k: v for k, v in host.aimd_counts.items()}
    if isinstance(app, TcpCmApp):
        fs = app.flows
        out |= {
            "grants": sum(f.grants for f in fs),
            "unused_grants": sum(f.unused_grants for f in fs),
            "segments_past_reno_cwnd": sum(f.cwnd_limited for f in fs),
            "fast_retransmits": sum(f.fast_retransmits for f in fs),
            "rto_timeouts": sum(f.timeouts for f in fs),
            "retransmits": sum(f.retransmits for f in fs),
        }
    if isinstance(app, AudioApp) and isinstance(app.log, MemoryLog):
        done = next((r for r in reversed(app.log.records) if r.get("type") == "done"), None)
        if done is not None:  # the audio's own account: bytes sent and time per layer
            out["audio"] = audio_account(done)
    return out


@dataclass
class SimEngine:
    name: str = "sim"
    net: Network | None = None
    ctl: SimController | None = None
    senders: dict[str, UdpSender] = field(default_factory=dict)
    receivers: dict[str, UdpReceiver] = field(default_factory=dict)
    samples: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    probe: QueueProbe | None = None
    clients: dict[str, TcpClient] = field(default_factory=dict)
    servers: dict[str, TcpServer] = field(default_factory=dict)
    cm_apps: dict[str, tuple[CmPlan, BulkApp | AudioApp | TcpCmApp, SimCMHost]] = field(
        default_factory=dict
    )
    cm_hosts: dict[tuple[str, str], SimCMHost] = field(default_factory=dict)  # (src, dst)
    traces: dict[str, list[tuple[float, int, int, float | None]]] = field(default_factory=dict)
    paced: dict[str, tuple[list[FlowSpec], dict[int, UdpSender], dict[int, FlowRecord]]] = field(
        default_factory=dict
    )
    _plan: Plan | None = None
    _algo: str = "qfcp"
    _wall0: float = 0.0
    # The dashboard's pause/step/pace gate (fairgate_exp.dashboard.gate.Gate); None: run free.
    gate: Any = None
    _flow_log: IO[str] | None = None
    retrans: dict[str, list[tuple[float, int]]] = field(default_factory=dict)

    def build(self, plan: Plan, algo: str, run_dir: Path) -> None:
        self._plan, self._algo = plan, algo
        ports = {k: port_params(p.pps, p.bps, p.depth, p.delay_s) for k, p in plan.ports.items()}
        uplinks = {
            h.name: PortParams(
                rate_Bps=(h.uplink_bps or LINE_RATE_BPS) / 8, depth=UPLINK_DEPTH, delay_s=h.delay_s
            )
            for h in plan.hosts.values()
        }
        spec = NetSpec(plan.topology(), ports, uplinks, plan.frame)
        self.net = Network(spec, host_jitter_s=plan.host_jitter_s, seed=plan.seed)
        records = run_dir / "controller.jsonl"
        records.parent.mkdir(parents=True, exist_ok=True)
        self.ctl = SimController(self.net, control_config(plan, algo), MemoryRecorder(records))
        for f in plan.flows:
            if f.dst not in self.receivers:
                core = ReceiverCore(round(plan.hosts[f.dst].ack_delay_s * 1e6))
                self.receivers[f.dst] = UdpReceiver(self.net.clock, self.net.hosts[f.dst], core)
            self.samples[f.name] = []
        if plan.exact_queue:  # measure.queue = "exact": sampled every 5 ms
            self.probe = QueueProbe(self.net, list(plan.measured))
            self.probe.start()
        # every sample as it is taken, for the dashboard (the driver reads flow_samples())
        self._flow_log = (run_dir / "flows.jsonl").open("a", buffering=1)
        self._wall0 = time.perf_counter()
        self.net.clock.after(plan.sample_s, self._sample)

    def _sample(self) -> None:
        assert self.net is not None and self._plan is not None
        now = round(self.net.clock.now, 4)
        for name, tx in self.senders.items():
            rx = self.receivers[next(f.dst for f in self._plan.flows if f.name == name)]
            n = rx.packets_from(tx.host.ip, tx.sport)
            self.samples[name].append((now, n))
            if self._flow_log is not None:
                self._flow_log.write(json.dumps({"t": now, "flow": name, "rx_pkts": n}) + "\n")
        for g in self._plan.tcp:
            client = self.clients.get(g.name)
            if not g.bulk or client is None:
                continue
            opened = {spec.index: flow for spec, flow in client.open.values()}
            for i, name in enumerate(g.flow_names()):
                flow = opened.get(i)
                if flow is None:
                    continue
                acked = min(flow.una, flow.nseg)
                self.samples.setdefault(name, []).append((now, acked))
                self.retrans.setdefault(name, []).append((now, flow.retransmits))
                self.traces.setdefault(name, []).append((now, acked, flow.retransmits, None))
                if self._flow_log is not None:
                    row = {"t": now, "flow": name, "rx_pkts": acked}
                    self._flow_log.write(json.dumps(row) + "\n")
        for a, app, host in self.cm_apps.values():
            rx = self.receivers[a.dst]
            losses = host.loss_events()
            for name, flow in cm_flows(a, app):
                if isinstance(flow, CmTcpFlow):
                    count = min(flow.una, flow.nseg)
                else:
                    count = rx.packets_from(host.host.ip, flow.sport)
                self.samples.setdefault(name, []).append((now, count))
                row = (now, count, losses, host.flow_rate_kbps(flow.fid))
                self.traces.setdefault(name, []).append(row)
                if self._flow_log is not None:
                    row = {"t": now, "flow": name, "rx_pkts": count}
                    self._flow_log.write(json.dumps(row) + "\n")
        self.net.clock.after(self._plan.sample_s, self._sample)

    def start_flow(self, flow: FlowPlan) -> None:
        assert self.net is not None and self._plan is not None
        cfg = sender_config(self._plan, self._algo, flow)
        self.senders[flow.name] = UdpSender(
            self.net.clock,
            self.net.hosts[flow.src],
            self.net.ip(flow.dst),
            cfg,
            flow.name,
            self.net.clock.now,
        )

    def start_tcp(self, gen: TcpPlan) -> None:
        assert self.net is not None and self._plan is not None
        if gen.paced(self._algo):
            self._start_paced(gen)
            return
        rwnd = {} if gen.rwnd is None else {"rwnd_bytes": gen.rwnd}
        if gen.dst not in self.servers:
            self.servers[gen.dst] = TcpServer(
                self.net.clock,
                self.net.hosts[gen.dst],
                hold_s=gen.hold_s,
                jitter_s=gen.jitter_s,
                rng=random.Random(f"{self._plan.seed}-server-{gen.dst}"),
                delayed_ack=self._plan.delayed_ack,
                **rwnd,
            )
        self.clients[gen.name] = TcpClient(
            self.net.clock,
            self.net.hosts[gen.src],
            self.net.ip(gen.dst),
            tcp_specs(gen, self._plan.seed),
            TcpConfig(
                mss=gen.mss,
                syn_retries=gen.syn_retries,
                jitter_s=gen.jitter_s,
                kernel_hz=gen.kernel_hz,
                **rwnd,
            ),
            max_open=gen.max_open,
            seed=f"{self._plan.seed}-client-{gen.name}",
        )

    def start_cm(self, a: CmPlan) -> None:
        """The hosts' CM app over the sans-IO ``CongestionManager`` on ``SimCMHost``
        (as ``fairgate_hosts.apps.bulk`` / ``.audio`` run it on BMv2)."""
        assert self.net is not None and self._plan is not None
        net, plan = self.net, self._plan
        if a.dst not in self.receivers:
            core = ReceiverCore(round(plan.hosts[a.dst].ack_delay_s * 1e6))
            self.receivers[a.dst] = UdpReceiver(net.clock, net.hosts[a.dst], core)
        mss = a.mss if a.app == "tcp" else plan.payload
        cfg = CMConfig(
            mss=mss,
            initial_rate_Bps=a.initial_rate_kbps * 125.0,
            max_rate_Bps=100_000.0 * 125.0,
            burst_bytes=2 * mss,
            probes_per_rtt=a.probes_per_rtt,
            aging=a.aging,
            probe_spread=a.probe_spread,
            seed=f"{plan.seed}-cm-{a.src}-{a.dst}",
        )
        # one CM per host: the apps of one src towards one dst share its macroflow
        host = self.cm_hosts.get((a.src, a.dst))
        if host is None or not host.runs:
            host = SimCMHost(dst=net.ip(a.dst), cfg=cfg, clock=net.clock, host=net.hosts[a.src])
            self.cm_hosts[(a.src, a.dst)] = host
        start_us, duration = round(a.start_s * 1e6), a.stop_s - a.start_s
        app: BulkApp | AudioApp | TcpCmApp
        if a.app == "bulk":
            joins = [i * a.stagger_s for i in range(a.flows)]
            app = BulkApp(MemoryLog(), list(a.weights), joins, 0.2, start_us=start_us)
            host.start(app, a.start_s, duration, 0.01)
        elif a.app == "tcp":
            if a.dst not in self.servers:
                self.servers[a.dst] = TcpServer(
                    net.clock,
                    net.hosts[a.dst],
                    hold_s=plan.hosts[a.dst].ack_delay_s,
                    delayed_ack=plan.delayed_ack,
                )
            tcp = TcpConfig(mss=a.mss)
            app = TcpCmApp(list(a.weights), a.size, tcp, a.stagger_s, start_us)
            host.start(app, a.start_s, duration, 0.01)
        else:
            log = MemoryLog()
            audio = AudioApp(
                log,
                a.frame_s * 1000,
                a.flows,
                0.0,
                0.2,
                audio=LayeredAudio(
                    a.layers_kbps, a.layers_kbps[0], packet_bytes=mss if a.full_packets else 0
                ),
                start_us=start_us,
            )
            host.start(
                audio,
                a.start_s,
                duration,
                min(0.005, a.frame_s / 4),
                on_done=lambda now: log.write(audio.done(now)),
            )
            app = audio
        self.cm_apps[a.name] = (a, app, host)

    def _start_paced(self, gen: TcpPlan) -> None:
        """One paced sender per flow (``flow_bytes`` of its size) at its arrival time;
        finished senders are dropped from memory every second, their FCT kept."""
        assert self.net is not None and self._plan is not None
        net, plan = self.net, self._plan
        if gen.dst not in self.receivers:
            core = ReceiverCore(round(plan.hosts[gen.dst].ack_delay_s * 1e6))
            self.receivers[gen.dst] = UdpReceiver(net.clock, net.hosts[gen.dst], core)
        specs = tcp_specs(gen, plan.seed)
        running: dict[int, UdpSender] = {}
        done: dict[int, FlowRecord] = {}
        self.paced[gen.name] = (specs, running, done)
        dst = net.ip(gen.dst)

        def start(i: int) -> None:
            if i + 1 < len(specs):
                net.clock.at(specs[i + 1].start_s, start, i + 1)
            spec = specs[i]
            cfg = SenderConfig(
                mode=Mode(SENDER_MODE[controller_algo(self._algo)]),
                packet_bytes=gen.mss,
                flow_bytes=spec.size_bytes,
                initial_rate_kbps=plan.initial_rate_kbps,
                min_rate_kbps=plan.min_rate_kbps,
                give_up_us=30_000_000,
            )
            name = f"{gen.name}-{spec.index}"
            running[i] = UdpSender(net.clock, net.hosts[gen.src], dst, cfg, name, spec.start_s)

        def sweep() -> None:
            self._sweep_paced(gen.name)
            net.clock.after(1.0, sweep)

        if specs:
            net.clock.at(specs[0].start_s, start, 0)
        net.clock.after(1.0, sweep)

    def _sweep_paced(self, name: str, final: bool = False) -> None:
        specs, running, done = self.paced[name]
        for i in [i for i, s in running.items() if s.finished or final]:
            core = running.pop(i).core
            ok = core.outcome == "completed" and core.completion_time_us is not None
            spec = specs[i]
            done[i] = FlowRecord(
                spec.index,
                spec.start_s,
                spec.size_bytes,
                start_s=spec.start_s,
                outcome=core.outcome or "interrupted",
                fct_s=core.completion_time_us / 1e6 if ok else None,  # type: ignore[operator]
            )

    def tcp_records(self) -> list[dict[str, Any]]:
        out = []
        for name, client in self.clients.items():
            if not client.stopped:
                client.finish()
            out += [{"generator": name, **r.as_json()} for r in client.records]
        for name in self.paced:
            self._sweep_paced(name, final=True)
            done = self.paced[name][2]
            out += [{"generator": name, **done[i].as_json()} for i in sorted(done)]
        return out

    def set_capacity(self, switch: str, port: int, pps: float | None, bps: float | None) -> None:
        assert self.net is not None
        out = self.net.switches[switch].ports[port]
        out.drain(self.net.clock.now)
        out.params = port_params(pps, bps, out.params.depth, out.params.delay_s)

    def advance(self, until_s: float) -> None:
        assert self.net is not None and self.ctl is not None and self._plan is not None
        if self.gate is None:
            self.net.run(until_s)
        else:
            self.gate.advance(self.net, until_s, self.ctl.recorder.records, self._plan.measured)

    def now(self) -> float:
        assert self.net is not None
        return self.net.clock.now

    def port_records(self) -> list[dict[str, Any]]:
        """The controller's records; with an exact-queue probe, the measured ports' records
        also carry ``queue_exact_pkts`` (the mean of the true queue over the period)."""
        assert self.ctl is not None
        records = list(self.ctl.recorder.records)
        if self.probe is None:
            return records
        out = []
        for key in self.probe.samples:
            rs = [r for r in records if (r["switch"], r["port"]) == key]
            means = self.probe.period_means(key, [r["t"] for r in rs], [r["period_s"] for r in rs])
            out += [{**r, "queue_exact_pkts": q} for r, q in zip(rs, means, strict=True)]
        probed = set(self.probe.samples)
        return out + [r for r in records if (r["switch"], r["port"]) not in probed]

    def flow_samples(self) -> dict[str, list[tuple[float, int]]]:
        return {k: list(v) for k, v in self.samples.items()}

    def tcp_retransmits(self) -> dict[str, list[tuple[float, int]]]:
        return {k: list(v) for k, v in self.retrans.items()}

    def flow_traces(self) -> dict[str, list[tuple[float, int, int, float | None]]]:
        return {k: list(v) for k, v in self.traces.items()}

    def close(self) -> dict[str, Any]:
        assert self.net is not None and self._plan is not None
        wall = time.perf_counter() - self._wall0
        if self._flow_log is not None:
            self._flow_log.close()
            self._flow_log = None
        return {
            "cm": {a.name: cm_facts(app, host) for a, app, host in self.cm_apps.values()},
            "simulated_s": round(self.net.clock.now, 3),
            "wall_s": round(wall, 2),
            "events": self.net.clock.events,
            # what the simulator knows and BMv2 cannot count: queue drops per port, all run
            "port_drops": {
                p.label: self.net.switches[p.switch].ports[p.port].stats.dropped
                for p in self._plan.ports.values()
                if self.net.switches[p.switch].ports[p.port].stats.dropped
            },
        }
