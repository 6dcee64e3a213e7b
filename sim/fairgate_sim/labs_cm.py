"""The lab's cm-sharing scenario (CM paper Figs. 9-10) in the simulator.

The same schedule as the lab: one competing sender throughout; on the CM host four
independent senders, then ``apps.bulk`` (four flows, one macroflow), then
``apps.audio`` (layered audio + one bulk flow), each phase ``phase_s`` long. The CM
applications are the apps' own ``BulkApp`` / ``AudioApp`` over the sans-IO
``CongestionManager``, on ``cmhost.SimCMHost``.

``paper`` scale: Fig. 9's 1 Mbit/s bottleneck (byte rate), 120 ms, the audio layers
x2 (the paper's 10-320 kbit/s for Fig. 10's 0.5 Mbit/s, scaled to the 1 Mbit/s link);
rates reported in lab units (simulated pkt/s / factor) so the lab's summary applies.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_hosts.apps.audio import AudioApp, LayeredAudio
from fairgate_hosts.apps.bulk import BulkApp
from fairgate_hosts.cm.core import CMConfig
from fairgate_sim.cmhost import MemoryLog, SimCMHost
from fairgate_sim.labs import PAPER_BPS_PER_MBIT
from fairgate_sim.network import Network
from fairgate_sim.runner import Flow, port_series
from fairgate_sim.simlab import FlowLab, SimLab, start_flows
from fairgate_sim.topo import FAST_BPS, NetBuilder, from_lab
from fairgate_topo.scenarios import cm_sharing as cms

PAPER_LINK_MBPS = 1.0  # Fig. 9
PAPER_AUDIO_SCALE = 2  # Fig. 10's layers (0.5 Mbit/s link) on the 1 Mbit/s link


def _cm_config(max_rate_kbps: float = 100_000.0) -> CMConfig:
    """What ``apps.bulk`` / ``apps.audio`` build from the lab's arguments."""
    return CMConfig(
        mss=1200,
        initial_rate_Bps=192.0 * 125.0,
        max_rate_Bps=max_rate_kbps * 125.0,
        burst_bytes=2 * 1200,
    )


def cm_sharing(scale: str, smoke: bool) -> SimLab:
    sc = cms.CmSharing()
    d = sc.phase_s(smoke)
    if scale == "lab":
        topo = sc.topology(smoke)
        spec, factor, layers = from_lab(topo), 1.0, list(cms.LAYERS_KBPS)
        key = ("s1", topo.link("s1", "s2").a_port)
        note = {"simulated": "the lab's BMv2 queue rate (packets/s), ack delay and schedule"}
    else:
        b = NetBuilder()
        s1, s2 = b.add_switch("s1"), b.add_switch("s2")
        rate = PAPER_LINK_MBPS * PAPER_BPS_PER_MBIT
        port, _ = b.add_link(s1, s2, rate, reverse_Bps=FAST_BPS)
        for h, sw in (("h1", s1), ("h2", s1), ("r1", s2), ("r2", s2)):
            b.add_host(h, sw, FAST_BPS)
        spec = b.build()
        factor = (rate / spec.frame_bytes) / cms.LINK_PPS
        layers = [10 * PAPER_AUDIO_SCALE * 2**i for i in range(6)]
        key = ("s1", port)
        note = {
            "simulated": f"Fig. 9's {PAPER_LINK_MBPS:g} Mbit/s (byte-rate link), 120 ms; "
            f"audio layers {layers} kbit/s",
            "flow_rate_unit": f"rates in lab units: simulated pkt/s / {factor:.4f}",
        }
    flows = [Flow("competitor", "h2", "r2", 0.0, 3 * d)]
    flows += [Flow(f"indep{i}", "h1", "r1", 0.1 * i, d - 0.5) for i in range(1, cms.FLOWS + 1)]
    rtt = cms.RTT_MS / 1000
    lab = FlowLab(spec, flows, {"r1": rtt, "r2": rtt}, 3 * d + 1.0, factor=factor)

    def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
        r = start_flows(lab, algo, seed, records)
        net = r.net
        h1, r1 = net.hosts["h1"], net.ip("r1")
        bulk_host = SimCMHost(net.clock, h1, r1, _cm_config())
        bulk = BulkApp(
            MemoryLog(), [1.0] * cms.FLOWS, [0.0] * cms.FLOWS, 0.2, start_us=round(d * 1e6)
        )
        bulk_host.start(bulk, d, d - 0.5, 0.01)
        audio_host = SimCMHost(net.clock, h1, r1, _cm_config())
        audio_log = MemoryLog()
        audio = AudioApp(
            audio_log,
            40.0,
            1,
            0.0,
            0.2,
            audio=LayeredAudio(tuple(layers), layers[0]),
            start_us=round(2 * d * 1e6),
        )
        audio_host.on_done = lambda now: audio_log.write(audio.done(now))
        audio_host.start(audio, 2 * d, d - 0.5, min(0.005, 40.0 / 4000))
        net.run(lab.end_s)
        ip1 = net.ip("h1")
        phase_flows: dict[str, dict[str, list[list[float]]]] = {
            "independent": {
                f"{ip1}:{r.senders[f.name].sport}": r.flow_series(f.name)
                for f in flows
                if f.name.startswith("indep")
            },
            "cm": {f"{ip1}:{f.sport}": r.peers.of(ip1, f.sport) for f in bulk.flows},
            "audio": {
                f"{ip1}:{f.sport}": r.peers.of(ip1, f.sport)
                for f in [audio.flow, *audio.bulk_flows]
                if f is not None
            },
        }
        audio_series = [
            [
                round(2 * d + x["t_s"], 3),
                cms._pps(x["sent_kbps"]) / factor,
                x["layer_kbps"],
                cms._pps(x["share_kbps"]) / factor,
            ]
            for x in audio_log.records
            if x.get("type") == "sample"
        ]
        return {
            "phase_s": d,
            "flows": phase_flows,
            "competitor": r.flow_series("competitor"),
            "audio": audio_series,
            "audio_done": next((x for x in audio_log.records if x.get("type") == "done"), None),
            "link": port_series(r.records, *key),
            "cm_stats": {"bulk": bulk_host.stats(), "audio": audio_host.stats()},
        }, net

    return SimLab(sc, lab.end_s, note, run, smoke=smoke)
