"""Instructions per forwarded packet of fairgate.p4 and forward.p4 on BMv2,
counted by valgrind's callgrind: a figure other work on the machine does not
move (bench_pipeline's packets per second and CPU per packet do).

The switch runs under callgrind in a namespace (NetnsSwitch); once it is
configured (the same entries as bench_pipeline), the counts are zeroed, a
paced sender puts a fixed number of the benchmark's data frames into port 1,
slowly enough that nothing queues or drops (valgrind slows BMv2 some 50x),
and the counts are dumped: instructions over that window divided by the
frames that came out of port 2. The window also holds the switch's idle
threads, a small constant. With no-<feature> configurations (fairgate.p4
compiled with -DFG_NO_<FEATURE>, as bench_pipeline --features) it prints
what each feature costs a packet. Needs root, simple_switch_grpc and
valgrind.
"""

from __future__ import annotations

import argparse
import logging
import os
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
    """NetnsSwitch whose simple_switch_grpc runs under callgrind; its counts
    are zeroed and dumped with callgrind_control (into log_dir)."""

    def start_switch(self) -> None:
        real = shutil.which(self.switch_bin) or self.switch_bin
        wrapper = self.log_dir / "switch-under-callgrind"
        out = self.log_dir / "callgrind.out"
        wrapper.write_text(
            f'#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file={out}.%p {real} "$@"\n'
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


def send(sw: NetnsSwitch, config: str, packets: int, rate: float) -> None:
    """`packets` of the benchmark's frames into port 1, `rate` a second."""
    frame_hex = frame(config).hex()
    cmd = [sys.executable, "-c", PACED_SENDER, sw.host_intf(1), frame_hex, str(packets), str(rate)]
    sw.run_in_ns(cmd)


def measure(config: str, build: Build, packets: int, rate: float, tmp: Path) -> float:
    with CallgrindSwitch(log_dir=tmp / config, ports=2, cpus="1") as sw:
        with SyncSwitch(sw.grpc_address, build.p4info, build.json, name=build.program) as p4:
            configure(p4, config, build.tables())
        assert sw.proc is not None
        # warm up (first packets touch cold paths), then count a clean window;
        # valgrind runs as the switch's pid (taskset and the wrapper exec it)
        send(sw, config, 20, rate)
        time.sleep(1.0)
        pid = sw.proc.pid
        rx0 = sw.rx_packets(2)
        callgrind_control("--zero", pid=pid)
        send(sw, config, packets, rate)
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
    result: dict[str, tuple[float, int, int]] = {}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = args.keep or Path(tmp_s)
        for config in args.configs:
            if config.startswith("no-"):
                build = compile_variant(config[3:], tmp)
            elif config in ("fairgate", "fairgate-xcp") and args.build:
                build = Build(
                    "fairgate",
                    args.build.with_suffix(".p4info.txtpb"),
                    args.build.with_suffix(".json"),
                )
            else:
                build = committed("fairgate" if config == "fairgate-xcp" else config)
            assert config in ("forward", "fairgate", "fairgate-xcp") or config[3:] in FEATURES
            per_pkt = measure(config, build, args.packets, args.rate, tmp)
            result[config] = (per_pkt, build.metadata_fields(), build.headers())
    print(f"{'pipeline':<14} {'fields':>6} {'headers':>7} {'instructions/pkt':>17}")
    for config, (per_pkt, fields, headers) in result.items():
        line = f"{config:<14} {fields:>6} {headers:>7}"
        print(f"{line} {per_pkt:>17,.0f}")
    fwd = result["forward"][0] if "forward" in result else None
    fg = result["fairgate"][0] if "fairgate" in result else None
    if fwd and fg:
        print(f"ratio forward/fairgate by instructions per packet: {fwd / fg:.3f}")
    for config, (per_pkt, _, _) in result.items():
        if fg and config.startswith("no-"):
            delta = fg - per_pkt
            share = f" ({100 * delta / fwd:+.1f}% of forward)" if fwd else ""
            print(f"{config[3:]:<10} costs {delta:+9,.0f} instructions/pkt{share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
