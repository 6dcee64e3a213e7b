"""The ``ficcrd`` lab scenario in the simulator: droptail vs FICCRD (FICCRD Figs. 2-6).

The lab's scenario (its constants, timing, ``summarize`` and ``plot`` in
``ficcrd_scenario.py``, its network in ``labdata/ficcrd.json``) is copied from the BMv2
lab, not imported; this module produces each run's result in the shape the
lab's ``run`` returns, from ten long-lived ``TcpFlow`` uploads (``tcp.py``, with a
receive window the source edge may lower), the switch model's FICCRD rules
(``ficcrd.py``) and the real controller agent (``--algo none [--ficcrd]``, period
0.1 s, as the lab runs it).

- ``lab``: the lab's network: BMv2 queue s1 -> s2 at 500 pkt/s, depth 200, every other
  port 100 Mbit/s, each source's access link delayed by the lab's ``access_delays_ms``
  (both ways, here as link propagation delay instead of a delay-line node), 1514 B
  frames, the TCP model's default receive window.
- ``paper``: the paper's Fig. 2: 10 Mbit/s links, bottleneck s1 -> s2 20 ms with a
  200-packet buffer, 2 ms access links, source h1 (the paper's source 0) behind s0
  with a 10 ms link s0 -> s1, 4 kB frames, 128 kB receive windows, 200 s (goodput over
  50-200 s; ``--smoke``: 60 s, 20-60 s).

Base RTTs are measured as the lab does: 10 pings per source, 20 ms apart, all sources
at once, before the traffic (an echo on the receiver). ``queue_pkts`` is the exact
queue (every 5 ms, mean per control period; RDs count, as in BMv2's queue depth), the
histogram's reading is ``queue_pkts_histogram``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fairgate_controller.agent import ControlConfig
from fairgate_controller.ficcrd import FiccrdConfig
from fairgate_sim import ficcrd_scenario as mod
from fairgate_sim import labdata
from fairgate_sim.control import MemoryRecorder, SimController
from fairgate_sim.engine import Clock
from fairgate_sim.network import Network, SimHost
from fairgate_sim.packet import UDP, Packet
from fairgate_sim.simlab import QueueProbe, SimLab
from fairgate_sim.tcp import TCP_HEADER_BYTES, TcpConfig, TcpFlow, TcpServer
from fairgate_sim.topo import NetBuilder, NetSpec

MBIT_BPS = 1e6 / 8
ECHO_PORT = 7
PING_BYTES = 98  # an ICMP echo of ping's default 56 B payload
PING_GAP_S = 0.02
START_S = 0.5  # traffic starts here (the lab: servers up, 0.5 s, then the senders)
START_SPREAD_S = 0.05  # the senders start within this (seeded): process start-up
FLOW_BYTES = 1 << 40  # "infinite data"


@dataclass(frozen=True)
class Params:
    """What a scale changes."""

    frame: int  # data frame bytes (MSS + TCP_HEADER_BYTES)
    capacity_pps: float  # bottleneck capacity in data frames per second
    rate_pps: float | None  # the bottleneck's BMv2 queue rate (None: a byte-rate link)
    run_s: float
    warmup_s: float
    rwnd_bytes: int | None  # None: the TCP model's default
    note: dict[str, Any] = field(default_factory=dict)

    @property
    def mss(self) -> int:
        return self.frame - TCP_HEADER_BYTES

    @property
    def fair_kbps(self) -> float:
        """The fair share of goodput: the bottleneck's payload rate over the flows."""
        return self.capacity_pps * self.mss * 8 / 1000 / mod.FLOWS


