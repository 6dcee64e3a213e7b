"""Instructions per forwarded packet of fairgate.p4 and forward.p4 on BMv2,
counted by valgrind's callgrind: a figure other work on the machine does not
move (bench_pipeline's packets per second and CPU per packet do).

The switch runs under callgrind in a namespace (NetnsSwitch); once it is
configured (the same entries as bench_pipeline), the counts are zeroed, a
paced sender puts a fixed number of the benchmark's data frames into port 1,
slowly enough that nothing queues or drops (valgrind slows BMv2 some 50x),
and the counts are dumped: instructions over that window divided by the
frames that came out of port 2. The window also holds the switch's idle
threads, a small constant; --top lists the functions with the most
instructions per packet (inclusive), to see where they go. Needs root,
simple_switch_grpc and valgrind.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_pipeline import FEATURES, Build, committed, compile_variant, configure, frame

from fairgate_controller.sync_client import SyncSwitch
from fairgate_topo.netns_switch import NetnsSwitch

PACED_SENDER = """
import socket, sys, time
iface, data, n, rate = sys.argv[1], bytes.fromhex(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((iface, 0))
t0 = time.monotonic()
for i in range(n):
    delay = t0 + i / rate - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    s.send(data)
"""


class CallgrindSwitch(NetnsSwitch):
    """NetnsSwitch whose simple_switch_grpc runs under callgrind, not collecting
    until zeroed (callgrind_control)."""

    out_file: Path = Path("/dev/null")

    def start_switch(self) -> None:
        real = shutil.which(self.switch_bin) or self.switch_bin
        wrapper = self.log_dir / "switch-under-callgrind"
        self.out_file = self.log_dir / "callgrind.out"
        wrapper.write_text(
            "#!/bin/sh\nexec valgrind --tool=callgrind --collect-atstart=yes "
            f'--callgrind-out-file={self.out_file}.%p {real} "$@"\n'
        )
        wrapper.chmod(0o755)
        self.switch_bin = str(wrapper)
        self.start_timeout_s = 180.0
        super().start_switch()


def callgrind_control(*args: str, pid: int) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def total_instructions(out: Path) -> int:
    for line in out.read_text().splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            return int(line.split()[1])
    raise ValueError(f"no totals in {out}")


def measure(config: str, build: Build, packets: int, rate: float, top: int, tmp: Path) -> float:
    with CallgrindSwitch(log_dir=tmp / config, ports=2, cpus="1") as sw:
        with SyncSwitch(sw.grpc_address, build.p4info, build.json, name=build.program) as p4:
            configure(p4, config, build.tables())
        assert sw.proc is not None
        # warm up (first packets touch cold paths), then count a clean window
        sw.run_in_ns(
            [
                sys.executable,
                "-c",
                PACED_SENDER,
                sw.host_intf(1),
                frame(config).hex(),
                "20",
                str(rate),
            ]
        )
        time.sleep(1.0)
        # valgrind runs as the wrapper's pid (exec)
        pid = sw.proc.pid
        rx0 = sw.rx_packets(2)
        callgrind_control("--zero", pid=pid)
        sw.run_in_ns(
            [
                sys.executable,
                "-c",
                PACED_SENDER,
                sw.host_intf(1),
                frame(config).hex(),
                str(packets),
                str(rate),
            ]
        )
        time.sleep(2.0)
        rx1 = sw.rx_packets(2)
        for old in tmp.glob(f"{config}/callgrind.out.*"):
            old.unlink()
        callgrind_control("--dump", pid=pid)
        time.sleep(0.5)
        dumps = sorted((tmp / config).glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)
        dump = dumps[-1]
        forwarded = rx1 - rx0
        per_pkt = total_instructions(dump) / forwarded if forwarded else float("nan")
        print(f"{config:<14} forwarded {forwarded}/{packets}  instructions/pkt {per_pkt:,.0f}")
        if top:
            ann = subprocess.run(
                ["callgrind_annotate", str(dump)], capture_output=True, text=True, check=True
            ).stdout
            shown = 0
            for line in ann.splitlines():
                m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)", line)
                if m and shown < top and "PROGRAM TOTALS" not in line:
                    print(
                        f"    {int(m.group(1).replace(',', '')) / forwarded:>10,.0f}  "
                        f"{m.group(2)[:150]}"
                    )
                    shown += 1
        return per_pkt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=500)
    parser.add_argument("--rate", type=float, default=100.0, help="frames per second sent")
    parser.add_argument(
        "--build",
        type=Path,
        help="fairgate.p4 compiled elsewhere: PREFIX.json and PREFIX.p4info.txtpb",
    )
    parser.add_argument("--keep", type=Path, help="keep the callgrind dumps in this folder")
    parser.add_argument("--top", type=int, default=0, help="functions to list (self cost)")
    parser.add_argument(
        "configs",
        nargs="*",
        default=["forward", "fairgate"],
        help="forward, fairgate, fairgate-xcp, no-<feature>",
    )
    args = parser.parse_args()
    logging.getLogger("finsy").setLevel(logging.ERROR)
    if os.geteuid() != 0 or shutil.which("valgrind") is None:
        print("needs root and valgrind")
        return 1
    result = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = args.keep or Path(tmp_s)
        for config in args.configs:
            if config.startswith("no-"):
                build = compile_variant(config[3:], tmp)
            elif config == "fairgate-xcp":
                build = committed("fairgate")
            elif config == "fairgate" and args.build:
                build = Build(
                    "fairgate",
                    args.build.with_suffix(".p4info.txtpb"),
                    args.build.with_suffix(".json"),
                )
            else:
                build = committed(config)
            assert config in ("forward", "fairgate", "fairgate-xcp") or config[3:] in FEATURES
            result[config] = measure(config, build, args.packets, args.rate, args.top, tmp)
    if "forward" in result and "fairgate" in result:
        print(
            f"ratio forward/fairgate by instructions per packet: "
            f"{result['forward'] / result['fairgate']:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
