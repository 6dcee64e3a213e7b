"""Forwarding throughput of fairgate.p4 vs the plain forwarding pipeline
(forward.p4) on the same BMv2 build, side by side in one run.

With --xcp a third configuration, "fairgate-xcp", sends XCP data packets
through fairgate.p4 with xcp_factors set (both terms computed, H_feedback
stamped, the UDP checksum updated, the log2(rtt/cwnd) histogram counted): its
CPU per packet minus fairgate's (rate-header data) is XCP's per-packet cost.

With --features every feature of fairgate.p4 is also measured by its absence:
fairgate.p4 compiled with -DFG_NO_<FEATURE> (FICCRD, XCP, ADMISSION,
TELEMETRY, FEEDBACK: p4src/fairgate.p4) runs as "no-<feature>", and a
feature's cost is fairgate's CPU per packet minus its variant's.

A sender in a namespace blasts rate-header data packets into switch port 1
for a few seconds; the packets that come out of port 2 over that time give
each program's packets per second. Runs alternate between the programs and
the median is reported. Needs root and simple_switch_grpc.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import finsy as fy
from benchlib import Headline, missing_switch, skip, write
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from fairgate_controller import entities as ent
from fairgate_controller.sync_client import SyncSwitch
from fairgate_p4 import artifacts, xcp_math
from fairgate_p4 import generated as g
from fairgate_p4.scapy_layer import FgRate, FgXcp
from fairgate_topo.netns_switch import NetnsSwitch

TOP = Path(__file__).resolve().parent.parent
BLAST = Path(__file__).resolve().parent / "blast.py"
SWITCH_MAC = "02:fa:00:00:00:01"


def frame(config: str = "fairgate") -> bytes:
    head = (
        Ether(src="00:00:00:00:00:01", dst=SWITCH_MAC)
        / IP(src="10.0.1.1", dst="10.0.2.2")
        / UDP(sport=40000, dport=g.FG_UDP_PORT)
    )
    if config != "fairgate-xcp":
        return bytes(head / FgRate(rate_kbps=50_000, rtt_us=20_000, seq=1) / Raw(b"x" * 100))
    lg_pos, lg_neg = xcp_math.sender_terms(0.02, 170, 15_000)
    xcp = FgXcp(
        cwnd_bytes=15_000, feedback=g.FG_XCP_FEEDBACK_UNLIMITED, lg_pos=lg_pos, lg_neg=lg_neg
    )
    rate = FgRate(kind=g.FG_KIND_XCP_DATA, rtt_us=20_000, seq=1)
    return bytes(head / rate / xcp / Raw(b"x" * 88))  # the same 170-byte frame


# -D flag of p4src/fairgate.p4 that leaves each feature out (--features)
FEATURES = {
    "ficcrd": "FG_NO_FICCRD",
    "xcp": "FG_NO_XCP",
    "admission": "FG_NO_ADMISSION",
    "telemetry": "FG_NO_TELEMETRY",
    "feedback": "FG_NO_FEEDBACK",
}


@dataclass(frozen=True)
class Build:
    """A compiled program: its P4Info and BMv2 JSON."""

    program: str
    p4info: Path
    json: Path

    def metadata_fields(self) -> int:
        """Metadata fields BMv2 resets for every packet: the metadata struct,
        every local and every temporary p4c made (scalars), standard_metadata."""
        doc = json.loads(self.json.read_text())
        sizes = {t["name"]: len(t["fields"]) for t in doc["header_types"]}
        return sum(sizes[h["header_type"]] for h in doc["headers"] if h["metadata"])

    def headers(self) -> int:
        """Header instances: BMv2 marks each invalid for every packet (one
        validity field each); scratch kept in local headers costs this."""
        doc = json.loads(self.json.read_text())
        return sum(1 for h in doc["headers"] if not h["metadata"])

    def tables(self) -> set[str]:
        """Names of the program's tables (P4Info preamble names)."""
        text = self.p4info.read_text()
        names = set()
        for block in text.split("tables {")[1:]:
            name = block.split('name: "', 1)[1].split('"', 1)[0]
            names.add(name.lstrip("."))
        return names


def committed(program: str) -> Build:
    return Build(program, artifacts.p4info_path(program), artifacts.bmv2_json_path(program))


