"""The labs' rtt-fairness, lestas-dynamics and parking-lot scenarios in the simulator.

``lab`` scale is the BMv2 lab itself (its topology, queue rates, ack delays, schedule).
``paper`` scale:

- rtt-fairness: the paper's 45 Mbit/s link (byte rate), same RTTs and schedule; flow
  rates reported in lab units (as ``labs.py`` does for QFCP Figs. 2 and 4).
- lestas-dynamics: Lestas Figs. 6-7 as published: 155 Mbit/s, 1000 B packets, 30 -> 10
  -> 50 users at 30 / 45 s (end 60 s), q_ref = 100 packets, 20 ms bottleneck, access
  links 20 ms + 0.5 ms per user (RTT 80 + i ms for user i), buffer one BDP.
- parking-lot: Lestas Figs. 8-9 as published: 8 links of 155 Mbit/s (link 4: 80),
  15 ms each, 20 long users and 20 one-hop users per link, q_ref = 100 packets, buffer
  one BDP of the long users' RTT. Flow rates are group totals (pkt/s of 1000 B).

At paper scale the rates and queues are in the simulated packets (1000 B for Lestas),
through subclasses of the lab scenarios with the paper's numbers, so ``summarize`` and
``plot`` are the lab's own code. The queue column is then the *exact* queue (sampled
every 5 ms, averaged per control period), not the controller's histogram (which the
controller reads and acts on): its buckets span the whole buffer (one BDP, 2499 packets
at 155 Mbit/s), 10 packets wide up to 2 q_ref and growing geometrically above
(``fairgate_controller.buckets``), so it reads the queue to a few packets near q_ref and
to about 15 % above.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from fairgate_sim.labs import PAPER_BPS_PER_MBIT
from fairgate_sim.network import Network
from fairgate_sim.runner import Flow
from fairgate_sim.simlab import FlowLab, FlowRun, SimLab, start_flows
from fairgate_sim.topo import FAST_BPS, NetBuilder, from_lab
from fairgate_topo.scenarios import lestas_dynamics as ld
from fairgate_topo.scenarios import parking_lot as pl
from fairgate_topo.scenarios import rtt_fairness as rf
from fairgate_topo.scenarios.series import port_drops

PAPER_FRAME = 1000  # Lestas: 1000 B packets (958 B UDP payload + 42 B headers)
PAPER_Q_REF = 100  # packets
HOSTS_PER_SWITCH = 14  # 15 counted ports, one for the link


def _pps(mbps: float, frame: int) -> float:
    return mbps * PAPER_BPS_PER_MBIT / frame


def _flows(lab_flows: list[Any]) -> list[Flow]:
    return [Flow(f.name, f.src, f.dst, f.start_s, f.stop_s) for f in lab_flows]


# --------------------------------------------------------------------------- rtt-fairness
def rtt_fairness(scale: str, smoke: bool) -> SimLab:
    sc = rf.RttFairness()
    dur = sc.duration(smoke)
    flows = [Flow(f"rtt{int(r)}ms", f"h{i}", f"r{i}", 0.0, dur) for i, r in ((1, 20), (2, 200))]
    delays = {"r1": rf.RTTS_MS[0] / 1000, "r2": rf.RTTS_MS[1] / 1000}
    if scale == "lab":
        topo = sc.topology(smoke)
        spec, factor = from_lab(topo), 1.0
        key = ("s1", topo.link("s1", "s2").a_port)
        note = {"simulated": "the lab's BMv2 queue rate (packets/s), same RTTs and schedule"}
    else:
        b = NetBuilder()
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        rate = rf.LINK * PAPER_BPS_PER_MBIT
        fast = max(FAST_BPS, 4 * rate)
        port, _ = b.add_link(s1, s2, rate, reverse_Bps=fast)
        for h, sw in (("h1", s1), ("h2", s1), ("r1", s2), ("r2", s2)):
            b.add_host(h, sw, fast)
        spec = b.build()
        factor = (PAPER_BPS_PER_MBIT / spec.frame_bytes) / rf.UNIT_PPS
        key = ("s1", port)
        note = {
            "simulated": "the paper's 45 Mbit/s (byte-rate link), same RTTs and schedule",
            "flow_rate_unit": f"flow rates in lab units: simulated pkt/s / {factor:.3f}",
        }
    lab = FlowLab(spec, flows, delays, dur + 1.0, factor=factor)

    def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        r = _run(lab, algo, seed, records, [key])
        return {
            "duration_s": dur,
            "flows": {f.name: r.flow_series(f.name) for f in flows},
            "link": r.port_series(*key),
        }, r.net

    return SimLab(sc, lab.end_s, note, run, smoke=smoke)


def _run(
    lab: FlowLab, algo: str, seed: int, records: Path | None, watch: list[tuple[str, int]]
) -> FlowRun:
    r = start_flows(lab, algo, seed, records, watch)
    r.net.run(lab.end_s)
    return r


# --------------------------------------------------------------------------- lestas-dynamics
class LestasDynamicsPaper(ld.LestasDynamics):
    """Figs. 6-7 with the paper's numbers (the lab's summarize and plot)."""

    link_pps = _pps(155, PAPER_FRAME)
    users = (30, 10, 50)
    q_ref_1500 = PAPER_Q_REF * PAPER_FRAME / 1500
    frame_bytes = PAPER_FRAME
    link_delay_s = 0.020

    def __init__(self) -> None:
        # buffer: one bandwidth-delay product at the longest RTT
        self.depth = round(self.link_pps * self.rtt_s(max(self.users) - 1))

    def rtt_s(self, i: int) -> float:
        """User i + 1's round-trip propagation delay: 4 x 20 ms + i x 1 ms."""
        return 4 * self.link_delay_s + i * 0.001

    def times(self, smoke: bool) -> tuple[float, float, float]:
        return (10.0, 15.0, 22.0) if smoke else (30.0, 45.0, 60.0)

    def scaling(self, smoke: bool) -> dict[str, Any]:
        leave, join, end = self.times(smoke)
        return {
            "bottleneck_mbps": 155,
            "bottleneck_pps": round(self.link_pps, 1),
            "packet_bytes": PAPER_FRAME,
            "users": list(self.users),
            "leave_join_end_s": [leave, join, end],
            "rtt_ms": f"{self.rtt_s(0) * 1000:.0f} + i ms for user i + 1 (20 ms bottleneck, "
            "access links 20 ms + 0.5 ms per user, both ways)",
            "q_ref": f"{PAPER_Q_REF} packets of {PAPER_FRAME} B",
            "buffer_pkts": self.depth,
            "queue": "exact (sampled every 5 ms, mean per control period)",
            "paper": "as published (no scaling)",
        }