class SimFiccrdScenario(mod.Ficcrd):
    """The lab's scenario (``ficcrd_scenario``) with a scale's fair share, timing and RTT
    emulation."""

    def __init__(self, params: Params) -> None:
        self.p = params

    def timing(self, smoke: bool) -> tuple[float, float]:
        return self.p.run_s, self.p.warmup_s

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        fair = self.p.fair_kbps
        out: dict[str, Any] = {
            "rtt_emulation": "propagation delay (links)",
            "fair_share_kbps": round(fair, 1),
            "q0_pkts": mod.Q0,
            "buffer_pkts": mod.DEPTH,
        }
        for algo, run in runs.items():
            s = mod.summarize_run(run, fair)
            sim = run["sim"]
            s["utilisation_bytes"] = _utilisation(run, self.p.capacity_pps * self.p.frame)
            if self.p.rate_pps is None:
                s["utilisation_pkts"] = None  # the lab's figure is of a packet-rate queue
            s["drops_exact_total"] = sim["drops"]
            s["drops_exact_after_warmup"] = sim["drops"] - sim["drops_at_warmup"]
            s["rd_departures"] = sim["rd_departures"]
            s["window_limited_pushes"] = sim["window_limited"]
            out[algo] = s
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        return [
            mod.plot_goodput(run_dir / "ficcrd-goodput.png", runs, self.p.fair_kbps),
            mod.plot_queue(run_dir / "ficcrd-queue.png", runs),
            mod.plot_senders(run_dir / "ficcrd-senders.png", runs),
        ]


def _utilisation(run: dict[str, Any], capacity_Bps: float) -> float | None:
    """Bytes leaving the bottleneck over the window / its capacity in data frames' bytes
    (RD clones are not in port_departures, as on BMv2)."""
    port = run["port"]
    warm, end = run["warmup_s"], run["run_s"]
    idx = [i for i, t in enumerate(port["t"]) if warm <= t < end]
    secs = sum(port["period_s"][i] for i in idx)
    dep = sum(port["departure_bytes"][i] for i in idx)
    return round(dep / (capacity_Bps * secs), 3) if secs else None


def lab_params(smoke: bool) -> Params:
    run, warm = mod.Ficcrd().timing(smoke)
    pps = float(mod.QUEUE_PPS)
    return Params(mod.FRAME, pps, pps, run, warm, None)


def paper_params(smoke: bool) -> Params:
    frame = 4096
    run, warm = (60.0, 20.0) if smoke else (200.0, 50.0)
    note = {
        "bottleneck": f"s1 -> s2 10 Mbit/s byte-rate link, 20 ms, depth {mod.DEPTH} pkt, "
        f"Q0 = {mod.Q0:g} pkt (the paper's)",
        "flows": f"{mod.FLOWS} simulated TCP Reno uploads h<i> -> r<i>, {frame} B frames "
        f"(MSS {frame - TCP_HEADER_BYTES}), receive window 128 KiB",
        "rtt": "link propagation delay: access links 2 ms, s0 -> s1 10 ms (h1, the "
        "paper's source 0), bottleneck 20 ms: base RTT 48 ms (h2-h10), 68 ms (h1)",
        "access_delay_ms": {f"h{i}": 2.0 for i in range(1, mod.FLOWS + 1)},
        "run_s": run,
        "goodput_window_s": [warm, run],
    }
    return Params(frame, 10 * MBIT_BPS / frame, None, run, warm, 128 * 1024, note)


# --------------------------------------------------------------------- networks
def lab_network() -> tuple[NetSpec, int]:
    """The lab's topology (``labdata/ficcrd.json``); each source's access delay on its
    link, both ways."""
    spec, _ = labdata.load("ficcrd")
    return spec, labdata.link_port(spec, "s1", "s2")


def paper_network(frame: int) -> tuple[NetSpec, int]:
    """FICCRD Fig. 2 with the lab's names: routers 10, 11, 12 are s0, s1, s2."""
    rate = 10 * MBIT_BPS
    b = NetBuilder(frame_bytes=frame)
    s1, s2, s0 = b.add_switch("s1"), b.add_switch("s2"), b.add_switch("s0")
    port, _ = b.add_link(s1, s2, rate, delay_s=0.020, depth=mod.DEPTH)
    b.add_link(s0, s1, rate, delay_s=0.010, depth=mod.DEPTH)
    b.add_host("h1", s0, rate, delay_s=0.002, depth=mod.DEPTH)
    for i in range(2, mod.FLOWS + 1):
        b.add_host(f"h{i}", s1, rate, delay_s=0.002, depth=mod.DEPTH)
    for i in range(1, mod.FLOWS + 1):
        b.add_host(f"r{i}", s2, rate, delay_s=0.002, depth=mod.DEPTH)
    return b.build(), port


