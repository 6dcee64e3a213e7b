"""Issue #16, outage, on BMv2 in Mininet with the real host agents: four QFCP
senders share a 500 pkt/s bottleneck, stop, stay silent for 3.1 s, and four
new ones start. The fair rate holds through the silence (the switch keeps
telling the returning senders their old share, not C), so there is no drop
burst beyond the 64-packet buffer and the bottleneck is busy again within 1 s.
About 30 s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabNet, LabTopology

RATE_PPS = 500
DEPTH = 64
FLOWS = 4
PHASE_S = 5.0
OUTAGE_S = 3.1


def senders(lab: LabNet, dst: str, tag: str, tmp_path: Path) -> list[Any]:
    procs = []
    for i in range(1, FLOWS + 1):
        cmd = [
            sys.executable,
            "-m",
            "fairgate_hosts.sender",
            "--dst",
            dst,
            "--mode",
            "qfcp",
            "--duration",
            str(PHASE_S),
            "--initial-rate",
            "400",  # as the experiment files' default initial_rate
            "--spin-us",
            "100",
            "--give-up",
            "30",
            "--flow-id",
            f"{tag}{i}",
            "--log",
            str(tmp_path / f"{tag}{i}.jsonl"),
        ]
        procs.append(lab.host(f"h{i}").popen(cmd, stdout=subprocess.DEVNULL))
    return procs


def test_no_burst_and_no_stall_after_a_silent_outage(tmp_path: Path) -> None:
    topo = LabTopology()
    topo.add_switch("s1")
    topo.add_switch("s2")
    for i in range(1, FLOWS + 1):
        topo.add_host(f"h{i}", "s1")
    topo.add_host("r1", "s2")
    link = topo.add_link("s1", "s2", rate_pps=RATE_PPS, depth=DEPTH)
    records = tmp_path / "records.jsonl"
    ctl_log = tmp_path / "controller.log"
    with LabNet(topo, tmp_path / "lab") as lab:
        with open(ctl_log, "w") as log:
            ctl = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fairgate_controller",
                    "--topo",
                    str(lab.topo_path),
                    "--algo",
                    "qfcp",
                    "--period",
                    "0.1",
                    "--records",
                    str(records),
                    "--no-live",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        recv = None
        try:
            deadline = time.monotonic() + 20
            while ctl_log.read_text().count("installed") < 2:
                assert ctl.poll() is None and time.monotonic() < deadline, ctl_log.read_text()
                time.sleep(0.2)
            recv = lab.host("r1").popen(
                [
                    sys.executable,
                    "-m",
                    "fairgate_hosts.receiver",
                    "--ack-delay-ms",
                    "20",
                    "--log",
                    str(tmp_path / "receiver.jsonl"),
                ],
                stdout=subprocess.DEVNULL,
            )
            time.sleep(0.5)
            dst = topo.hosts["r1"].ip
            first = senders(lab, dst, "a", tmp_path)
            for p in first:
                p.wait(PHASE_S + 20)
            t_stop = time.time()
            time.sleep(OUTAGE_S)
            t_back = time.time()
            second = senders(lab, dst, "b", tmp_path)
            for p in second:
                p.wait(PHASE_S + 20)
        finally:
            if recv is not None:
                recv.terminate()
                recv.wait(10)
            ctl.terminate()
            ctl.wait(10)
    recs = [
        r
        for r in map(json.loads, records.read_text().splitlines())
        if r["switch"] == "s1" and r["port"] == link.a_port
    ]
    quiet = [r["rate_kbps"] for r in recs if t_stop + 0.5 <= r["t"] < t_back]
    busy = [r for r in recs if t_stop - 2.0 <= r["t"] < t_stop - 0.5]
    after = [r for r in recs if t_back <= r["t"] < t_back + 3.0]
    drops = sum(r["drop_pkts"] for r in after)
    resumed = [
        r["t"] - t_back for r in after if r["departure_pkts"] / r["period_s"] > 0.5 * RATE_PPS
    ]
    print(
        f"rate before the outage {busy[-1]['rate_kbps']} kbit/s, during it "
        f"{min(quiet)}..{max(quiet)} kbit/s; after it: {drops:.0f} drops in 3 s, "
        f"bottleneck busy again {resumed[0] if resumed else None} s after traffic returned"
    )
    assert quiet and max(quiet) == min(quiet), "the rate moved during the outage"
    assert max(quiet) < 0.5 * topo.capacity_kbps(RATE_PPS), quiet  # near C/4, not C
    assert drops <= DEPTH, f"{drops} drops after the outage (buffer {DEPTH})"
    assert resumed and resumed[0] <= 1.0, resumed