def compile_variant(feature: str, out_dir: Path) -> Build:
    """fairgate.p4 without one feature, compiled as `make build` compiles it."""
    p4c = os.environ.get("P4C", "p4c-bm2-ss")
    json_path, p4info = out_dir / f"no-{feature}.json", out_dir / f"no-{feature}.p4info.txtpb"
    subprocess.run(
        [
            p4c,
            "--arch",
            "v1model",
            "--Werror",
            "-I",
            str(TOP / "p4src"),
            f"-D{FEATURES[feature]}",
            "-o",
            str(json_path),
            "--p4runtime-files",
            str(p4info),
            str(TOP / "p4src" / "fairgate.p4"),
        ],
        check=True,
    )
    return Build("fairgate", p4info, json_path)


def configure(p4: SyncSwitch, config: str, tables: set[str]) -> None:
    p4.insert(
        fy.P4TableEntry(
            "ipv4_routes",
            match=fy.Match(dst_addr="10.0.2.0/24"),
            action=fy.Action("forward", port=2, src_mac=SWITCH_MAC, dst_mac="00:00:00:00:00:02"),
        )
    )
    # Every feature on the data packets' path that the program has:
    # stamping, both histograms.
    if "port_feedback" in tables:
        p4.insert(
            fy.P4TableEntry(
                "port_feedback",
                match=fy.Match(egress_port=2),
                action=fy.Action("set_port_feedback", fair_rate_kbps=10_000, congested=1),
            )
        )
    for table, action, step in (
        ("queue_buckets", "set_queue_bucket", 1),
        ("rtt_buckets", "set_rtt_bucket", 5_000),
    ):
        if table not in tables:
            continue
        p4.insert(
            *[
                fy.P4TableEntry(
                    table,
                    match=fy.Match({_key(table): f"{b * step}...{b * step + step - 1}"}),
                    action=fy.Action(action, bucket=b),
                    priority=1,
                )
                for b in range(31)
            ]
        )
    if config == "fairgate-xcp":
        # factors that give the benchmark's packets about +300 and -100 bytes: stamped
        p4.insert(ent.xcp_factors_entry(2, xcp_math.encode_factor(1.8e6), 256))
        p4.insert(*ent.xcp_bucket_entries(xcp_math.RatioBuckets()))


def feature_costs(med: dict[str, float], cpu: dict[str, float]) -> dict[str, dict[str, float]]:
    """Per feature: fairgate's median CPU per packet minus its no-<feature> variant's
    (absolute and as a share of forward's), and the variant's pps over fairgate's."""
    costs = {}
    for feature in FEATURES:
        config = f"no-{feature}"
        if config not in cpu:
            continue
        delta = cpu["fairgate"] - cpu[config]
        costs[feature] = {
            "cpu_us_per_pkt": delta,
            "cpu_pct_of_forward": 100 * delta / cpu["forward"] if cpu["forward"] else 0.0,
            "pps_ratio_without_over_with": med[config] / med["fairgate"]
            if med["fairgate"]
            else 0.0,
        }
    return costs


