"""benchmarks/pipeline_path.py walks the compiled programs with bench_pipeline's
packet the way BMv2 would: the values it ends with are what the switch sends.
So the walk of fairgate.p4 must stamp the rate (50 000 -> 10 000 kbit/s), set
the congestion flag and leave the UDP checksum scapy computes for the stamped
datagram (the incremental update in RateHeaderChecksum), and the walk of
forward.p4 must route without touching the rate header."""

from __future__ import annotations

import sys
from pathlib import Path

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from fairgate_p4 import artifacts
from fairgate_p4 import generated as g
from fairgate_p4.scapy_layer import FgRate

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_pipeline  # noqa: E402
import pipeline_path  # noqa: E402


def _udp_checksum_after(rate_kbps: int, flags: int) -> int:
    pkt = Ether(bench_pipeline.frame())
    pkt[FgRate].rate_kbps = rate_kbps
    pkt[FgRate].flags = flags
    pkt[IP].ttl -= 1
    del pkt[UDP].chksum
    return Ether(bytes(pkt))[UDP].chksum


def test_fairgate_walk_stamps_and_updates_the_checksum() -> None:
    w = pipeline_path.walk(artifacts.bmv2_json_path("fairgate"), "fairgate")
    fg_rate, fg_flags, checksum = (
        w.values[("fg", "rate_kbps")],
        w.values[("fg", "flags")],
        w.values[("udp", "checksum")],
    )
    assert fg_rate == 10_000
    assert fg_flags & g.FG_FLAG_CONGESTED
    assert checksum == _udp_checksum_after(fg_rate, fg_flags)
    assert w.values[("standard_metadata", "egress_spec")] == 2
    assert w.counts.conditions > 0 and w.counts.tables > 0


def test_forward_walk_routes_and_leaves_the_rate_header() -> None:
    w = pipeline_path.walk(artifacts.bmv2_json_path("forward"), "fairgate")
    original = Ether(bench_pipeline.frame())
    assert w.values[("fg", "rate_kbps")] == original[FgRate].rate_kbps
    assert w.values[("udp", "checksum")] == original[UDP].chksum
    assert w.values[("standard_metadata", "egress_spec")] == 2
    assert w.values[("ipv4", "ttl")] == original[IP].ttl - 1
