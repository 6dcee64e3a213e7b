"""The BMv2 engine: a ``Plan`` as a Mininet network of ``simple_switch_grpc`` switches
(``fairgate_topo.labnet``), the controller and the host agents as tracked processes.

Capacities are BMv2 egress queue rates in packets/s (a bit/s capacity becomes packets/s
of the data frame); the controller gets the plan's topology (per-direction capacities).
Propagation delay: the kernels here have no netem, so a switch-to-switch link delay is
refused; host access delays are delay-line nodes and ``ack_delay`` is held by the
receiver (the labs' RTT emulation). Kernel TCP cannot hold its acks: the RTT a file gives
kernel TCP by ``hold`` (and TCP/CM by its receiver's ``ack_delay``) becomes a delay line
on the sender's access link where that poses the same question (``held_access_delays``;
receiver agents behind such a line hold only what it does not carry: ``receiver_holds``).
Time is wall time since the controller was ready.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairgate_exp.engine import controller_algo
from fairgate_exp.plan import FRAME_OVERHEAD, CmPlan, FlowPlan, Plan, TcpPlan
from fairgate_exp.records import write_t0
from fairgate_exp.traffic import SENDER_MODE, tcp_specs
from fairgate_hosts.apps.audio import audio_account
from fairgate_p4.header import HEADER_BYTES
from fairgate_sim.tcp import TCP_HEADER_BYTES
from fairgate_topo.labnet import LabHost, LabLink, LabNet, LabTopology
from fairgate_topo.labrun import PY, SYSCTLS, LabContext, read_jsonl
from fairgate_topo.procs import ProcessGroup, Tracked
from fairgate_topo.switch_cli import set_queue

SPORT_BASE = 41000
# Bulk TCP uploads leave each host from source ports 40000, 40001, ... in start order (the
# simulator's hosts number their ports so): fixed 5-tuples, the same flows in every run.
# With the kernel's random ephemeral ports the flows' FICCRD slots (crc32 & 1023) were
# random too, and about one smoke run in 30 put two of its ten flows in one slot
# (docs/ficcrd.md, "Flows").
TCP_SPORT_BASE = 40000
UNPACED_KBPS = 1_000_000  # tcp_cm's pacing cap far above any lab link: plain kernel TCP
# Next to CM apps the competitor is the paper's TCP NewReno: no SO_MAX_PACING_RATE at all
# (setting it, even far above the link, turns on the kernel's internal pacing)
NO_PACING_KBPS = 0
LONG_LIVED_BYTES = 100_000_000  # bulk flows on BMv2 send until their stop (tcp_cm)
MAX_FRAME = 1518
LAB_MTU = 1500  # the lab's veths (Mininet's default)
ETHERNET_HEADER_BYTES = 14
#: the largest segment kernel TCP sends on the lab's MTU (1448 B: timestamps on); a larger
#: mss is clamped to it by the kernel without a word
MAX_KERNEL_MSS = LAB_MTU + ETHERNET_HEADER_BYTES - TCP_HEADER_BYTES
CLIENT_GRACE_S = 30.0  # a TCP client's time to write its records after its drain


def check_environment() -> str | None:
    if os.geteuid() != 0:
        return "the BMv2 engine needs root (Mininet, namespaces): run with sudo"
    for env, default in (("SWITCH", "simple_switch_grpc"), ("SWITCH_CLI", "simple_switch_CLI")):
        if shutil.which(os.environ.get(env, default)) is None:
            return f"{os.environ.get(env, default)} not found: install p4lang's BMv2 (README)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet not importable: make deps"
    return None


def kernel_tcp_holds(plan: Plan) -> dict[str, set[float]]:
    """Each host sending kernel TCP: the RTTs (s) the file gives its connections beyond
    the network's (a bulk or Poisson generator's ``hold``: the simulator's sink holds each
    packet; a TCP/CM app's receiver ``ack_delay``: the simulator's TCP/CM sink holds as
    long). Kernel TCP under every algorithm of the file (paced senders are not TCP)."""
    out: dict[str, set[float]] = {}
    for g in plan.tcp:
        if not any(g.paced(a) for a in plan.algorithms):
            out.setdefault(g.src, set()).add(g.hold_s)
    for a in plan.cm:
        if a.app == "tcp":
            out.setdefault(a.src, set()).add(plan.hosts[a.dst].ack_delay_s)
    return out


def udp_sends(plan: Plan) -> dict[str, set[str]]:
    """Each host sending UDP (flows, CM apps) to receiver agents, which hold the acks:
    the receivers it sends to."""
    out: dict[str, set[str]] = {}
    pairs = [(f.src, f.dst) for f in plan.flows]
    pairs += [(a.src, a.dst) for a in plan.cm if a.app != "tcp"]
    for src, dst in pairs:
        out.setdefault(src, set()).add(dst)
    return out


def held_access_delays(plan: Plan) -> dict[str, float]:
    """The one-way delay (s) of a delay line on each kernel-TCP sender's access link that
    gives its connections the RTT the file asks for (``kernel_tcp_holds``): half that RTT
    each way, as the simulator's hold adds it once per round trip. All or nothing: every
    host sending kernel TCP with a hold must receive nothing, have no access delay of its
    own and one hold for all its connections; if it also sends to receiver agents (UDP,
    whose acks they hold), each such receiver's ``ack_delay`` must equal that hold and all
    its senders must have the same line, so the agent holds nothing more
    (``receiver_holds``) and those packets keep the file's RTT too (cm-audio: the audio and
    TCP/CM on one host). Otherwise no line (and the run's facts say that kernel TCP sees
    the queue only), so kernel TCP flows compared in one run always have the same
    emulation."""
    holds = kernel_tcp_holds(plan)
    if not any(h > 0 for hs in holds.values() for h in hs):
        return {}
    udp = udp_sends(plan)
    paced = {g.src for g in plan.tcp if any(g.paced(a) for a in plan.algorithms)}
    dsts = {f.dst for f in plan.flows} | {g.dst for g in plan.tcp} | {a.dst for a in plan.cm}
    one: dict[str, float] = {}
    for host, hs in holds.items():
        if len(hs) != 1 or host in dsts | paced or plan.hosts[host].delay_s > 0:
            return {}
        one[host] = min(hs)
    for host, rtt in one.items():
        for dst in udp.get(host, set()):
            senders = [s for s, ds in udp.items() if dst in ds]
            if not math.isclose(plan.hosts[dst].ack_delay_s, rtt) or any(
                s not in one or not math.isclose(one[s], rtt) for s in senders
            ):
                return {}
    return {host: rtt / 2 for host, rtt in one.items() if rtt > 0}


def receiver_holds(plan: Plan) -> dict[str, float]:
    """The ack hold (s) each receiver agent keeps: the file's ``ack_delay``, less the round
    trip of its senders' delay lines (``held_access_delays``), which then carry it."""
    held = held_access_delays(plan)
    out: dict[str, float] = {}
    for src, ds in udp_sends(plan).items():
        for dst in ds:
            out[dst] = max(0.0, plan.hosts[dst].ack_delay_s - 2 * held.get(src, 0.0))
    return out


