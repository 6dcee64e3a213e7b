"""The labs' TCP scenarios in the simulator: ``session-control`` and ``fct``.

As ``labs.py`` does for the UDP scenarios, the lab's own scenario classes
(``fairgate_topo.scenarios``) give the topology, workload, timing, ``summarize`` and
``plot``; this module produces each run's result in the shape the lab's ``run``
returns, from ``TcpFlow``s (``tcp.py``), the hosts' sans-IO UDP cores and the real
controller agent. ``paper`` scale runs the papers' own numbers (Kasera et al.: 10
Mbit/s, 100 ms, 1000 flows/s; QFCP Fig. 1: 150 Mbit/s, RTPD 100 ms, 625 flows/s).
"""

from __future__ import annotations

import math
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairgate_controller.agent import ControlConfig
from fairgate_controller.entities import METER_BURST_DEFAULT
from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import Mode, SenderConfig
from fairgate_hosts.traffic.records import summarize, write_jsonl
from fairgate_hosts.traffic.workload import FlowSpec, Workload
from fairgate_sim.control import MemoryRecorder, SimController
from fairgate_sim.network import Network
from fairgate_sim.runner import RunConfig
from fairgate_sim.simlab import SimLab
from fairgate_sim.tcp import TCP_HEADER_BYTES, TcpConfig, TcpServer
from fairgate_sim.tcp_traffic import TcpClient
from fairgate_sim.topo import FAST_BPS, NetBuilder, NetSpec, from_lab
from fairgate_sim.udp import UdpReceiver, UdpSender
from fairgate_topo.scenarios import fct as fct_mod
from fairgate_topo.scenarios import plots
from fairgate_topo.scenarios import session_control as sc_mod

MBIT_BPS = 1e6 / 8
PAPER_STATIC = ("static-65", "static-100", "static-150", "static-250")  # Table I


class SimSessionControl(sc_mod.SessionControl):  # type: ignore[misc]
    """The lab's scenario with the run list of a scale (paper: Table I's admit rates)."""

    def __init__(self, algos: tuple[str, ...]) -> None:
        self.algos = algos