def _key(table: str) -> str:
    return {"queue_buckets": "enq_qdepth", "rtt_buckets": "rtt_us"}[table]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one_run(config: str, build: Build, seconds: float, log_dir: Path) -> dict[str, float]:
    # The switch and the sender get a core each, so that they do not fight
    # over one (the machine has two).
    with NetnsSwitch(log_dir=log_dir / f"{config}-{time.monotonic_ns()}", ports=2, cpus="1") as sw:
        with SyncSwitch(sw.grpc_address, build.p4info, build.json, name=build.program) as p4:
            configure(p4, config, build.tables())
        assert sw.proc is not None
        rx0, cpu0 = sw.rx_packets(2), cpu_seconds(sw.proc.pid)
        out = sw.run_in_ns(
            [sys.executable, str(BLAST), sw.host_intf(1), frame(config).hex(), str(seconds)]
        )
        time.sleep(1.0)  # let the switch drain what it queued
        rx1, cpu1 = sw.rx_packets(2), cpu_seconds(sw.proc.pid)
    sent, forwarded = int(out.stdout), rx1 - rx0
    return {
        "offered_pps": sent / seconds,
        "forwarded_pps": forwarded / seconds,
        # CPU the switch spent per packet it forwarded: less sensitive than pps
        # to other work on the machine (it still pays for cache and scheduling)
        "cpu_us_per_pkt": 1e6 * (cpu1 - cpu0) / forwarded if forwarded else 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "pipeline.json")
    parser.add_argument(
        "--xcp", action="store_true", help="also XCP data through fairgate.p4 (fairgate-xcp)"
    )
    parser.add_argument(
        "--features",
        action="store_true",
        help="also fairgate.p4 without each feature (no-<feature>, compiled with -DFG_NO_...)",
    )
    args = parser.parse_args()
    logging.getLogger("finsy").setLevel(logging.ERROR)  # "gNMI is not implemented" per connect
    switch = os.environ.get("SWITCH", "simple_switch_grpc")
    reason = missing_switch()
    if reason:
        return skip("pipeline", reason, args.out)
    if args.features and shutil.which(os.environ.get("P4C", "p4c-bm2-ss")) is None:
        return skip(
            "pipeline",
            "--features needs p4c-bm2-ss: " + "install p4c (README: P4 toolchain)",
            args.out,
        )
    builds = {"forward": committed("forward"), "fairgate": committed("fairgate")}
    if args.xcp:
        builds["fairgate-xcp"] = committed("fairgate")
    runs: dict[str, list[dict[str, float]]] = {config: [] for config in builds}
    with tempfile.TemporaryDirectory() as tmp:
        if args.features:
            for feature in FEATURES:
                builds[f"no-{feature}"] = compile_variant(feature, Path(tmp))
                runs[f"no-{feature}"] = []
        fields = {config: build.metadata_fields() for config, build in builds.items()}
        headers = {config: build.headers() for config, build in builds.items()}
        for _ in range(args.runs):
            for config, build in builds.items():
                runs[config].append(one_run(config, build, args.seconds, Path(tmp)))
    med = {p: statistics.median(r["forwarded_pps"] for r in rs) for p, rs in runs.items()}
    offered = {p: statistics.median(r["offered_pps"] for r in rs) for p, rs in runs.items()}
    cpu = {p: statistics.median(r["cpu_us_per_pkt"] for r in rs) for p, rs in runs.items()}
    ratio = med["fairgate"] / med["forward"] if med["forward"] else 0.0
    cpu_ratio = cpu["forward"] / cpu["fairgate"] if cpu["fairgate"] else 0.0
    head = (
        f"{'pipeline':<14} {'fields':>6} {'headers':>7} {'offered pps':>12} {'forwarded pps':>14}"
    )
    print(f"{head} {'cpu us/pkt':>11}  runs")
    for p in runs:
        each = ", ".join(f"{r['forwarded_pps']:.0f}" for r in runs[p])
        line = f"{p:<14} {fields[p]:>6} {headers[p]:>7} {offered[p]:>12.0f} {med[p]:>14.0f}"
        print(f"{line} {cpu[p]:>11.1f}  {each}")
    print(f"ratio fairgate/forward: {ratio:.3f} forwarded pps (goal >= 0.90), ", end="")
    print(f"{cpu_ratio:.3f} by CPU per packet")
    if args.xcp:
        print(
            f"XCP per packet: {cpu['fairgate-xcp'] - cpu['fairgate']:+.2f} us CPU vs rate-header "
            f"data, forwarded pps ratio fairgate-xcp/fairgate "
            f"{med['fairgate-xcp'] / med['fairgate'] if med['fairgate'] else 0.0:.3f}"
        )
    features = feature_costs(med, cpu) if args.features else {}
    if features:
        print("feature cost on these packets: fairgate minus fairgate without it (medians)")
        print(f"{'feature':<10} {'cpu us/pkt':>11} {'% of forward':>13} {'pps without / with':>19}")
        for name, cost in features.items():
            us, pct = cost["cpu_us_per_pkt"], cost["cpu_pct_of_forward"]
            ratio = cost["pps_ratio_without_over_with"]
            print(f"{name:<10} {us:>+11.2f} {pct:>+12.1f}% {ratio:>19.3f}")
    print(f"load average during the runs: {os.getloadavg()[0]:.2f} (other work skews the figures)")
    if min(offered.values()) < 1.2 * max(med.values()):
        print("note: the sender barely outpaced the switch; the figures may be sender-bound")
    write(
        "pipeline",
        {
            "seconds_per_run": args.seconds,
            "runs": runs,
            "median_forwarded_pps": med,
            "median_offered_pps": offered,
            "ratio_fairgate_over_forward": ratio,
            "median_cpu_us_per_pkt": cpu,
            "cpu_ratio_forward_over_fairgate": cpu_ratio,
            "feature_costs": features,
            "metadata_fields": fields,
            "headers": headers,
            "switch": shutil.which(switch),
        },
        args.out,
        [Headline("fairgate.p4 / forward.p4 forwarded pps", ratio, "ratio", 0.90, True)],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