def lab_topology(plan: Plan) -> LabTopology:
    """The plan as a LabTopology, port for port (the a -> b queue of each link is set by
    LabNet; the b -> a queue, if the plan limits it, by the engine afterwards); kernel
    TCP senders' holds as delay lines (``held_access_delays``)."""
    if plan.exact_queue:
        raise ValueError(
            'bmv2 engine: measure.queue = "exact" is the simulator\'s; BMv2 gives the '
            "controller's queue histogram"
        )
    if plan.frame > MAX_FRAME:
        raise ValueError(
            f"bmv2 engine: experiment.payload makes {plan.frame} B frames; Ethernet frames "
            f"above {MAX_FRAME} B do not fit"
        )
    kernel_tcp = [(g.name, g.mss) for g in plan.tcp if g.transport != "paced"]
    kernel_tcp += [(a.name, a.mss) for a in plan.cm if a.app == "tcp"]
    for name, mss in kernel_tcp:
        if mss > MAX_KERNEL_MSS:
            raise ValueError(
                f"bmv2 engine: {name}: mss {mss} B is more than kernel TCP sends on the lab's "
                f"{LAB_MTU} B MTU ({MAX_KERNEL_MSS} B); the kernel would clamp it silently "
                "and the engines would not run the same flows. Larger segments run in the "
                "simulator"
            )
    for g in plan.tcp:
        if g.bulk and g.size < LONG_LIVED_BYTES:
            raise ValueError(
                f"bmv2 engine: tcp {g.name}: bulk flows on BMv2 are long-lived (the hosts' "
                f"tcp_cm sends until the flow's stop): size must be at least 100MB; "
                "bulk flows of a given size run in the simulator"
            )
        if g.rwnd is not None and not g.paced("none"):
            raise ValueError(
                f"bmv2 engine: tcp {g.name}: rwnd is the simulator's; kernel TCP keeps its own"
            )
    for p in plan.ports.values():
        if p.peer not in plan.switches:
            continue
        if p.delay_s > 0:
            raise ValueError(
                f"bmv2 engine: link {p.label} has a delay; without netem only host access "
                "delays (hosts[].delay) and ack_delay are emulated"
            )
        back = next(q for q in plan.ports.values() if q.switch == p.peer and q.peer == p.switch)
        if p.limited and back.limited and _pps(plan, p) != _pps(plan, back):
            raise ValueError(
                f"bmv2 engine: link {p.switch}-{p.peer} has two different capacities; the "
                "controller's topology file gives a link one capacity for both directions"
            )
    cm_shared_hosts(plan)
    held = held_access_delays(plan)
    topo = LabTopology(frame_bytes=plan.frame)
    topo.switches = list(plan.switches)
    for h in plan.hosts.values():
        p = plan.ports[(h.switch, h.port)]
        delay_s = held.get(h.name, h.delay_s)
        topo.hosts[h.name] = LabHost(
            h.name,
            h.index,
            h.switch,
            h.port,
            _pps(plan, p),
            p.depth,
            p.gate_syn,
            round(delay_s * 1000, 6) if delay_s > 0 else None,
        )
    done: set[tuple[str, int]] = set()
    for key, p in plan.ports.items():
        if p.peer not in plan.switches or key in done:
            continue
        back = next(q for q in plan.ports.values() if q.switch == p.peer and q.peer == p.switch)
        done |= {key, (back.switch, back.port)}
        topo.links.append(
            LabLink(p.switch, p.port, back.switch, back.port, _pps(plan, p), p.depth, p.gate_syn)
        )
    return topo


def tcp_sysctls(plan: Plan) -> dict[str, str]:
    """With TCP generators, the lab hosts' TCP settings (backlogs, port range, Reno and
    exponential SYN back-off: what the simulator's TCP models) and the generators' SYN
    retries."""
    tcp = [g for g in plan.tcp if g.transport != "paced"]
    if not tcp:
        return {}
    out = SYSCTLS | {"net.ipv4.tcp_syn_retries": str(min(g.syn_retries for g in tcp))}
    if any(g.congestion_control == "reno" for g in tcp):
        out["net.ipv4.tcp_congestion_control"] = "reno"
    return out


def queue_rate_pps(pps: float | None, bps: float | None, frame: int) -> int:
    """BMv2's egress queue rate for a capacity: packets/s of ``frame``-byte data frames,
    rounded as the lab's topology rounds them (``Plan.topology_doc(pps_only=True)``); 0
    (BMv2: unlimited) for the line rate (both None)."""
    if pps is not None:
        return max(1, round(pps))
    if bps is not None:
        return max(1, round(bps / (8 * frame)))
    return 0


