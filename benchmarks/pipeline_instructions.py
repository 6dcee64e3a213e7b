"""Instructions BMv2 executes per packet for a program, counted by callgrind:
a figure the machine's other load does not change (bench_pipeline's packets
per second and CPU per packet do), for comparing builds of the pipeline.

simple_switch (the same core as simple_switch_grpc, Thrift instead of gRPC)
runs under `valgrind --tool=callgrind` with its ports on pcap files
(--use-files): port 1 reads N copies of bench_pipeline's rate-header data
frame. The tables get bench_pipeline's entries through simple_switch_CLI
while the switch waits, then instrumentation is switched on, the packets run,
and the instructions of all the switch's threads from then on are divided by
N. Not part of `make bench` (it takes a minute per build); needs valgrind,
simple_switch and simple_switch_CLI, and the lab lock like every BMv2 run:

    flock /tmp/fairgate-lab.lock .venv/bin/python benchmarks/pipeline_instructions.py \\
        [--json LABEL=PATH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import bench_pipeline as bp
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from fairgate_controller.thrift_cli import run_switch_cli
from fairgate_p4 import artifacts

WAIT_S = 25  # --use-files: the switch starts reading packets this long after starting
THRIFT_PORT = 9190


def entries(tables: set[str]) -> list[str]:
    """bench_pipeline.configure's entries as simple_switch_CLI commands."""
    cmds = [f"table_add ipv4_routes forward 10.0.2.0/24 => 2 {bp.SWITCH_MAC} 00:00:00:00:00:02"]
    if "port_feedback" in tables:
        cmds.append("table_add port_feedback set_port_feedback 2 => 10000 1")
    for table, action, step in (
        ("queue_buckets", "set_queue_bucket", 1),
        ("rtt_buckets", "set_rtt_bucket", 5_000),
    ):
        if table in tables:
            cmds += [
                f"table_add {table} {action} {b * step}->{b * step + step - 1} => {b} 1"
                for b in range(31)
            ]
    return cmds


def json_tables(json_path: Path) -> set[str]:
    """The tables a BMv2 JSON has (the names simple_switch_CLI takes)."""
    doc = json.loads(json_path.read_text())
    return {t["name"] for pipe in doc["pipelines"] for t in pipe["tables"]}


def cli(commands: list[str]) -> str:
    return run_switch_cli(THRIFT_PORT, commands)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def instructions(build: bp.Build, packets: int, work: Path) -> tuple[float, str]:
    """Instructions per packet, and what port_departures[2] counted (fairgate)."""
    work.mkdir(parents=True)
    wrpcap(str(work / "p1_in.pcap"), [Ether(bp.frame("fairgate"))] * packets)
    wrpcap(str(work / "p2_in.pcap"), [])
    out = work / "callgrind.out"
    cmd = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]
    cmd += ["simple_switch", "--use-files", str(WAIT_S), "--thrift-port", str(THRIFT_PORT)]
    cmd += ["-i", "1@p1", "-i", "2@p2", "--log-level", "off", str(build.json)]
    with open(work / "switch.log", "w") as log:
        switch = subprocess.Popen(cmd, cwd=work, stdout=log, stderr=subprocess.STDOUT)
    start = time.monotonic()
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", THRIFT_PORT), 1).close()
                break
            except OSError:
                time.sleep(0.5)
        commands = entries(json_tables(build.json))
        reply = cli(commands)
        if reply.count("Entry has been added") != len(commands):
            raise RuntimeError(f"simple_switch_CLI did not add every entry: {reply[-500:]}")
        subprocess.run(
            ["callgrind_control", "-i", "on", str(switch.pid)], check=True, capture_output=True
        )
        if time.monotonic() - start > WAIT_S - 1:
            raise RuntimeError("set-up took longer than --use-files waits: raise WAIT_S")
        time.sleep(max(0.0, WAIT_S + 2 - (time.monotonic() - start)))
        last, idle = cpu_ticks(switch.pid), 0
        while idle < 3:  # done when the switch has been idle for 3 s
            time.sleep(1)
            now = cpu_ticks(switch.pid)
            idle, last = (idle + 1 if now - last <= 3 else 0), now
        subprocess.run(
            ["callgrind_control", "-d", str(switch.pid)], check=True, capture_output=True
        )
        counted = (
            cli(["counter_read port_departures 2"])
            if "queue_buckets" in json_tables(build.json)
            else ""
        )
    finally:
        switch.terminate()
        switch.wait()
    total = 0
    for dump in work.glob("callgrind.out*"):
        for line in dump.read_text().splitlines():
            if line.startswith("summary:"):
                total = max(total, int(line.split()[1]))
    found = re.search(r"packets=(\d+)", counted)
    if found:
        return total / packets, found.group(1)
    return total / packets, "-" if not counted else "? " + " ".join(counted.split())[-120:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=2000)
    parser.add_argument(
        "--json",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="another BMv2 JSON to count (e.g. an older build: git show REV:p4src/compiled/...)",
    )
    args = parser.parse_args()
    for tool in ("valgrind", "callgrind_control", "simple_switch", "simple_switch_CLI"):
        if shutil.which(tool) is None:
            print(
                f"pipeline_instructions: needs {tool} (valgrind: apt-get install valgrind; "
                "simple_switch*: README, P4 toolchain)"
            )
            return 2
    builds = {"forward": bp.committed("forward"), "fairgate": bp.committed("fairgate")}
    for spec in args.json:
        label, _, path = spec.partition("=")
        builds[label] = bp.Build(label, artifacts.p4info_path("fairgate"), Path(path))
    print(f"{'build':<16} {'fields':>6} {'instructions/pkt':>17} {'vs forward':>11}  departures")
    per_packet: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, build in builds.items():
            ir, counted = instructions(build, args.packets, Path(tmp) / label)
            per_packet[label] = ir
            ratio = per_packet["forward"] / ir if ir else 0.0
            print(
                f"{label:<16} {build.metadata_fields():>6} {ir:>17,.0f} {ratio:>11.3f}  {counted}",
                flush=True,
            )
    print(f"{args.packets} rate-header data packets per build; vs forward = forward's / this")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