# --------------------------------------------------------------------- measurement
@dataclass
class Pinger:
    """``count`` echo requests from ``src`` to ``dst`` ``gap_s`` apart; RTTs in ms."""

    clock: Clock
    src: SimHost
    dst: SimHost
    count: int = mod.BASE_PINGS
    gap_s: float = PING_GAP_S
    rtts_ms: list[float] = field(default_factory=list)

    def start(self, at: float) -> None:
        self.sport = self.src.bind(self._reply)
        if ECHO_PORT not in self.dst.handlers:
            self.dst.bind(lambda p, h=self.dst: _echo(h, p), ECHO_PORT)
        for i in range(self.count):
            self.clock.at(at + i * self.gap_s, self._send)

    def _send(self) -> None:
        pkt = Packet(self.src.ip, self.dst.ip, self.sport, ECHO_PORT, PING_BYTES, UDP)
        pkt.created = self.clock.now
        self.src.send(pkt)

    def _reply(self, pkt: Packet) -> None:
        self.rtts_ms.append((self.clock.now - pkt.created) * 1000)

    def summary(self) -> dict[str, float] | None:
        if not self.rtts_ms:
            return None
        return {
            "min": round(min(self.rtts_ms), 3),
            "mean": round(sum(self.rtts_ms) / len(self.rtts_ms), 3),
        }


def _echo(host: SimHost, pkt: Packet) -> None:
    reply = Packet(host.ip, pkt.src, ECHO_PORT, pkt.sport, pkt.size, UDP)
    reply.created = pkt.created
    host.send(reply)


@dataclass
class FlowLog:
    """A sender's log as the lab's ``tcp_cm`` writes it: every ``SAMPLE_S`` the goodput
    (acknowledged bytes), the smoothed RTT and the retransmissions so far."""

    clock: Clock
    flow: TcpFlow
    t0: float
    warmup_s: float
    t: list[float] = field(default_factory=list)
    goodput_kbps: list[float] = field(default_factory=list)
    rtt_ms: list[float] = field(default_factory=list)
    retrans: list[int] = field(default_factory=list)
    acked_at_warmup: int | None = None
    _last: int = 0

    def at_warmup(self) -> None:
        self.acked_at_warmup = self.acked()

    def acked(self) -> int:
        f = self.flow
        return min(f.una, f.nseg) * f.cfg.mss

    def sample(self) -> None:
        now = self.clock.now - self.t0
        acked = self.acked()
        self.t.append(round(now, 3))
        self.goodput_kbps.append(round((acked - self._last) * 8 / 1000 / mod.SAMPLE_S, 1))
        srtt = self.flow.rtt.srtt_us
        self.rtt_ms.append(round(srtt / 1000, 2) if srtt else 0.0)
        self.retrans.append(self.flow.retransmits)
        self._last = acked

    def result(self, end_s: float) -> dict[str, Any]:
        acked = self.acked()
        steady = None
        if self.acked_at_warmup is not None and end_s > self.warmup_s:
            steady = round((acked - self.acked_at_warmup) * 8 / 1000 / (end_s - self.warmup_s), 1)
        return {
            "t": self.t,
            "goodput_kbps": self.goodput_kbps,
            "rtt_ms": self.rtt_ms,
            "retrans": self.retrans,
            "steady_goodput_kbps": steady,
            "acked_bytes": acked,
            "total_retrans": self.flow.retransmits,
        }