def cm_command(
    plan: Plan,
    app: CmPlan,
    now_s: float,
    log: Path,
    kernel_cc: str = "auto",
    tcp: tuple[CmPlan, Path] | None = None,
) -> list[str]:
    """The hosts' CM app for ``app`` started at ``now_s``, as the simulator engine drives
    the same app: UDP payload = the plan's payload (TCP/CM: the file's mss), macroflow cap
    100 Mbit/s, the audio app's bulk flows joining at once; weights, stagger, aging and
    probes per RTT as the file says; TCP/CM's sockets on ``kernel_cc``. ``tcp``: a TCP/CM
    app (and its log) that this audio app runs on its CM."""
    duration = app.stop_s - max(app.start_s, now_s)
    dst = plan.hosts[app.dst].ip
    weights = ",".join(f"{w:g}" for w in app.weights) if app.weights else None
    if app.app == "tcp":
        cmd = [PY, "-m", "fairgate_hosts.apps.tcpcm", "--dst", dst, "--flows", str(app.flows)]
        cmd += ["--duration", f"{duration:.3f}", "--interval", f"{plan.sample_s:g}"]
        cmd += ["--mss", str(app.mss), "--initial-rate", f"{app.initial_rate_kbps:g}"]
        cmd += ["--max-rate", "100000", "--aging", app.aging, "--log", str(log)]
        cmd += ["--stagger", f"{app.stagger_s:g}", "--kernel-cc", kernel_cc]
        return [*cmd, "--weights", weights] if weights else cmd
    cmd = [PY, "-m", f"fairgate_hosts.apps.{app.app}", "--dst", dst]
    cmd += ["--duration", f"{duration:.3f}", "--interval", f"{plan.sample_s:g}"]
    # the apps' --mss is what follows the rate header: the UDP payload is the plan's
    cmd += ["--mss", str(plan.payload - HEADER_BYTES)]
    cmd += ["--initial-rate", f"{app.initial_rate_kbps:g}"]
    cmd += ["--max-rate", "100000", "--log", str(log)]
    cmd += ["--aging", app.aging, "--probes-per-rtt", f"{app.probes_per_rtt:g}"]
    cmd += ["--probe-spread", f"{app.probe_spread:g}"]
    if app.app == "bulk":
        cmd += ["--flows", str(app.flows), "--stagger", f"{app.stagger_s:g}"]
        return [*cmd, "--weights", weights] if weights and app.flows else cmd
    cmd += ["--bulk", str(app.flows), "--bulk-join", "0"]
    cmd += ["--layers", ",".join(str(x) for x in app.layers_kbps)]
    cmd += ["--frame-ms", f"{app.frame_s * 1000:g}"]
    if app.full_packets:
        cmd += ["--full-packets"]
    if tcp is not None:
        cmd += ["--tcp-flows", str(tcp[0].flows), "--tcp-log", str(tcp[1])]
        cmd += ["--kernel-cc", kernel_cc]
    return cmd


def cm_shared_hosts(plan: Plan) -> dict[str, str]:
    """The file's apps of one host share one CM; on BMv2 every app is its own process with
    its own CM. Two apps of a host overlapping in time towards one destination (one
    macroflow) run in one process when they are an audio app and TCP/CM apps with the
    same start and stop (Fig. 10: ``apps.audio --tcp-flows``); returns TCP/CM app ->
    the audio app that runs it. Any other overlap is refused."""
    hosted: dict[str, str] = {}
    for i, a in enumerate(plan.cm):
        for b in plan.cm[i + 1 :]:
            if a.src != b.src or a.dst != b.dst or a.start_s >= b.stop_s or b.start_s >= a.stop_s:
                continue
            pair = {a.app: a, b.app: b}
            same = (a.start_s, a.stop_s) == (b.start_s, b.stop_s)
            if set(pair) == {"audio", "tcp"} and same and pair["tcp"].name not in hosted:
                hosted[pair["tcp"].name] = pair["audio"].name
                continue
            raise ValueError(
                f"bmv2 engine: cm apps {a.name} and {b.name} share {a.src}'s macroflow to "
                f"{b.dst} at the same time; on BMv2 each app has its own CM except audio "
                "with TCP/CM apps of the same start and stop (run them one after the "
                "other, or in the simulator)"
            )
    if len(set(hosted.values())) < len(hosted):
        raise ValueError("bmv2 engine: one audio app can host one TCP/CM app")
    return hosted


# segments: TCP/CM's kernel window starts far above any CM window; every loss recovery
# halves it (Reno), so 30 recoveries per connection before it could bind (the kernel warns
# at 2^31)
TCPCM_INITCWND = 1 << 30
TCPCM_HOST_SYSCTLS = {"net.ipv4.tcp_slow_start_after_idle": "0"}


def bulk_command(plan: Plan, gen: TcpPlan, sport: int, duration_s: float) -> list[str]:
    """A bulk flow's kernel TCP upload (``apps.tcp_cm``): from ``sport``, segments of the
    generator's mss, paced far above any link (next to CM apps not paced at all)."""
    cmd = [PY, "-m", "fairgate_hosts.apps.tcp_cm", "--dst", plan.hosts[gen.dst].ip]
    cmd += ["--sport", str(sport), "--mss", str(gen.mss)]
    rate = NO_PACING_KBPS if plan.cm else UNPACED_KBPS
    cmd += ["--rate", str(rate), "--duration", f"{duration_s:.3f}"]
    return [*cmd, "--skip", "0", "--interval", f"{plan.sample_s:g}", "--feedback-ms", "50"]


def tcp_client_command(plan: Plan, gen: TcpPlan, start_s: float) -> list[str]:
    """A short-flow generator's client (``traffic.client``), started at ``start_s``: the
    simulator's seeded workload, segments of the generator's mss."""
    assert gen.arrival_rate is not None
    cmd = [PY, "-m", "fairgate_hosts.traffic.client", "--dst", plan.hosts[gen.dst].ip]
    cmd += ["--rate", repr(gen.arrival_rate), "--shape", str(gen.pareto_shape)]
    cmd += ["--mean-size", str(gen.mean_size), "--seed", str(plan.seed)]
    cmd += ["--mss", str(gen.mss)]
    if gen.max_size is not None:
        cmd += ["--max-size", str(gen.max_size)]
    cmd += ["--duration", f"{gen.stop_s - start_s:.3f}", "--warmup", "0"]
    drain = max(0.5, plan.duration_s - gen.stop_s - 0.5)
    cmd += ["--timeout", f"{plan.duration_s - start_s + 10:.1f}", "--drain", f"{drain:.1f}"]
    if gen.max_open is not None:
        cmd += ["--max-open", str(gen.max_open)]
    return cmd


def tcpcm_host_commands(gateway: str) -> list[str]:
    """What a TCP/CM host runs once: its kernel TCP's window must never bind, so it starts
    huge (the default route's ``initcwnd``; a loss halves it, an RTO restarts slow start)
    and is never shrunk for being application-limited (RFC 2861 validation is tied to
    ``tcp_slow_start_after_idle``)."""
    cmds = [f"sysctl -qw {k}={v}" for k, v in TCPCM_HOST_SYSCTLS.items()]
    return [*cmds, f"ip route change default via {gateway} initcwnd {TCPCM_INITCWND}"]