# --------------------------------------------------------------------- session control
@dataclass
class SessionLab:
    """Kasera et al. Fig. 2 / Tables I-II: TCP uploads through one SYN-gated port."""

    scale: str
    smoke: bool = False
    duration_s: float | None = None  # shorten every run (warm-up keeps its fraction)

    def __post_init__(self) -> None:
        mod = sc_mod
        self.mod = mod
        paper = self.scale == "paper"
        base = mod.SessionControl()
        if self.smoke:
            algos = base.smoke_algos()
        elif paper:
            algos = ("none", *PAPER_STATIC, "strategy1", "strategy2")
        else:
            algos = base.algos
        self.sc = SimSessionControl(algos)
        self.arrivals_fps = 1000.0 if paper else mod.ARRIVALS_FPS
        self.link_mbps = 10.0  # paper only
        self.one_way_s = 0.1 if paper else 0.0  # the paper's link delay; the lab has none
        self.rtt_emulation = "propagation delay (links)" if paper else "none (queueing only)"

    def timing(self, algo: str) -> tuple[float, float]:
        run, warm = self.sc.timing(algo, self.smoke)
        if self.duration_s is None:
            return run, warm
        return self.duration_s, round(self.duration_s * warm / run, 3)

    def network(self) -> tuple[NetSpec, int]:
        """The spec and the gated port on s1."""
        if self.scale == "lab":
            lab = self.sc.topology(False)
            return from_lab(lab), lab.link("s1", "s2").a_port
        b = NetBuilder(frame_bytes=1448 + TCP_HEADER_BYTES)
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        port, _ = b.add_link(
            s1,
            s2,
            self.link_mbps * MBIT_BPS,
            delay_s=self.one_way_s,
            depth=self.mod.DEPTH,
            reverse_Bps=FAST_BPS,
            admission=True,
        )
        b.add_host("client", s1, FAST_BPS)
        b.add_host("server", s2, FAST_BPS)
        return b.build(), port

    def note(self) -> dict[str, Any]:
        """What the simulator changes against the lab's ``scaling``."""
        out: dict[str, Any] = {
            "runs_s": {"static_and_none": self.timing("none"), "search": self.timing("strategy1")}
        }
        if self.scale == "paper":
            out["bottleneck"] = (
                f"{self.link_mbps:g} Mbit/s byte-rate link, {self.one_way_s * 1000:.0f} ms "
                f"one way (RTT {2 * self.one_way_s * 1000:.0f} ms + queueing), depth "
                f"{self.mod.DEPTH} packets (the paper's buffer is not given)"
            )
            out["workload"] = (
                f"Poisson {self.arrivals_fps:g} flows/s, Pareto shape {self.mod.SHAPE}, "
                f"mean {self.mod.MEAN_BYTES} B"
            )
        out["tcp"] = (
            "simulator TCP (sim/fairgate_sim/tcp.py): Reno/NewReno, IW10, MSS 1448, "
            "tcp_syn_retries 3, an ack per segment; static runs keep the controller "
            "running (session control off), the lab stops it"
        )
        return out

    def simlab(self) -> SimLab:
        end = max(self.timing(a)[0] for a in self.sc.algos) + self.mod.DRAIN_S
        return SimLab(self.sc, end, self.note(), self.run, self.rtt_emulation, self.smoke)

    def run(self, algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        """One run; the client's flow records go to ``hosts/`` beside ``records``."""
        if records is None:
            with tempfile.TemporaryDirectory(prefix="fg-sim-") as tmp:
                return self._run(algo, seed, None, Path(tmp))
        return self._run(algo, seed, records, records.parent / "hosts")

    def _run(
        self, algo: str, seed: int, records: Path | None, hosts: Path
    ) -> tuple[dict[str, Any], Network]:
        mod = self.mod
        duration, warmup = self.timing(algo)
        spec, port = self.network()
        net = Network(spec)
        session = algo if algo.startswith("strategy") else "off"
        cfg = ControlConfig(algo="none", session=session, session_window_s=mod.SESSION_WINDOW_S)
        ctl = SimController(net, cfg, MemoryRecorder(records))
        static = int(algo.split("-")[1]) if algo.startswith("static-") else None
        if static is not None:  # the lab writes the meter itself (cir = pir, burst 5)
            net.switches["s1"].set_meter(port, float(static), METER_BURST_DEFAULT)
        TcpServer(net.clock, net.hosts["server"])
        wl = Workload(self.arrivals_fps, mod.SHAPE, mod.MEAN_BYTES, seed)
        client = TcpClient(
            net.clock,
            net.hosts["client"],
            net.ip("server"),
            wl.flows(duration),
            TcpConfig(syn_retries=3),
            # The lab's socket cap is its process's file limit; the paper has none.
            max_open=mod.MAX_OPEN if self.scale == "lab" else None,
        )
        end = duration + mod.DRAIN_S
        net.run(end)
        client.finish()
        summary = summarize(
            client.records,
            duration_s=duration,
            warmup_s=warmup,
            extra={
                "run": client.stats(),
                "workload": {
                    "rate_per_s": self.arrivals_fps,
                    "shape": mod.SHAPE,
                    "mean_bytes": mod.MEAN_BYTES,
                    "seed": seed,
                },
            },
        )
        hosts.mkdir(parents=True, exist_ok=True)
        flows_path = hosts / "client-flows.jsonl"
        write_jsonl(flows_path, (r.as_json() for r in client.records))
        result = {
            "summary": summary,
            "completions": mod.completion_series(flows_path),
            "admit": mod.admit_series(ctl.recorder.records, 0.0) if static is None else [],
            "static_fps": static,
            "warmup_s": warmup,
        }
        return result, net


# --------------------------------------------------------------------- fct
def pareto_flows(
    rate_fps: float, mean_pkts: float, shape: float, max_pkts: int, duration_s: float, seed: int
) -> list[tuple[float, int]]:
    """(arrival s, size in packets): the lab's ``fct.workload`` with other parameters."""
    rng = random.Random(seed)
    xm = mean_pkts * (shape - 1) / shape
    out = []
    t = rng.expovariate(rate_fps)
    while t < duration_s:
        pkts = min(max_pkts, xm / (1.0 - rng.random()) ** (1 / shape))
        out.append((round(t, 6), max(1, math.ceil(pkts))))
        t += rng.expovariate(rate_fps)
    return out


class SimFct(fct_mod.Fct):  # type: ignore[misc]
    """The lab's Fct with the link, arrivals, timing and run list of a scale; sizes stay
    in the lab's units (packets x 1200 B) so its bins and keys apply."""

    def __init__(
        self,
        link_pps: float,
        rate_fps: float,
        times: tuple[float, float],
        algos: tuple[str, ...],
    ) -> None:
        self.link_pps, self.rate_fps, self._times, self.algos = link_pps, rate_fps, times, algos

    def times(self, smoke: bool) -> tuple[float, float]:
        return self._times

    def summarize(self, runs: dict[str, dict[str, Any]], smoke: bool) -> dict[str, Any]:
        out = super().summarize(runs, smoke)
        out["arrivals_per_s"] = round(self.rate_fps, 2)
        arrivals = self._times[0]
        for algo, run in runs.items():
            pkts = sum(f["bytes"] for f in run["flows"] if f["t"] < arrivals) / fct_mod.PAYLOAD
            out[algo]["offered_load"] = round(pkts / arrivals / self.link_pps, 2)
        return out

    def plot(self, run_dir: Path, runs: dict[str, dict[str, Any]]) -> list[Path]:
        """The lab's plot with this scale's C in the ideal line."""
        fig, axes = plots.figure(1, "Mean FCT vs flow size, load ~1 (QFCP Fig. 1)", height=4)
        ax = axes[0]
        top = 0
        for algo, run in runs.items():
            bins: dict[int, list[float]] = {}
            for f in run["flows"]:
                if f["fct_s"] is not None:
                    b = fct_mod.size_bin(f["bytes"] / fct_mod.PAYLOAD)
                    bins.setdefault(b, []).append(f["fct_s"])
            top = max([top, *bins])
            xs = [2**b * 1.5 for b in sorted(bins)]
            ys = [sum(bins[b]) / len(bins[b]) for b in sorted(bins)]
            ax.plot(xs, ys, "o-", label=algo)
        sizes = [2**b * 1.5 for b in range(top + 1)]
        ideal = [fct_mod.RTT_MS / 1000 + s / self.link_pps for s in sizes]
        ax.plot(sizes, ideal, "k:", label="1 RTT + size / C")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("flow size (packets, bin centre)")
        ax.set_ylabel("mean FCT (s)")
        ax.legend()
        return [plots.save(fig, run_dir / "fct.png")]


@dataclass
class FctLab:
    """QFCP Fig. 1: Poisson arrivals of Pareto-sized flows at load 1 on one bottleneck;
    qfcp and rcp with the hosts' paced senders (one ``SenderCore`` per flow), tcp with
    the simulator's TCP. Every algorithm gets the same flows and the same 100 ms RTT
    (the receivers hold acks; for TCP the server holds everything it sends)."""

    scale: str
    smoke: bool = False
    duration_s: float | None = None  # seconds of arrivals

    PAPER_LINK_MBPS = 150.0
    PAPER_FPS = 625.0
    PAPER_PACKET = 1000  # bytes per packet (payload)
    PAPER_MEAN_PKTS = 30.0
    PAPER_MAX_PKTS = 100_000  # a cap only; the lab truncates at 1000
    PAPER_FLOWS = 60_000

    def __post_init__(self) -> None:
        mod = fct_mod
        self.mod = mod
        paper = self.scale == "paper"
        if paper:
            self.link_pps = self.PAPER_LINK_MBPS * MBIT_BPS / self.PAPER_PACKET
            self.rate_fps = self.PAPER_FPS
            self.packet = self.PAPER_PACKET
            arrivals = 10.0 if self.smoke else self.PAPER_FLOWS / self.PAPER_FPS
            # The paper's ratio of initial rate to C kept: 400 kbit/s of 120 pkt/s.
            lab_c_kbps = mod.LINK_PPS * (mod.PAYLOAD + 42) * 8 / 1000
            scale_c = self.PAPER_LINK_MBPS * 1000 / lab_c_kbps
            self.initial_kbps = round(mod.Fct.initial_kbps * scale_c)
        else:
            self.link_pps = float(mod.LINK_PPS)
            self.rate_fps = mod.arrival_rate()
            self.packet = mod.PAYLOAD
            arrivals = mod.Fct().times(self.smoke)[0]
            self.initial_kbps = mod.Fct.initial_kbps
        drain = mod.Fct().times(self.smoke)[1]
        if self.duration_s is not None:
            arrivals = self.duration_s
        algos = mod.Fct().smoke_algos() if self.smoke else mod.Fct.algos
        self.sc = SimFct(self.link_pps, self.rate_fps, (arrivals, drain), algos)
        # Paper: one bandwidth-delay product (the paper does not give its buffer).
        self.depth = math.ceil(self.link_pps * mod.RTT_MS / 1000) if paper else 64

    def workload(self, seed: int) -> list[tuple[float, int]]:
        arrivals = self.sc.times(False)[0]
        if self.scale == "lab":
            return [(t, b // self.mod.PAYLOAD) for t, b in self.mod.workload(arrivals, seed)]
        return pareto_flows(
            self.rate_fps, self.PAPER_MEAN_PKTS, self.mod.SHAPE, self.PAPER_MAX_PKTS, arrivals, seed
        )

    def network(self) -> NetSpec:
        mod = self.mod
        if self.scale == "lab":
            return from_lab(self.sc.topology(False))
        b = NetBuilder(frame_bytes=self.packet + 42)
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        rate = self.PAPER_LINK_MBPS * MBIT_BPS
        fast = max(FAST_BPS, 4 * rate)
        b.add_link(s1, s2, rate, depth=self.depth, reverse_Bps=fast)
        for i in range(1, mod.SENDER_HOSTS + 1):
            b.add_host(f"h{i}", s1, fast)
        b.add_host("r1", s2, fast)
        return b.build()

    def note(self) -> dict[str, Any]:
        """What the simulator changes against the lab's ``scaling``."""
        out: dict[str, Any] = {}
        out["rtt_note"] = (
            "every algorithm 100 ms: UDP receivers hold acks, the simulated TCP server holds "
            "every packet it sends (the lab's kernel TCP had no propagation delay)"
        )
        out["tcp"] = (
            f"simulator TCP (sim/fairgate_sim/tcp.py): Reno/NewReno, IW10, MSS {self.packet} "
            "(one flow packet = one segment), an ack per segment, same flows as qfcp/rcp"
        )
        if self.scale == "paper":
            out.update(
                bottleneck_pps=round(self.link_pps),
                bottleneck_mbps=self.PAPER_LINK_MBPS,
                depth_pkts=self.depth,
                sizes=f"Pareto shape {self.mod.SHAPE}, mean {self.PAPER_MEAN_PKTS:g} packets "
                f"of {self.packet} B, capped at {self.PAPER_MAX_PKTS}; reported in the lab's "
                f"units (packets x {self.mod.PAYLOAD} B)",
                arrivals_per_s=self.rate_fps,
                initial_rate_kbps=self.initial_kbps,
            )
        return out

    def simlab(self) -> SimLab:
        end = sum(self.sc.times(self.smoke))
        return SimLab(self.sc, end, self.note(), self.run, "ack-delay", self.smoke)

    def run(self, algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        arrivals, drain = self.sc.times(self.smoke)
        end = arrivals + drain
        flows = self.workload(seed)
        net = Network(self.network())
        rc = RunConfig(algo="none" if algo == "tcp" else algo)  # type: ignore[arg-type]
        SimController(net, rc.control(), MemoryRecorder(records))
        hold = self.mod.RTT_MS / 1000
        if algo == "tcp":
            fct = self._run_tcp(net, flows, hold, end)
        else:
            fct = self._run_udp(net, flows, hold, end)
        unit = self.mod.PAYLOAD
        result = {
            "flows": [
                {"t": t, "bytes": pkts * unit, "fct_s": fct.get(i)}
                for i, (t, pkts) in enumerate(flows)
            ]
        }
        return result, net

    def _run_tcp(
        self, net: Network, flows: list[tuple[float, int]], hold: float, end: float
    ) -> dict[int, float | None]:
        TcpServer(net.clock, net.hosts["r1"], hold_s=hold)
        specs = [FlowSpec(i, t, pkts * self.packet) for i, (t, pkts) in enumerate(flows)]
        client = TcpClient(
            net.clock, net.hosts["h1"], net.ip("r1"), specs, TcpConfig(mss=self.packet)
        )
        net.run(end)
        client.finish()
        return {r.flow: r.fct_s for r in client.records}

    def _run_udp(
        self, net: Network, flows: list[tuple[float, int]], hold: float, end: float
    ) -> dict[int, float | None]:
        UdpReceiver(net.clock, net.hosts["r1"], ReceiverCore(ack_delay_us=round(hold * 1e6)))
        hosts = self.mod.SENDER_HOSTS
        running: dict[int, UdpSender] = {}
        fct: dict[int, float | None] = {}
        dst = net.ip("r1")

        def start(i: int) -> None:
            if i + 1 < len(flows):
                net.clock.at(flows[i + 1][0], start, i + 1)
            t, pkts = flows[i]
            cfg = SenderConfig(
                mode=Mode.QFCP,
                packet_bytes=self.packet,
                flow_bytes=pkts * self.packet,
                initial_rate_kbps=self.initial_kbps,
                give_up_us=30_000_000,
            )
            host = net.hosts[f"h{i % hosts + 1}"]
            running[i] = UdpSender(net.clock, host, dst, cfg, f"f{i}", t)

        def sweep() -> None:  # keep only running senders in memory
            for i in [i for i, s in running.items() if s.finished]:
                core = running.pop(i).core
                ok = core.outcome == "completed" and core.completion_time_us is not None
                fct[i] = core.completion_time_us / 1e6 if ok else None  # type: ignore[operator]
            net.clock.after(1.0, sweep)

        if flows:
            net.clock.at(flows[0][0], start, 0)
        net.clock.at(1.0, sweep)
        net.run(end)
        sweep()
        return fct


# --------------------------------------------------------------------- registry
def session_control(scale: str, smoke: bool) -> SimLab:
    return SessionLab(scale, smoke).simlab()


def fct(scale: str, smoke: bool) -> SimLab:
    return FctLab(scale, smoke).simlab()