def _spread_hosts(
    b: NetBuilder, src_sw: str, dst_sw: str, n: int, rate: float, base_s: float
) -> list[tuple[str, str]]:
    """(sender host, receiver host) of users 0..n-1 over at most 14 + 14 hosts:
    user i = k + 14 j sends from h<k+1> (access delay base + 0.5 ms k) to
    r<j+1> (access delay 7 ms j), so its RTT grows by exactly 1 ms per user."""
    fast = max(FAST_BPS, 4 * rate)
    k_max = min(n, HOSTS_PER_SWITCH)
    j_max = min(HOSTS_PER_SWITCH, (n + k_max - 1) // k_max)
    for k in range(k_max):
        b.add_host(f"h{k + 1}", src_sw, fast, delay_s=base_s + 0.0005 * k)
    for j in range(j_max):
        b.add_host(f"r{j + 1}", dst_sw, fast, delay_s=0.007 * j)
    return [(f"h{i % k_max + 1}", f"r{(i // k_max) % j_max + 1}") for i in range(n)]


def lestas_dynamics(scale: str, smoke: bool) -> SimLab:
    if scale == "lab":
        sc: ld.LestasDynamics = ld.LestasDynamics()
        topo = sc.topology(smoke)
        spec = from_lab(topo)
        key = ("s1", topo.link("s1", "s2").a_port)
        flows = _flows(sc.flows(smoke))
        user_of = {f.name: int(f.src[1:]) for f in flows}
        lab = FlowLab(spec, flows, {"r1": ld.RTT_MS / 1000}, 0.0, sc.q_ref_1500)
        note = {"simulated": "the lab's BMv2 queue rate (packets/s), ack delay and schedule"}
        emulation = "ack-delay"
    else:
        sc = paper = LestasDynamicsPaper()
        b = NetBuilder(frame_bytes=PAPER_FRAME)
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        rate = 155 * PAPER_BPS_PER_MBIT
        port, _ = b.add_link(
            s1, s2, rate, delay_s=paper.link_delay_s, depth=paper.depth, reverse_Bps=4 * rate
        )
        pairs = _spread_hosts(b, s1, s2, max(paper.users), rate, paper.link_delay_s)
        spec = b.build()
        key = ("s1", port)
        flows = []
        user_of = {}
        for f in sc.flows(smoke):
            i = int(f.src[1:])
            src, dst = pairs[i - 1]
            flows.append(Flow(f.name, src, dst, f.start_s, f.stop_s))
            user_of[f.name] = i
        lab = FlowLab(spec, flows, {}, 0.0, paper.q_ref_1500, PAPER_FRAME - 42, exact_queue=True)
        note = {"simulated": "the paper's network (byte-rate links, propagation delays)"}
        emulation = "propagation"
    end = sc.times(smoke)[2]
    lab = replace(lab, end_s=end + 1.0)

    def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        r = _run(lab, algo, seed, records, [key])
        user_flows: dict[str, list[list[list[float]]]] = {
            f"user{i}": [] for i in range(1, max(sc.users) + 1)
        }
        for f in sorted(flows, key=lambda f: f.start_s):
            s = r.flow_series(f.name)
            if s:
                user_flows[f"user{user_of[f.name]}"].append(s)
        recs = r.records
        return {
            "users": {u: sorted(p for s in fl for p in s) for u, fl in user_flows.items()},
            "user_flows": user_flows,
            "schedule": [[f.name, f.start_s, f.stop_s] for f in flows],
            "leave_join_end_s": list(sc.times(smoke)),
            "windows": {f.name: r.window_series(f.name) for f in flows},
            "drops": {
                "after_transient": port_drops(recs, *key, 0.0, ld.TRANSIENT_S),
                "total": port_drops(recs, *key, 0.0, -1e9),
            },
            "sender_losses": r.losses([f.name for f in flows]),
            "link": r.port_series(*key),
            "sim_port_drops": r.net.switches[key[0]].ports[key[1]].stats.dropped,
        }, r.net

    return SimLab(sc, lab.end_s, note, run, emulation, smoke)


# --------------------------------------------------------------------------- parking-lot
class ParkingLotPaper(pl.ParkingLot):
    """Figs. 8-9 with the paper's numbers; flow rates are group totals (20 users)."""

    links_mbps = (155, 155, 155, 80, 155, 155, 155, 155)
    links_pps = tuple(_pps(c, PAPER_FRAME) for c in links_mbps)
    q_ref_frames = float(PAPER_Q_REF)
    users_per_group = 20
    hosts_per_group = 5  # access delays 0, 0.5, .. 2 ms: the users are not in lockstep
    link_delay_s = 0.015

    def long_rtt_s(self) -> float:
        return 2 * len(self.links_mbps) * self.link_delay_s

    def buffer_pkts(self) -> int:
        return round(max(self.links_pps) * self.long_rtt_s())

    def scaling(self, smoke: bool) -> dict[str, Any]:
        return {
            "links_mbps": list(self.links_mbps),
            "links_pps": [round(c, 1) for c in self.links_pps],
            "packet_bytes": PAPER_FRAME,
            "users": f"{self.users_per_group} long + {self.users_per_group} one-hop per link; "
            "flow rates are group totals",
            "rtt_ms": {
                "long": round(self.long_rtt_s() * 1000),
                "cross": round(2 * self.link_delay_s * 1000),
                "access": "+0..4 ms (5 hosts per group, 0.5 ms apart one way)",
            },
            "q_ref": f"{PAPER_Q_REF} packets of {PAPER_FRAME} B",
            "buffer_pkts": self.buffer_pkts(),
            "queue": "exact (sampled every 5 ms, mean per control period)",
            "duration_s": self.duration(smoke),
            "paper": "as published (no scaling)",
        }


def _sum_series(series: list[list[list[float]]]) -> list[list[float]]:
    """Sum of series sampled at the same instants (the sampler's grid)."""
    acc: dict[float, float] = {}
    for s in series:
        for t, v in s:
            acc[t] = acc.get(t, 0.0) + v
    return [[t, round(v, 2)] for t, v in sorted(acc.items())]


def parking_lot(scale: str, smoke: bool) -> SimLab:
    groups: dict[str, list[str]] = {}
    if scale == "lab":
        sc: pl.ParkingLot = pl.ParkingLot()
        topo = sc.topology(smoke)
        spec = from_lab(topo)
        k = len(pl.LINKS_PPS)
        dur = sc.duration(smoke)
        flows = [Flow("long", "h0", "r0", 0.0, dur)]
        flows += [Flow(f"cross{i}", f"h{i}", f"r{i}", 0.1 * i, dur) for i in range(1, k + 1)]
        groups = {f.name: [f.name] for f in flows}
        ports = [(f"s{i}", topo.link(f"s{i}", f"s{i + 1}").a_port) for i in range(1, k + 1)]
        delays = {"r0": 2 * k * pl.LINK_DELAY_MS / 1000}
        delays |= {f"r{i}": 2 * pl.LINK_DELAY_MS / 1000 for i in range(1, k + 1)}
        lab = FlowLab(spec, flows, delays, dur + 1.0, pl.Q_REF_1500)
        note = {"simulated": "the lab's BMv2 queue rates (packets/s), ack delays and schedule"}
        emulation = "ack-delay"
    else:
        sc = paper = ParkingLotPaper()
        dur = sc.duration(smoke)
        b = NetBuilder(frame_bytes=PAPER_FRAME)
        k = len(paper.links_mbps)
        sws = [b.add_switch(f"s{i}") for i in range(1, k + 2)]
        buffer = paper.buffer_pkts()
        fast = max(FAST_BPS, 4 * 155 * PAPER_BPS_PER_MBIT)
        ports = []
        for i, c in enumerate(paper.links_mbps):
            p, _ = b.add_link(
                sws[i], sws[i + 1], c * PAPER_BPS_PER_MBIT, delay_s=paper.link_delay_s, depth=buffer
            )
            ports.append((sws[i], p))
        flows = []
        hpg, upg = paper.hosts_per_group, paper.users_per_group
        for g, (a, z) in enumerate([(0, k), *[(i, i + 1) for i in range(k)]]):
            name = "long" if g == 0 else f"cross{g}"
            for h in range(hpg):
                b.add_host(f"h{g}_{h}", sws[a], fast, delay_s=0.0005 * h)
                b.add_host(f"r{g}_{h}", sws[z], fast)
            groups[name] = []
            for u in range(upg):
                fname = f"{name}-{u + 1}"
                start = 0.1 * g + 0.01 * u  # users enter a few ms apart
                flows.append(Flow(fname, f"h{g}_{u % hpg}", f"r{g}_{u % hpg}", start, dur))
                groups[name].append(fname)
        spec = b.build()
        q_ref = PAPER_Q_REF * PAPER_FRAME / 1500
        lab = FlowLab(spec, flows, {}, dur + 1.0, q_ref, PAPER_FRAME - 42, exact_queue=True)
        note = {"simulated": "the paper's network (byte-rate links, propagation delays)"}
        emulation = "propagation"

    def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        r = _run(lab, algo, seed, records, ports)
        recs = r.records
        return {
            "duration_s": dur,
            "flows": {
                g: _sum_series([r.flow_series(n) for n in names]) for g, names in groups.items()
            },
            "links": {f"link{i}": r.port_series(sw, p) for i, (sw, p) in enumerate(ports, start=1)},
            "drops_after_2s": sum(port_drops(recs, sw, p, 0.0, 2.0) for sw, p in ports),
            "sender_losses": r.losses([f.name for f in flows]),
            "sim_port_drops": sum(r.net.switches[sw].ports[p].stats.dropped for sw, p in ports),
        }, r.net

    return SimLab(sc, lab.end_s, note, run, emulation, smoke)