def cm_peer_names(app: CmPlan, ip: str, records: list[dict[str, Any]]) -> dict[str, str]:
    """``ip:sport`` -> the recorded name of each flow a CM app opened (its log's ``open``
    records, as the simulator engine names them): ``<app>-audio`` for the audio flow,
    ``<app>-<i>`` for the i-th bulk flow."""
    opened = [r for r in records if r.get("type") == "open"]
    bulk = [r for r in opened if r.get("role") == "bulk"]
    out = {f"{ip}:{r['sport']}": f"{app.name}-{i}" for i, r in enumerate(bulk)}
    out |= {f"{ip}:{r['sport']}": f"{app.name}-audio" for r in opened if r.get("role") == "audio"}
    return out


def controller_args(plan: Plan, algo: str | None = None) -> list[str]:
    """The controller's options from the file: control period, q_ref, minimum rate,
    for a session-control variant the strategy or its static admit rate (the controller
    keeps a static gate and records its windows), and FICCRD's tables for ``ficcrd``."""
    period = "auto" if plan.period_s is None else f"{plan.period_s:g}"
    extra = ["--period", period, "--period-min", f"{plan.period_min_s:g}"]
    extra += ["--period-max", f"{plan.period_max_s:g}", "--q-ref", f"{plan.q_ref_pkts:g}"]
    extra += ["--min-rate", str(plan.min_rate_kbps)]
    v = plan.variant
    if v is not None and v.session != "off":
        extra += ["--session", v.session, "--session-window", f"{plan.session_window_s:g}"]
    elif v is not None and v.admit_fps is not None:
        extra += ["--admit-rate", f"{v.admit_fps:g}", "--session-window"]
        extra += [f"{plan.session_window_s:g}"]
    if algo == "ficcrd":
        fic = plan.file.ficcrd
        extra += ["--ficcrd", "--ficcrd-k", str(fic.rd_interval), "--ficcrd-core", fic.core]
    return extra


def _pps(plan: Plan, p: Any) -> int | None:
    if p.pps is not None:
        return round(p.pps)
    if p.bps is not None:
        return max(1, round(p.bps / (8 * plan.frame)))
    return None


