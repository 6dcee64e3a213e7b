"""The resolved, numeric form of an experiment at one scale: port numbers, addresses,
capacities (scaled), the controller's topology document and every flow's path.

Both engines run a ``Plan``; neither reads the file. Routes are the controller's own
(``fairgate_controller.routes.compute_routes``), so the paths here are the paths used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fairgate_controller.routes import compute_routes
from fairgate_controller.topology import Topology, TopologyError, parse
from fairgate_exp import units
from fairgate_exp.flows import instances
from fairgate_exp.schema import ExperimentFile

FRAME_OVERHEAD = 42  # Ethernet 14 + IPv4 20 + UDP 8
LINE_RATE_BPS = 100e6  # ports with no capacity: the lab's access speed (BMv2: no queue rate)
MAX_PORT = 15


def _err(msg: str) -> Exception:
    from fairgate_exp.load import ExperimentError

    return ExperimentError(msg)


@dataclass(frozen=True)
class PortPlan:
    """One switch output port. Exactly one of ``bps``/``pps`` (None: line rate)."""

    switch: str
    port: int
    peer: str  # host name or switch name
    label: str  # "s1->s2" / "s1->h1"
    bps: float | None
    pps: float | None
    depth: int
    delay_s: float
    gate_syn: bool

    def capacity_Bps(self, frame: int) -> float:
        if self.pps is not None:
            return self.pps * frame
        return (self.bps if self.bps is not None else LINE_RATE_BPS) / 8

    @property
    def limited(self) -> bool:
        return self.bps is not None or self.pps is not None


@dataclass(frozen=True)
class HostPlan:
    name: str
    index: int
    switch: str
    port: int
    delay_s: float
    ack_delay_s: float
    uplink_bps: float | None = None  # host -> switch (simulator); None: line rate

    @property
    def ip(self) -> str:
        return f"10.0.{self.index}.1"

    @property
    def mac(self) -> str:
        return f"00:00:00:00:{self.index // 256:02x}:{self.index % 256:02x}"


@dataclass(frozen=True)
class FlowPlan:
    name: str
    src: str
    dst: str
    start_s: float
    stop_s: float
    max_rate_bps: float | None
    path: tuple[tuple[str, int], ...]  # data direction: (switch, output port)
    ack_path: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class TcpPlan:
    """A TCP flow generator; ``stop_s`` ends arrivals (and bulk flows' sending)."""

    name: str
    src: str
    dst: str
    kind: str  # "bulk" | "poisson"
    transport: str  # "tcp" | "paced" | "auto"
    count: int
    size: int
    arrival_rate: float | None
    mean_size: int
    max_size: int | None
    pareto_shape: float
    mss: int
    rwnd: int | None  # None: the engine's default
    congestion_control: str  # "default" | "reno"
    whole_segments: bool
    syn_retries: int
    max_open: int | None
    hold_s: float
    start_s: float
    stop_s: float
    path: tuple[tuple[str, int], ...]
    jitter_s: float = 0.0  # the simulator's per-packet processing jitter
    kernel_hz: int | None = None  # the simulator's timer wheel for TCP retransmissions

    def paced(self, algo: str) -> bool:
        """Whether this generator's flows are paced senders (else TCP) under ``algo``."""
        return self.transport == "paced" or (
            self.transport == "auto" and algo not in ("none", "ficcrd")
        )

    @property
    def bulk(self) -> bool:
        """Long TCP flows whose goodput is measured per flow (``flow_names``)."""
        return self.kind == "bulk" and self.transport == "tcp"

    def flow_names(self) -> list[str]:
        """The recorded names of its flows, in order (bulk TCP)."""
        if self.count == 1:
            return [self.name]
        return [f"{self.name}-{k + 1}" for k in range(self.count)]


@dataclass(frozen=True)
class CmPlan:
    """A Congestion Manager app; rates already scaled."""

    name: str
    src: str
    dst: str
    app: str  # "bulk" | "audio"
    flows: int
    layers_kbps: tuple[int, ...]
    frame_s: float
    initial_rate_kbps: float
    start_s: float
    stop_s: float
    weights: tuple[float, ...] = ()  # one per flow (audio's own flow: 1)
    stagger_s: float = 0.0  # flow i opens at start_s + i x stagger_s
    aging: str = "min_rtt"  # "min_rtt" | "srtt" | "off"
    probes_per_rtt: float = 2.0
    probe_spread: float = 0.5  # probe intervals drawn from [1 - s, 1 + s] x
    size: int = 100_000_000  # tcp: bytes per connection
    mss: int = 1448  # tcp: segment size
    full_packets: bool = False  # audio: full data packets at the layer's rate, not frames

    def flow_names(self) -> list[str]:
        """The recorded names of its flows, in order (audio's first)."""
        audio = [f"{self.name}-audio"] if self.app == "audio" else []
        return audio + [f"{self.name}-{i}" for i in range(self.flows)]


@dataclass(frozen=True)
class VariantPlan:
    """How the SYN gates run: ``session`` (off/strategy1/strategy2) or a static
    ``admit_fps`` on every gated port; its own duration and warm-up."""

    name: str
    session: str
    admit_fps: float | None
    duration_s: float
    warmup_s: float


@dataclass(frozen=True)
class CapacityChangePlan:
    """At ``at_s``, port (``switch``, ``port``) serves ``bps`` or ``pps`` (both None: line
    rate), the scale's factor applied."""

    at_s: float
    switch: str
    port: int
    label: str
    bps: float | None
    pps: float | None

    @property
    def capacity(self) -> str:
        if self.pps is not None:
            return str(units.Rate(self.pps, "pkt/s"))
        return str(units.Rate(self.bps, "bit/s")) if self.bps is not None else "line rate"


@dataclass
class Plan:
    name: str
    path: Path
    scale: str
    factor: float
    scale_note: str
    file: ExperimentFile
    payload: int
    duration_s: float
    warmup_s: float
    seed: int
    algorithms: list[str]
    period_s: float | None
    period_min_s: float
    period_max_s: float
    q_ref_pkts: float
    initial_rate_kbps: int
    min_rate_kbps: int
    switches: list[str]
    hosts: dict[str, HostPlan]
    ports: dict[tuple[str, int], PortPlan]
    flows: list[FlowPlan]
    phases: list[tuple[str, float, float]]
    measured: list[tuple[str, int]]
    sample_s: float
    exact_queue: bool
    tcp: list[TcpPlan] = field(default_factory=list)
    variants: list[VariantPlan] = field(default_factory=list)
    cm: list[CmPlan] = field(default_factory=list)
    variant: VariantPlan | None = None  # the one being run (``with_variant``)
    host_jitter_s: float = 0.0  # the simulator's per-host NIC jitter (no BMv2 effect)
    delayed_ack: bool = False  # the simulator's TCP receivers ack as Linux's (BMv2's do)
    session_window_s: float = 2.0
    extra: dict[str, Any] = field(default_factory=dict)
    # bulk TCP flows as flows (path, ack path): goodput per flow, in data frames/s
    tcp_flows: list[FlowPlan] = field(default_factory=list)
    capacity_changes: list[CapacityChangePlan] = field(default_factory=list)

    @property
    def gated(self) -> list[tuple[str, int]]:
        return [k for k, p in self.ports.items() if p.gate_syn]

    def with_variant(self, v: VariantPlan) -> Plan:
        """This plan for one variant: its duration and warm-up, and TCP generators with
        no explicit stop ending their drain before the variant's end."""
        tcp = []
        for g, t in zip(self.tcp, self.file.tcp, strict=True):
            stop = g.stop_s if t.stop is not None else v.duration_s - units.parse_time(t.drain)
            tcp.append(replace(g, stop_s=stop))
        return replace(self, variant=v, duration_s=v.duration_s, warmup_s=v.warmup_s, tcp=tcp)

    @property
    def frame(self) -> int:
        return self.payload + FRAME_OVERHEAD

    def port_by_label(self, label: str) -> PortPlan:
        for p in self.ports.values():
            if p.label == label:
                return p
        raise KeyError(label)

    def topology_doc(self, pps_only: bool = False) -> dict[str, Any]:
        """The controller's topology file. ``pps_only`` (BMv2): every limited port gets a
        queue rate in packets/s (a bit/s capacity at the data frame size)."""
        frame = self.frame
        doc: dict[str, Any] = {
            "switches": [
                {"name": s, "grpc_addr": f"sim:{i + 1}", "device_id": 0, "mac": switch_mac(i)}
                for i, s in enumerate(self.switches)
            ],
            "hosts": [],
            "links": [],
        }

        def port_fields(p: PortPlan) -> dict[str, Any]:
            pps = p.pps
            if pps_only and pps is None and p.bps is not None:
                pps = max(1, round(p.bps / (8 * frame)))
            out: dict[str, Any] = {"queue_depth": p.depth, "admission": p.gate_syn}
            if pps is not None:
                out["queue_rate_pps"] = round(pps)
                out["capacity_kbps"] = round(pps) * frame * 8 / 1000
            else:
                out["capacity_kbps"] = p.capacity_Bps(frame) * 8 / 1000
            return out

        for h in self.hosts.values():
            p = self.ports[(h.switch, h.port)]
            entry = {"name": h.name, "ip": h.ip, "mac": h.mac, "switch": h.switch, "port": h.port}
            doc["hosts"].append(entry | port_fields(p))
        done: set[tuple[str, int]] = set()
        for (s, port), p in self.ports.items():
            if p.peer not in self.switches or (s, port) in done:
                continue
            back = next(q for q in self.ports.values() if q.switch == p.peer and q.peer == s)
            done |= {(s, port), (back.switch, back.port)}
            # the controller's link entry is symmetric: one capacity for both ends.
            a, b = (p, back) if p.limited or not back.limited else (back, p)
            link = {"a": f"{a.switch}:{a.port}", "b": f"{b.switch}:{b.port}"} | port_fields(a)
            doc["links"].append(link)
        return doc

    def topology(self, pps_only: bool = False) -> Topology:
        topo = parse(self.topology_doc(pps_only))
        # per-direction capacities (the file's reverse_capacity), which links entries
        # cannot say: fix the b ends.
        for key, p in self.ports.items():
            spec = topo.ports[key]
            fields = self._port_capacity(p, pps_only)
            topo.ports[key] = type(spec)(
                spec.switch, spec.port, spec.peer, fields[0], fields[1], p.depth, p.gate_syn
            )
        return topo

    def _port_capacity(self, p: PortPlan, pps_only: bool) -> tuple[float, int | None]:
        frame = self.frame
        pps = p.pps
        if pps_only and pps is None and p.bps is not None:
            pps = max(1, round(p.bps / (8 * frame)))
        if pps is not None:
            return round(pps) * frame, round(pps)
        return p.capacity_Bps(frame), None

    def base_rtt_s(self, flow: FlowPlan) -> float:
        """A flow's propagation RTT: its hosts' access delays and every port's delay on
        its data and ack paths (no queueing, no ack hold)."""
        src, dst = self.hosts[flow.src], self.hosts[flow.dst]
        ports = sum(self.ports[k].delay_s for k in flow.path + flow.ack_path)
        return src.delay_s + dst.delay_s + ports

    def window(self, phase: str | None) -> tuple[float, float]:
        if phase is None:
            return self.warmup_s, self.duration_s
        for name, start, end in self.phases:
            if name == phase:
                return start, end
        raise KeyError(phase)

    def resolved(self) -> dict[str, Any]:
        """The file with every default filled (what the run record stores)."""
        doc = self.file.model_dump(mode="json", exclude_none=True)
        doc["experiment"]["name"] = self.name
        doc["resolved"] = {
            "scale": self.scale,
            "factor": self.factor,
            "scale_note": self.scale_note,
            "frame_bytes": self.frame,
            "ports": {
                p.label: {
                    "switch": p.switch,
                    "port": p.port,
                    "capacity": str(units.Rate(p.pps, "pkt/s"))
                    if p.pps is not None
                    else (str(units.Rate(p.bps, "bit/s")) if p.bps is not None else "line rate"),
                    "buffer": f"{p.depth}pkt",
                    "delay": units.fmt_time(p.delay_s),
                    "gate_syn": p.gate_syn,
                }
                for p in self.ports.values()
            },
            "hosts": {
                h.name: {"ip": h.ip, "switch": h.switch, "port": h.port}
                for h in self.hosts.values()
            },
            "flows": {
                f.name: {
                    "path": [self.ports[k].label for k in f.path],
                    "ack_path": [self.ports[k].label for k in f.ack_path],
                }
                for f in self.flows + self.tcp_flows
            },
        }
        return doc


def switch_mac(i: int) -> str:
    return f"02:fa:00:00:00:{i + 1:02x}"


def _assign_ports(exp: ExperimentFile) -> tuple[dict[str, int], list[tuple[int, int]]]:
    """Host ports and link (a_port, b_port): explicit ones first, then 1, 2, ... in file order."""
    used: dict[str, dict[int, str]] = {s: {} for s in exp.switches}

    def take(sw: str, port: int | None, who: str) -> int | None:
        if port is None:
            return None
        if port in used[sw]:
            raise _err(f"{who} and {used[sw][port]} both use {sw} port {port}")
        used[sw][port] = who
        return port

    hports: dict[str, int | None] = {}
    for i, h in enumerate(exp.hosts):
        hports[h.name] = take(h.switch, h.port, f"hosts[{i}] ({h.name})")
    lports: list[list[int | None]] = []
    for i, link in enumerate(exp.links):
        who = f"links[{i}] ({link.a}-{link.b})"
        lports.append([take(link.a, link.a_port, who), take(link.b, link.b_port, who)])

    def free(sw: str, who: str) -> int:
        for port in range(1, MAX_PORT + 1):
            if port not in used[sw]:
                used[sw][port] = who
                return port
        raise _err(f"{sw} has more than {MAX_PORT} ports (FG_MAX_PORTS)")

    for i, h in enumerate(exp.hosts):
        if hports[h.name] is None:
            hports[h.name] = free(h.switch, f"hosts[{i}] ({h.name})")
    for i, link in enumerate(exp.links):
        who = f"links[{i}] ({link.a}-{link.b})"
        if lports[i][0] is None:
            lports[i][0] = free(link.a, who)
        if lports[i][1] is None:
            lports[i][1] = free(link.b, who)
    return {k: int(v or 0) for k, v in hports.items()}, [
        (int(a or 0), int(b or 0)) for a, b in lports
    ]


def _scaled_rate(text: str | None, factor: float) -> tuple[float | None, float | None]:
    if text is None or text == "line":
        return None, None
    r = units.parse_rate(text).scaled(factor)
    return (r.value, None) if r.unit == "bit/s" else (None, r.value)


def scale_factor(exp: ExperimentFile, scale: str) -> float:
    """A scale's factor, or that of the scale it extends (checked: one exists)."""
    here = exp.scales[scale]
    while here.factor is None and here.extends is not None:
        here = exp.scales[here.extends]
    return here.factor or 1.0


def packet_queues(exp: ExperimentFile, scale: str) -> bool:
    """Whether a scale serves bit/s capacities as packets/s (its own, else inherited)."""
    here = exp.scales.get(scale)
    while here is not None:
        if here.packet_queues is not None:
            return here.packet_queues
        here = exp.scales.get(here.extends) if here.extends is not None else None
    return False


def build_plan(exp: ExperimentFile, path: Path, scale: str | None) -> Plan:
    info = exp.experiment
    name = info.name or path.stem
    if scale is None or scale == "file":
        scale = next(iter(exp.scales), "file")
    if scale in exp.scales:
        factor, note = scale_factor(exp, scale), exp.scales[scale].note
    elif scale in ("file", "paper") or not exp.scales:
        factor, note = 1.0, "the file's numbers, unscaled"
    else:
        raise _err(f"no scale {scale!r} (the file has {', '.join(exp.scales)})")
    hports, lports = _assign_ports(exp)
    payload = units.parse_bytes(info.payload)
    frame = payload + FRAME_OVERHEAD
    in_packets = packet_queues(exp, scale)

    def _rate(text: str | None, factor: float) -> tuple[float | None, float | None]:
        bps, pps = _scaled_rate(text, factor)
        if in_packets and bps is not None:
            return None, float(max(1, round(bps / (8 * frame))))
        return bps, pps

    hosts: dict[str, HostPlan] = {}
    ports: dict[tuple[str, int], PortPlan] = {}
    for i, h in enumerate(exp.hosts, start=1):
        port = hports[h.name]
        up = None if h.uplink in (None, "line") else units.parse_rate(h.uplink).scaled(factor)
        hosts[h.name] = HostPlan(
            h.name,
            i,
            h.switch,
            port,
            units.parse_time(h.delay),
            units.parse_time(h.ack_delay),
            None if up is None else up.bps(payload + FRAME_OVERHEAD),
        )
        bps, pps = _rate(h.capacity, factor)
        ports[(h.switch, port)] = PortPlan(
            h.switch,
            port,
            h.name,
            f"{h.switch}->{h.name}",
            bps,
            pps,
            units.parse_packets(h.buffer),
            units.parse_time(h.delay),
            h.gate_syn,
        )
    for link, (pa, pb) in zip(exp.links, lports, strict=True):
        delay, depth = units.parse_time(link.delay), units.parse_packets(link.buffer)
        bps, pps = _rate(link.capacity, factor)
        ports[(link.a, pa)] = PortPlan(
            link.a, pa, link.b, f"{link.a}->{link.b}", bps, pps, depth, delay, link.gate_syn
        )
        rbps, rpps = _rate(link.reverse_capacity, factor)
        ports[(link.b, pb)] = PortPlan(
            link.b, pb, link.a, f"{link.b}->{link.a}", rbps, rpps, depth, delay, False
        )
    duration = units.parse_time(info.duration)
    payload = units.parse_bytes(info.payload)
    ctl = exp.control
    plan = Plan(
        name=name,
        path=path,
        scale=scale,
        factor=factor,
        scale_note=note,
        file=exp,
        payload=payload,
        duration_s=duration,
        warmup_s=units.parse_time(info.warmup),
        seed=info.seed,
        algorithms=list(info.algorithms),
        host_jitter_s=units.parse_time(info.host_jitter),
        delayed_ack=info.delayed_ack,
        period_s=None if ctl.period == "auto" else units.parse_time(ctl.period),
        period_min_s=units.parse_time(ctl.period_min),
        period_max_s=units.parse_time(ctl.period_max),
        q_ref_pkts=float(units.parse_packets(ctl.q_ref)),
        initial_rate_kbps=round(
            units.parse_rate(ctl.initial_rate).bps(payload + FRAME_OVERHEAD) * factor / 1000
        ),
        min_rate_kbps=max(
            1, round(units.parse_rate(ctl.min_rate).bps(payload + FRAME_OVERHEAD) / 1000)
        ),
        switches=list(exp.switches),
        hosts=hosts,
        ports=ports,
        flows=[],
        phases=_phases(exp, duration),
        measured=[],
        sample_s=units.parse_time(exp.measure.sample),
        exact_queue=exp.measure.queue == "exact",
    )
    try:
        topo = plan.topology()
    except (TopologyError, ValueError) as exc:
        raise _err(f"the network is not valid: {exc}") from None
    routes = compute_routes(topo)
    table = {s: {r.prefix.split("/")[0]: r.port for r in rs} for s, rs in routes.items()}
    for i, f in enumerate(exp.flows):
        data = _path(plan, table, f.src, f.dst)
        acks = _path(plan, table, f.dst, f.src)
        if data is None or acks is None:
            raise _err(f"flows[{i}] ({f.name}): no route from {f.src} to {f.dst}")
        bps = (
            None
            if f.max_rate is None
            else units.parse_rate(f.max_rate).scaled(factor).bps(plan.frame)
        )
        for x in instances(f, duration, f"flows[{i}] ({f.name})"):
            plan.flows.append(FlowPlan(x.name, f.src, f.dst, x.start_s, x.stop_s, bps, data, acks))
    for i, t in enumerate(exp.tcp):
        data = _path(plan, table, t.src, t.dst)
        if data is None or _path(plan, table, t.dst, t.src) is None:
            raise _err(f"tcp[{i}] ({t.name}): no route from {t.src} to {t.dst}")
        stop = duration - units.parse_time(t.drain) if t.stop is None else units.parse_time(t.stop)
        acks = _path(plan, table, t.dst, t.src)
        assert acks is not None
        plan.tcp.append(
            TcpPlan(
                t.name,
                t.src,
                t.dst,
                t.kind,
                t.transport,
                t.count,
                units.parse_bytes(t.size),
                t.arrival_rate,
                units.parse_bytes(t.mean_size),
                None if t.max_size is None else units.parse_bytes(t.max_size),
                t.pareto_shape,
                units.parse_bytes(t.mss),
                None if t.rwnd == "default" else units.parse_bytes(t.rwnd),
                t.congestion_control,
                t.whole_segments,
                t.syn_retries,
                t.max_open,
                units.parse_time(t.hold),
                units.parse_time(t.start),
                stop,
                data,
                jitter_s=units.parse_time(t.jitter),
                kernel_hz=t.kernel_hz,
            )
        )
        if plan.tcp[-1].bulk:
            start = units.parse_time(t.start)
            plan.tcp_flows += [
                FlowPlan(n, t.src, t.dst, start, stop, None, data, acks)
                for n in plan.tcp[-1].flow_names()
            ]
    for i, a in enumerate(exp.cm):
        if _path(plan, table, a.src, a.dst) is None or _path(plan, table, a.dst, a.src) is None:
            raise _err(f"cm[{i}] ({a.name}): no route from {a.src} to {a.dst}")
        frame = plan.frame
        if a.packets == "full" and (a.app != "audio" or "frame" in a.model_fields_set):
            raise _err(
                f'cm[{i}] ({a.name}): packets = "full" is the audio app\'s, and its packets '
                "then follow the layer's rate: leave out frame"
            )
        plan.cm.append(
            CmPlan(
                a.name,
                a.src,
                a.dst,
                a.app,
                a.flows,
                tuple(
                    round(units.parse_rate(x).scaled(factor).bps(frame) / 1000) for x in a.layers
                ),
                units.parse_time(a.frame),
                units.parse_rate(a.initial_rate).scaled(factor).bps(frame) / 1000,
                units.parse_time(a.start),
                duration if a.stop is None else units.parse_time(a.stop),
                weights=tuple(a.weights) if a.weights is not None else (1.0,) * a.flows,
                stagger_s=units.parse_time(a.stagger),
                aging=a.aging,
                probes_per_rtt=a.probes_per_rtt,
                probe_spread=a.probe_spread,
                size=units.parse_bytes(a.size),
                mss=units.parse_bytes(a.mss),
                full_packets=a.packets == "full",
            )
        )
    plan.session_window_s = units.parse_time(ctl.session_window)
    for v in exp.variants:
        d = duration if v.duration is None else units.parse_time(v.duration)
        w = plan.warmup_s if v.warmup is None else units.parse_time(v.warmup)
        if w >= d:
            raise _err(f"variants ({v.name}): warm-up {w:g} s is not before the end ({d:g} s)")
        plan.variants.append(VariantPlan(v.name, v.session, v.admit_rate, d, w))
    if exp.variants and not plan.gated:
        raise _err("variants: no port gates SYNs (set gate_syn = true on a link or host)")
    labels = {p.label: key for key, p in ports.items()}
    plan.capacity_changes = _capacity_changes(exp, plan, labels, _rate)
    wanted = exp.measure.ports
    if wanted is None:
        plan.measured = [k for k, p in ports.items() if p.peer in plan.switches and p.limited]
    else:
        for lab in wanted:
            if lab not in labels:
                raise _err(f"measure.ports: unknown port {lab!r} (ports are {', '.join(labels)})")
        plan.measured = [labels[lab] for lab in wanted]
    measured = {ports[k].label for k in plan.measured}
    entries = [(f"expect[{i}]", e) for i, e in enumerate(exp.expect)]
    entries += [(f"measure.metrics[{i}]", m) for i, m in enumerate(exp.measure.metrics)]
    for at, e in entries:
        loss_ratio = e.metric == "ratio" and e.of == "loss_rate"
        for lab in (e.ports or []) + ((e.versus or []) if loss_ratio else []):
            if lab not in labels:
                raise _err(f"{at} ({e.metric}): unknown port {lab!r}")
            if lab not in measured:
                raise _err(f"{at} ({e.metric}): port {lab} is not recorded (measure.ports)")
    return plan


def _capacity_changes(
    exp: ExperimentFile,
    plan: Plan,
    labels: dict[str, tuple[str, int]],
    rate: Callable[[str | None, float], tuple[float | None, float | None]],
) -> list[CapacityChangePlan]:
    """``[[capacity_changes]]`` in time order, checked: a known port, inside the run."""
    end = max([plan.duration_s, *(v.duration_s for v in plan.variants)])
    out = []
    for i, c in enumerate(exp.capacity_changes):
        if c.port not in labels:
            raise _err(
                f"capacity_changes[{i}]: unknown port {c.port!r} (ports are {', '.join(labels)})"
            )
        at = units.parse_time(c.at)
        if at >= end:
            raise _err(f"capacity_changes[{i}]: at {at:g} s is not before the end ({end:g} s)")
        bps, pps = rate(c.capacity, plan.factor)
        sw, port = labels[c.port]
        out.append(CapacityChangePlan(at, sw, port, c.port, bps, pps))
    return sorted(out, key=lambda c: c.at_s)


def _phases(exp: ExperimentFile, duration: float) -> list[tuple[str, float, float]]:
    starts = sorted((units.parse_time(p.start), p) for p in exp.phases)
    out = []
    for j, (start, p) in enumerate(starts):
        if p.end is not None:
            end = units.parse_time(p.end)
        else:
            end = starts[j + 1][0] if j + 1 < len(starts) else duration
        out.append((p.name, start, end))
    return out


def _path(
    plan: Plan, table: dict[str, dict[str, int]], src: str, dst: str
) -> tuple[tuple[str, int], ...] | None:
    hop, ip = plan.hosts[src].switch, plan.hosts[dst].ip
    out: list[tuple[str, int]] = []
    for _ in range(len(plan.switches) + 1):
        port = table.get(hop, {}).get(ip)
        if port is None:
            return None
        out.append((hop, port))
        peer = plan.ports[(hop, port)].peer
        if peer == dst:
            return tuple(out)
        if peer not in plan.switches:
            return None
        hop = peer
    return None