# --------------------------------------------------------------------- the lab
@dataclass
class FiccrdLab:
    scale: str
    smoke: bool = False
    duration_s: float | None = None  # shorten the runs (warm-up keeps its fraction)
    params: Params = field(init=False)

    def __post_init__(self) -> None:
        p = paper_params(self.smoke) if self.scale == "paper" else lab_params(self.smoke)
        if self.duration_s is not None:
            warm = round(self.duration_s * p.warmup_s / p.run_s, 3)
            p = replace(p, run_s=self.duration_s, warmup_s=warm)
        self.params = p
        self.sc = SimFiccrdScenario(p)

    def network(self) -> tuple[NetSpec, int]:
        if self.scale == "paper":
            return paper_network(self.params.frame)
        return lab_network()

    def note(self) -> dict[str, Any]:
        p = self.params
        out: dict[str, Any] = dict(p.note)
        out["run_s"], out["goodput_window_s"] = p.run_s, [p.warmup_s, p.run_s]
        out["fair_share_kbps"] = round(p.fair_kbps, 1)
        out["tcp"] = (
            f"simulator TCP (sim/fairgate_sim/tcp.py): Reno/NewReno, IW10, MSS {p.mss}, an "
            "ack per segment, receive window "
            + (f"{p.rwnd_bytes} B" if p.rwnd_bytes else "6 MiB (Linux's tcp_rmem max)")
            + "; no SACK, delayed acks or pacing (the lab: Linux Reno)"
        )
        if self.scale == "lab":
            out["rtt"] = (
                "the lab's access delays as link propagation delay on each source's "
                "access link (both ways) instead of delay-line nodes"
            )
        return out

    def simlab(self) -> SimLab:
        end = START_S + START_SPREAD_S + self.params.run_s
        return SimLab(self.sc, end, self.note(), self.run, "propagation delay", self.smoke)

    def run(self, algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        p = self.params
        spec, port = self.network()
        net = Network(spec)
        ficcrd = FiccrdConfig() if algo == "ficcrd" else None
        cfg = ControlConfig(algo="none", period_s=0.1, ficcrd=ficcrd)
        ctl = SimController(net, cfg, MemoryRecorder(records))
        clock = net.clock
        n = mod.FLOWS
        pingers = {}
        for i in range(1, n + 1):
            pinger = Pinger(clock, net.hosts[f"h{i}"], net.hosts[f"r{i}"])
            pinger.start(0.0)
            pingers[f"h{i}"] = pinger
        server_kw: dict[str, Any] = {"header_bytes": TCP_HEADER_BYTES}
        tcp_kw: dict[str, Any] = {"mss": p.mss}
        if p.rwnd_bytes is not None:
            server_kw["rwnd_bytes"] = tcp_kw["rwnd_bytes"] = p.rwnd_bytes
        for i in range(1, n + 1):
            TcpServer(clock, net.hosts[f"r{i}"], **server_kw)
        rng = random.Random(seed)
        logs: dict[str, FlowLog] = {}
        for i in range(1, n + 1):
            flow = TcpFlow(
                clock, net.hosts[f"h{i}"], net.ip(f"r{i}"), FLOW_BYTES, TcpConfig(**tcp_kw)
            )
            clock.at(START_S + rng.uniform(0, START_SPREAD_S), flow.start)
            logs[f"h{i}"] = FlowLog(clock, flow, START_S, p.warmup_s)
        out_port = net.switches["s1"].ports[port]
        probe = QueueProbe(net, [("s1", port)])
        probe.start()
        drops_at: dict[str, int] = {}

        def sample() -> None:
            for log in logs.values():
                log.sample()
            clock.after(mod.SAMPLE_S, sample)

        def warmed_up() -> None:
            for log in logs.values():
                log.at_warmup()
            drops_at["warmup"] = out_port.stats.dropped

        clock.at(START_S + mod.SAMPLE_S, sample)
        clock.at(START_S + p.warmup_s, warmed_up)
        end = START_S + p.run_s
        net.run(end + 1e-6)
        records_ = ctl.recorder.records
        cols = mod.port_columns(records_, "s1", port, START_S)
        rs = [r for r in records_ if r["switch"] == "s1" and r["port"] == port]
        cols["queue_pkts_histogram"] = cols["queue_pkts"]
        cols["queue_pkts"] = probe.period_means(
            ("s1", port), [r["t"] for r in rs], [r["period_s"] for r in rs]
        )
        cols["departure_bytes"] = [r["departure_Bps"] * r["period_s"] for r in rs]
        rd_departures = sum(r.get("rd_emitted", 0) for r in rs)
        result = {
            "run_s": p.run_s,
            "warmup_s": p.warmup_s,
            "base_rtt_ms": {h: pg.summary() for h, pg in pingers.items()},
            "delay_lines": {},
            "flows": {h: log.result(p.run_s) for h, log in logs.items()},
            "port": cols,
            "ficcrd": mod.ficcrd_totals(records_),
            "sim": {
                "drops": out_port.stats.dropped,
                "drops_at_warmup": drops_at.get("warmup", 0),
                "rd_departures": rd_departures,
                "window_limited": {h: log.flow.window_limited for h, log in logs.items()},
            },
        }
        return result, net


def ficcrd(scale: str, smoke: bool) -> SimLab:
    return FiccrdLab(scale, smoke).simlab()