@dataclass
class Bmv2Engine:
    name: str = "bmv2"
    net: LabNet | None = None
    procs: ProcessGroup | None = None
    ctx: LabContext | None = None
    t0: float = 0.0
    sports: dict[str, int] = field(default_factory=dict)
    _plan: Plan | None = None
    _algo: str = "qfcp"
    _thrift: dict[str, int] = field(default_factory=dict)
    _closed: bool = False
    pending: list[tuple[float, str, list[str], str]] = field(default_factory=list)
    started: set[str] = field(default_factory=set)
    paced: dict[str, list[tuple[int, float, int, str]]] = field(default_factory=dict)
    servers: set[str] = field(default_factory=set)
    clients: dict[str, float] = field(default_factory=dict)  # generator -> its start (s)
    client_procs: dict[str, Tracked] = field(default_factory=dict)  # generator -> process
    bulk: dict[str, TcpPlan] = field(default_factory=dict)  # bulk flow name -> generator
    cm_apps: list[CmPlan] = field(default_factory=list)
    tcpcm_hosts: set[str] = field(default_factory=set)
    tcpcm_cc: str = "auto"
    tcpcm_cc_note: str | None = None
    #: fg_cm was registered by this run (so the run unregisters it when it closes)
    tcpcm_cc_ours: bool = False

    def build(self, plan: Plan, algo: str, run_dir: Path) -> None:
        self._plan, self._algo = plan, algo
        run_dir.mkdir(parents=True, exist_ok=True)
        self.procs = ProcessGroup(run_dir / "logs")
        self.net = LabNet(lab_topology(plan), run_dir, host_sysctls=tcp_sysctls(plan))
        self.net.__enter__()
        written = json.loads(self.net.topo_path.read_text())
        addr = {s["name"]: (s["grpc_addr"], s["thrift_port"]) for s in written["switches"]}
        self._thrift = {name: a[1] for name, a in addr.items()}
        # the b -> a queues LabNet leaves at line rate
        for (sw, port), p in plan.ports.items():
            if p.peer in plan.switches and p.limited:
                set_queue(self._thrift[sw], port, _pps(plan, p), p.depth)
        doc = plan.topology_doc(pps_only=True)
        for s in doc["switches"]:
            s["grpc_addr"], s["thrift_port"] = addr[s["name"]]
        doc["comment"] = f"written by fairgate_exp from {plan.path} (scale {plan.scale})"
        self.net.topo_path.write_text(json.dumps(doc, indent=2) + "\n")
        self.ctx = LabContext(plan.name, algo, run_dir, self.net, self.procs)
        self.ctx.start_controller(controller_algo(algo), controller_args(plan, algo))
        paced = [g.dst for g in plan.tcp if g.paced(algo)]
        cm = [a.dst for a in plan.cm if a.app != "tcp"]
        holds = receiver_holds(plan)
        for dst in dict.fromkeys([f.dst for f in plan.flows] + paced + cm):
            delay_ms = holds.get(dst, plan.hosts[dst].ack_delay_s) * 1000
            cmd = [PY, "-m", "fairgate_hosts.receiver", "--ack-delay-ms", f"{delay_ms:g}"]
            cmd += ["--log", str(self.ctx.log_path(f"rx-{dst}"))]
            cmd += ["--log-interval", f"{plan.sample_s:g}"]
            self.procs.start(f"rx-{dst}", cmd, self.net.host(dst))
        for i, f in enumerate(plan.flows):
            self.sports[f.name] = SPORT_BASE + i
        for g in plan.tcp:  # the TCP servers, before time 0
            if not g.paced(algo) and g.dst not in self.servers:
                self._start_server(g)
        if any(a.app == "tcp" for a in plan.cm):
            self._kernel_cc(run_dir)
        for a in plan.cm:  # TCP/CM: the sinks, and hosts whose kernel window never binds
            if a.app != "tcp":
                continue
            if a.dst not in self.servers:
                self._start_server_on(a.dst, None)
            if a.src not in self.tcpcm_hosts:
                node = self.net.host(a.src)
                gw = self.net.topology.hosts[a.src].gateway
                for c in tcpcm_host_commands(gw):
                    out = node.cmd(c)
                    if out.strip():
                        raise RuntimeError(f"bmv2 engine: {a.src}: {c}: {out.strip()}")
                self.tcpcm_hosts.add(a.src)
        time.sleep(0.5)  # receivers bound
        self.t0 = time.time()
        # controller.jsonl carries wall time: its time 0, for the dashboard's replay
        write_t0(run_dir, self.t0)

    def start_flow(self, flow: FlowPlan) -> None:
        assert self.ctx is not None and self.procs is not None and self._plan is not None
        plan = self._plan
        cmd = [PY, "-m", "fairgate_hosts.sender", "--dst", plan.hosts[flow.dst].ip]
        mode = SENDER_MODE[controller_algo(self._algo)]
        cmd += ["--mode", mode, "--sport", str(self.sports[flow.name])]
        cmd += ["--duration", f"{flow.stop_s - max(flow.start_s, self.now()):.3f}"]
        cmd += ["--flow-id", flow.name, "--packet-bytes", str(plan.payload)]
        cmd += ["--log", str(self.ctx.log_path(f"tx-{flow.name}")), "--log-interval", "0.2"]
        cmd += ["--initial-rate", str(plan.initial_rate_kbps), "--spin-us", "100"]
        cmd += ["--min-rate", str(plan.min_rate_kbps), "--give-up", "30"]
        if flow.max_rate_bps is not None:
            cmd += ["--desired-rate", str(round(flow.max_rate_bps / 1000))]
        self.procs.start(f"tx-{flow.name}", cmd, self.net.host(flow.src) if self.net else None)

    def start_tcp(self, gen: TcpPlan) -> None:
        """Kernel TCP: the hosts' traffic server on ``dst`` and client on ``src`` (the
        same seeded Poisson/Pareto workload as the simulator's). Paced: one sender
        process per flow, started by ``advance`` at its arrival time."""
        assert self.ctx is not None and self.procs is not None and self._plan is not None
        assert self.net is not None
        plan, ctx = self._plan, self.ctx
        if gen.paced(self._algo):
            for spec in tcp_specs(gen, plan.seed):
                name = f"tx-{gen.name}-{spec.index}"
                cmd = [PY, "-m", "fairgate_hosts.sender", "--dst", plan.hosts[gen.dst].ip]
                mode = SENDER_MODE[controller_algo(self._algo)]
                cmd += ["--mode", mode, "--size", str(spec.size_bytes)]
                cmd += ["--flow-id", f"{gen.name}-{spec.index}"]
                cmd += ["--packet-bytes", str(gen.mss)]
                cmd += ["--initial-rate", str(plan.initial_rate_kbps)]
                cmd += ["--min-rate", str(plan.min_rate_kbps), "--give-up", "30"]
                cmd += ["--log", str(ctx.log_path(name)), "--log-interval", "1"]
                self.pending.append((spec.start_s, name, cmd, gen.src))
                self.paced.setdefault(gen.name, []).append(
                    (spec.index, spec.start_s, spec.size_bytes, name)
                )
            self.pending.sort(key=lambda j: j[0])
            return
        if gen.dst not in self.servers:  # started in build(); a late one here
            self._start_server(gen)
            time.sleep(0.5)
        if gen.bulk:
            self._start_bulk(gen)
            return
        start = self.now()
        client = tcp_client_command(plan, gen, start)
        client += ["--records", str(ctx.log_path(f"client-{gen.name}"))]
        client += ["--summary", str(ctx.run_dir / "hosts" / f"client-{gen.name}-summary.json")]
        tracked = self.procs.start(f"client-{gen.name}", client, self.net.host(gen.src))
        self.clients[gen.name] = start
        self.client_procs[gen.name] = tracked

    def _kernel_cc(self, run_dir: Path) -> None:
        """TCP/CM's sockets run fg_cm (a BPF congestion control whose window never
        binds; ``fairgate_hosts.kernel_cc``), registered here if need be. Without it they
        fall back to the hosts' Reno with a huge initial window, and the run's facts say
        so (the kernel trace then shows where Reno's window bound)."""
        from fairgate_hosts import kernel_cc

        try:
            ours = not kernel_cc.registered()
            kernel_cc.register(run_dir / "fg_cm")
            self.tcpcm_cc = kernel_cc.NAME
            self.tcpcm_cc_ours = ours
        except kernel_cc.KernelCCError as exc:
            self.tcpcm_cc = "reno"
            self.tcpcm_cc_note = f"fg_cm unavailable ({exc}): Reno with initcwnd 2^30"

    def _start_server(self, gen: TcpPlan) -> None:
        self._start_server_on(gen.dst, gen.max_open)

    def _start_server_on(self, dst: str, max_open: int | None) -> None:
        assert self.ctx is not None and self.procs is not None and self.net is not None
        server = [PY, "-m", "fairgate_hosts.traffic.server", "--backlog", "4096"]
        server += ["--max-open", str(max_open or 16000)]
        # no idle timeout within the run: a server closing a stalled connection sends a
        # FIN, which the switch counts as a completion (and the client would read EOF)
        assert self._plan is not None
        server += ["--idle-timeout", f"{self._plan.duration_s + 60:.0f}"]
        server += ["--records", str(self.ctx.log_path(f"server-{dst}"))]
        self.procs.start(f"server-{dst}", server, self.net.host(dst))
        self.servers.add(dst)

    def _start_bulk(self, gen: TcpPlan) -> None:
        """One ``tcp_cm`` upload per flow, paced far above any link (plain kernel TCP;
        next to CM apps not paced at all), sampling its acknowledged bytes and
        retransmissions every sample period."""
        assert self.ctx is not None and self.procs is not None and self.net is not None
        plan = self._plan
        assert plan is not None
        for name in gen.flow_names():
            cmd = bulk_command(plan, gen, self.bulk_sport(gen), gen.stop_s - self.now())
            cmd += ["--log", str(self.ctx.log_path(f"tcp-{name}"))]
            self.procs.start(f"tcp-{name}", cmd, self.net.host(gen.src))
            self.bulk[name] = gen

    def bulk_sport(self, gen: TcpPlan) -> int:
        """The source port of ``gen``'s next bulk flow: its host's ``TCP_SPORT_BASE + k``
        for the k-th bulk flow started there."""
        return TCP_SPORT_BASE + sum(g.src == gen.src for g in self.bulk.values())

    def _bulk_series(self, name: str) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
        """(t, acknowledged segments) and (t, retransmissions) from a flow's tcp_cm log."""
        assert self.ctx is not None
        recs = read_jsonl(self.ctx.log_path(f"tcp-{name}"))
        agent = next((r for r in recs if r.get("type") == "agent"), None)
        if agent is None:
            return [], []
        base = agent["wall_time"] - self.t0
        mss = self.bulk[name].mss
        acked, retrans = [], []
        for r in recs:
            if r.get("type") == "sample" and r.get("flows"):
                f, t = r["flows"][0], round(base + r["t_s"], 4)
                acked.append((t, int(f.get("acked_bytes", 0)) // mss))
                retrans.append((t, int(f["retrans"])))
        return acked, retrans

    def tcp_retransmits(self) -> dict[str, list[tuple[float, int]]]:
        return {name: self._bulk_series(name)[1] for name in self.bulk}

    def start_cm(self, app: CmPlan) -> None:
        """The hosts' CM app (``fairgate_hosts.apps.bulk`` / ``.audio`` / ``.tcpcm``, each
        an in-process Congestion Manager) on ``app.src``, as ``cm_command`` says."""
        assert self.ctx is not None and self.procs is not None and self._plan is not None
        assert self.net is not None
        self.cm_apps.append(app)
        hosted = cm_shared_hosts(self._plan)
        if app.name in hosted:  # runs inside its audio app's process
            return
        tcp = next(
            (
                (t, self.ctx.log_path(f"cm-{t.name}"))
                for t in self._plan.cm
                if hosted.get(t.name) == app.name
            ),
            None,
        )
        log = self.ctx.log_path(f"cm-{app.name}")
        cmd = cm_command(self._plan, app, self.now(), log, self.tcpcm_cc, tcp)
        self.procs.start(f"cm-{app.name}", cmd, self.net.host(app.src))

    def _cm_peers(self) -> dict[str, str]:
        """``ip:sport`` -> recorded name of every UDP flow the CM apps opened."""
        assert self.ctx is not None and self._plan is not None
        out: dict[str, str] = {}
        for a in self.cm_apps:
            if a.app == "tcp":
                continue
            recs = read_jsonl(self.ctx.log_path(f"cm-{a.name}"))
            out |= cm_peer_names(a, self._plan.hosts[a.src].ip, recs)
        return out

    def _app_log(self, a: CmPlan) -> tuple[float, list[dict[str, Any]]]:
        """A CM app's log records and their time base (its start on the experiment clock)."""
        assert self.ctx is not None
        recs = read_jsonl(self.ctx.log_path(f"cm-{a.name}"))
        agent = next((r for r in recs if r.get("type") == "agent"), None)
        return (0.0, []) if agent is None else (agent["wall_time"] - self.t0, recs)

    def _tcpcm_series(self, a: CmPlan) -> dict[str, list[tuple[float, int, int, float | None]]]:
        """Per TCP/CM flow: (t, segments acknowledged, the macroflow's loss halvings, the
        flow's CM share in kbit/s) every sample, from the app's log."""
        base, recs = self._app_log(a)
        names = a.flow_names()
        out: dict[str, list[tuple[float, int, int, float | None]]] = {n: [] for n in names}
        for r in recs:
            if r.get("type") != "sample":
                continue
            t = round(base + r["t_s"], 4)
            for f in r.get("flows", []):
                out[names[f["flow"]]].append(
                    (t, int(f["acked_bytes"]) // a.mss, int(r.get("losses") or 0),
                     f.get("share_kbps"))
                )  # fmt: skip
        return out

    def _udp_cm_losses(self, a: CmPlan) -> list[tuple[float, int, float | None]]:
        """(t, the macroflow's loss halvings so far, its rate in kbit/s) from a UDP CM app."""
        base, recs = self._app_log(a)
        return [
            (round(base + r["t_s"], 4), int(r.get("losses") or 0), r.get("macroflow_kbps"))
            for r in recs
            if r.get("type") == "sample"
        ]

    def cm_facts(self) -> dict[str, Any]:
        """Per CM app, from its log's ``done`` line, the counters the simulator's facts
        have (``make report`` prints them side by side): the macroflow's rate halvings on
        loss, timeouts and agings; probes (UDP apps); TCP/CM's kernel retransmissions and
        RTOs and how many TCP_INFO polls found the kernel's window binding (the
        simulator counts segments past a Reno window instead); the audio's layers."""
        out: dict[str, Any] = {}
        for a in self.cm_apps:
            _, recs = self._app_log(a)
            done = next((r for r in reversed(recs) if r.get("type") == "done"), None)
            if done is None:
                continue
            cm = done.get("cm") or {}
            f: dict[str, Any] = {k: cm[k] for k in ("losses", "timeouts", "agings") if k in cm}
            # probes (on their own or riding on data) and what the answered ones covered
            for k in ("probes_sent", "probes_on_data", "probed_bytes", "probe_lost_bytes"):
                if k in cm:
                    f[k] = cm[k]
            if a.app == "tcp":
                flows = done.get("flows", [])
                f["retransmits"] = sum(x["retrans"] for x in flows)
                # the kernel's retransmissions, paid from the CM's rate (apps.tcpcm)
                f["retrans_bytes_charged"] = sum(x.get("retrans_bytes_charged", 0) for x in flows)
                f["rto_timeouts"] = sum(x["timeouts_reported"] for x in flows)
                f["kernel_cwnd_bound_polls"] = done.get("cwnd_bound_polls")
            if a.app == "audio":
                f["audio"] = audio_account(done)
            out[a.name] = f
        return out

    def tcpcm_kernel(self) -> dict[str, Any]:
        """Per TCP/CM app, from its ``done`` line: TCP_INFO polls, how many found granted
        data waiting behind a full kernel window (``cwnd_bound``: 0 means the kernel's
        congestion control never bound; ``_open``: outside loss recovery), and per flow
        the closest the window came."""
        out: dict[str, Any] = {}
        for a in self.cm_apps:
            if a.app != "tcp":
                continue
            _, recs = self._app_log(a)
            done = next((r for r in recs if r.get("type") == "done"), None)
            if done is None:
                out[a.name] = {"error": "no done line in the TCP/CM log"}
                continue
            out[a.name] = {
                "kernel_cc": done.get("kernel_cc"),
                "polls": done["polls"],
                "cwnd_bound_polls": done["cwnd_bound_polls"],
                "cwnd_bound_open_polls": done["cwnd_bound_open_polls"],
                "flows": {
                    a.flow_names()[f["flow"]]: f["binding"] | {"retrans": f["retrans"]}
                    for f in done["flows"]
                },
            }
        return out

    def flow_traces(self) -> dict[str, list[tuple[float, int, int, float | None]]]:
        """Per CM flow and bulk TCP flow, every sample: (t, packets delivered so far, loss
        events so far, the CM's rate for the flow in kbit/s or None). UDP CM flows: packets
        the receiver counted, the macroflow's halvings and its rate split by weight (the
        app's last sample at or before t); TCP/CM: segments acknowledged; bulk TCP:
        acknowledged segments and retransmissions."""
        samples = self.flow_samples()
        out: dict[str, list[tuple[float, int, int, float | None]]] = {}
        for a in self.cm_apps:
            if a.app == "tcp":
                out |= self._tcpcm_series(a)
                continue
            cm = self._udp_cm_losses(a)
            names = a.flow_names()
            weights = ([1.0] if a.app == "audio" else []) + list(a.weights or [1.0] * a.flows)
            for name, w in zip(names, weights, strict=False):
                series = []
                for t, pkts in samples.get(name, []):
                    last = [c for c in cm if c[0] <= t]
                    losses, mf = (last[-1][1], last[-1][2]) if last else (0, None)
                    share = None if mf is None else mf * w / sum(weights)
                    series.append((t, pkts, losses, share))
                out[name] = series
        for name in self.bulk:
            acked, retrans = self._bulk_series(name)
            lost = dict(retrans)
            out[name] = [(t, n, lost.get(t, 0), None) for t, n in acked]
        return out

    def tcp_records(self) -> list[dict[str, Any]]:
        """The clients' flow records (times moved to the experiment's clock; flows the
        client had not closed by the end count as interrupted) and, for paced flows,
        each sender's ``done`` line."""
        assert self.ctx is not None
        self._wait_clients()
        out: list[dict[str, Any]] = []
        for name, start in self.clients.items():
            for r in read_jsonl(self.ctx.log_path(f"client-{name}")):
                if r.get("type") != "flow":
                    continue
                r = {"generator": name, **r}
                for key in ("scheduled_s", "start_s", "end_s"):
                    if r.get(key) is not None:
                        r[key] = r[key] + start
                out.append(r)
        for gen, flows in self.paced.items():
            for index, t, size, log in flows:
                recs = read_jsonl(self.ctx.log_path(log)) if log in self.started else []
                done = next((r for r in recs if r.get("type") == "done"), None)
                ok = done is not None and done.get("outcome") == "completed"
                fct = done["fct_us"] / 1e6 if ok and done.get("fct_us") is not None else None
                outcome = done.get("outcome", "interrupted") if done else "interrupted"
                out.append(
                    {
                        "generator": gen,
                        "type": "flow",
                        "flow": index,
                        "scheduled_s": t,
                        "size": size,
                        "start_s": t,
                        "outcome": outcome,
                        "fct_s": fct,
                    }
                )
        return out

    def _wait_clients(self, grace_s: float = CLIENT_GRACE_S) -> None:
        """Waits for the clients to exit (each writes its open flows' records as it
        ends, after its drain: thousands of lines under overload), stopping any still
        running after ``grace_s`` (SIGINT: it records its open flows as interrupted).
        Read before that, the flows still open were missing from tcp.csv."""
        assert self.procs is not None
        deadline = time.monotonic() + grace_s
        for tracked in self.client_procs.values():
            left = max(0.0, deadline - time.monotonic())
            if self.procs.wait(tracked, left) is None:
                self.procs.stop(tracked)

    def set_capacity(self, switch: str, port: int, pps: float | None, bps: float | None) -> None:
        """The port's egress queue rate over Thrift (``[[capacity_changes]]``); the depth
        stays. The controller's restart recovery (docs/reliability.md) would set the file's
        rate again: a capacity change does not survive a switch restart."""
        assert self._plan is not None
        set_queue(self._thrift[switch], port, queue_rate_pps(pps, bps, self._plan.frame), None)

    def advance(self, until_s: float) -> None:
        """Waits until ``until_s``, starting paced flows' senders at their times."""
        while True:
            while self.pending and self.pending[0][0] <= self.now():
                _, name, cmd, host = self.pending.pop(0)
                assert self.procs is not None and self.net is not None
                self.procs.start(name, cmd, self.net.host(host))
                self.started.add(name)
            left = self.t0 + until_s - time.time()
            if left <= 0:
                return
            nxt = self.pending[0][0] - self.now() if self.pending else left
            time.sleep(max(0.0, min(left, 0.2, nxt)))

    def now(self) -> float:
        return time.time() - self.t0

    def port_records(self) -> list[dict[str, Any]]:
        assert self.ctx is not None
        out = []
        for r in read_jsonl(self.ctx.records_path):
            if "switch" in r and "port" in r and "t" in r:
                out.append({**r, "t": r["t"] - self.t0})
        return out

    def flow_samples(self) -> dict[str, list[tuple[float, int]]]:
        """From the receivers' logs: (t, packets so far) per sender ``ip:sport``."""
        assert self.ctx is not None and self._plan is not None
        plan = self._plan
        by_peer = {f"{plan.hosts[f.src].ip}:{self.sports[f.name]}": f.name for f in plan.flows}
        by_peer |= self._cm_peers()
        out: dict[str, list[tuple[float, int]]] = {f.name: [] for f in plan.flows}
        out |= {name: [] for name in by_peer.values() if name not in out}
        for path in sorted((self.ctx.run_dir / "hosts").glob("rx-*.jsonl")):
            recs = read_jsonl(path)
            agent = next((r for r in recs if r.get("type") == "agent"), None)
            if agent is None:
                continue
            base = agent["wall_time"] - self.t0
            for r in recs:
                name = by_peer.get(str(r.get("peer")))
                if r.get("type") == "rx" and name is not None:
                    out[name].append((round(base + r["t_us"] / 1e6, 4), int(r["packets"])))
        for name in self.bulk:
            out[name] = self._bulk_series(name)[0]
        for a in self.cm_apps:
            if a.app == "tcp":
                for name, series in self._tcpcm_series(a).items():
                    out[name] = [(t, n) for t, n, _, _ in series]
        return out

    def close(self) -> dict[str, Any]:
        if self._closed:
            return {}
        self._closed = True
        wall = time.time() - self.t0 if self.t0 else 0.0
        lines: dict[str, dict[str, Any]] = {}
        try:
            if self.procs is not None:
                self.procs.stop_all()
            if self.net is not None:
                lines = self.net.stop_delay_lines()
        finally:
            if self.net is not None:
                self.net.stop()
        facts: dict[str, Any] = {"wall_s": round(wall, 1), "rtt_emulation": "ack-delay"}
        if self.tcpcm_cc_ours:
            facts["tcpcm_kernel_cc_unregistered"] = self._unregister_kernel_cc()
        if lines:
            facts["rtt_emulation"] = "ack-delay and delay lines (hosts' access delays)"
            facts["delay_lines"] = {h: delay_line_summary(c) for h, c in lines.items()}
        losses = self.sender_losses()
        if losses:
            facts["sender_losses"] = losses
        cm = self.cm_facts()
        if cm:
            facts["cm"] = cm
        kernel = self.tcpcm_kernel()
        if kernel:
            facts["tcpcm_kernel"] = kernel
            facts["tcpcm_kernel_cc"] = self.tcpcm_cc_note or self.tcpcm_cc
        if self._plan is not None:
            note = tcp_hold_note(self._plan)
            if note:
                facts["tcp_hold"] = note
            frames = frame_size_note(self._plan)
            if frames:
                facts["frame_sizes"] = frames
        return facts

    def sender_losses(self) -> dict[str, Any]:
        """The losses the paced senders of ``flows`` detected themselves (gaps in their
        acks), after warm-up: what actually got lost on their paths. BMv2 has no counter
        for its queues' drops, so the ports' drops are estimated from arrivals, departures
        and the queue histogram (``metrics.window_drops``); this is the ground truth beside
        them wherever every packet through a port is a paced sender's."""
        if self.ctx is None or self._plan is None or not self._plan.flows:
            return {}
        warmup = self._plan.warmup_s
        flows: dict[str, int] = {}
        total = 0
        for f in self._plan.flows:
            recs = read_jsonl(self.ctx.log_path(f"tx-{f.name}"))
            agent = next((r for r in recs if r.get("type") == "agent"), None)
            if agent is None:
                continue
            base = agent["wall_time"] - self.t0
            samples = [
                (base + r["t_us"] / 1e6, int(r.get("losses") or 0))
                for r in recs
                if r.get("type") == "sample"
            ]
            if not samples:
                continue
            before = [n for t, n in samples if t <= warmup]
            flows[f.name] = samples[-1][1] - (before[-1] if before else 0)
            total += samples[-1][1]
        return {
            "after_warmup": sum(flows.values()),
            "total": total,
            "flows": flows,
        }

    def _unregister_kernel_cc(self) -> str:
        """Take back fg_cm, which this run registered (machine-wide kernel state: it
        stays only as long as the run that needed it)."""
        from fairgate_hosts import kernel_cc

        self.tcpcm_cc_ours = False
        try:
            kernel_cc.unregister()
        except kernel_cc.KernelCCError as exc:
            return f"failed: {exc}"
        return "yes"


def tcp_hold_note(plan: Plan) -> str | None:
    """How the run gave kernel TCP the RTT the file asks for by holding (None: it asks
    for none)."""
    if not any(h > 0 for hs in kernel_tcp_holds(plan).values() for h in hs):
        return None
    held = held_access_delays(plan)
    if held:
        lines = ", ".join(f"{h} {d * 1000:g} ms" for h, d in sorted(held.items()))
        return f"delay lines on the kernel TCP senders' access links, one way: {lines}"
    return "not emulated on BMv2 (no netem): kernel TCP sees queueing only"


def frame_size_note(plan: Plan, tolerance: float = 0.03) -> str | None:
    """What BMv2's packets/s queues do to kernel TCP's frames (None: nothing to say).

    A bit/s capacity becomes a queue rate in packets/s of the file's data frame (payload
    + ``FRAME_OVERHEAD``); the simulator serves bytes. A kernel TCP frame (mss + 66 B)
    that differs from the data frame by more than ``tolerance`` moves a different number
    of bytes per slot:
    where such frames fill a port, BMv2 carries more (or less) than its capacity, and the
    two engines no longer run the same network (BMv2's issue #1067). A capacity in
    packets/s (or a scale with ``packet_queues``) is packets/s in both engines: no note."""
    in_bytes = {k for k, p in plan.ports.items() if p.limited and p.pps is None}
    if not in_bytes:
        return None
    senders: dict[int, list[str]] = {}
    for g in plan.tcp:
        crosses = any(k in in_bytes for k in g.path)
        if g.transport != "paced" and crosses:
            senders.setdefault(g.mss, []).append(g.name)
    for a in plan.cm:
        if a.app == "tcp":
            senders.setdefault(a.mss, []).append(a.name)
    off = {
        mss: names
        for mss, names in senders.items()
        if abs((mss + TCP_HEADER_BYTES) / plan.frame - 1) > tolerance
    }
    if not off:
        return None
    match = plan.frame - TCP_HEADER_BYTES
    parts = [
        f"{', '.join(names)} (mss {mss} B: {mss + TCP_HEADER_BYTES} B frames, "
        f"{(mss + TCP_HEADER_BYTES) / plan.frame:.2f}x)"
        for mss, names in sorted(off.items())
    ]
    return (
        f"BMv2 queue rates are packets/s of the {plan.frame} B data frame, and kernel TCP "
        f"sends other sizes: {'; '.join(parts)}; a port such frames fill carries that "
        "multiple of its capacity in bytes on BMv2, not in the simulator. For the engines "
        f'to agree, give those flows mss = "{match}B" (or set experiment.payload to '
        f"their frame less {FRAME_OVERHEAD} B)"
    )


def delay_line_summary(counts: dict[str, Any]) -> dict[str, Any]:
    """A delay line's exit counts, reduced: frames each way, every loss, timer lateness."""
    lost = sum(counts[d]["dropped_full"] + counts[d]["tx_errors"] for d in ("ab", "ba"))
    lost += sum(counts["socket_drops"].values()) + counts.get("truncated", 0)
    return {
        "delay_ms": counts["delay_ms"],
        "frames_ab": counts["ab"]["tx"],
        "frames_ba": counts["ba"]["tx"],
        "lost": lost,
        "oversize": counts["oversize"],
        "max_pending": max(counts["ab"]["max_pending"], counts["ba"]["max_pending"]),
        "lateness_us": counts["lateness"],
    }
