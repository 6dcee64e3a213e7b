"""Sweeps in parallel (issue 17): the same small simulator sweep run one point at a time,
over one local process per core, and on a Dask LocalCluster of as many worker processes.

The sweep (``SWEEP`` below: 4 points, a 20-user Lestas dumbbell, 16 simulated seconds
each: 4 s made each point about a second of CPU once the simulator was compiled, so the
pool's and the cluster's fixed start-up, 1-3 s, was most of what the modes compared; real
sweeps run minutes per point) runs as
``python -m fairgate_exp run <file> --workers N [--scheduler local]``
would, each mode in a child process, alternating the modes ``--rounds`` times; reported
per mode: the median wall time, the CPU time of the child and everything it waited for
(``RUSAGE_CHILDREN``: the pool's or the cluster's processes), and the speed-up (serial
wall time / this mode's). On a machine shared with others the wall clock includes their
load; the load average is printed and recorded. Writes results/bench/sweep.json.
Needs no switch and no root."""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchlib import Headline, write

TOP = Path(__file__).resolve().parent.parent
SWEEP = """\
# bench_sweep: a small simulator sweep (4 points) to time the sweep runner
switches = ["s1", "s2"]
hosts = [
  { name = "h1", switch = "s1", uplink = "10Gbit/s" },
  { name = "r1", switch = "s2", capacity = "10Gbit/s", ack_delay = "20ms" },
]
links = [
  { a = "s1", b = "s2", capacity = "100Mbit/s", buffer = "1000pkt", reverse_capacity = "10Gbit/s" },
]
flows = [{ name = "user", src = "h1", dst = "r1", count = 20, stagger = "10ms" }]

[experiment]
title = "bench_sweep"
duration = "16s"
warmup = "2s"
algorithms = ["lestas"]

[[expect]]
metric = "utilisation"
min = 0.9

[sweep.grid]
"links.0.capacity" = ["40Mbit/s", "60Mbit/s", "80Mbit/s", "100Mbit/s"]
"""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run_mode(sweep: Path, results: Path, workers: int, dask: bool) -> dict[str, float]:
    """One sweep in a child process: wall s and CPU s (child and its waited-for children)."""
    cmd = [sys.executable, "-m", "fairgate_exp", "run", str(sweep), "--quiet"]
    cmd += ["--workers", str(workers), "--results", str(results)]
    if dask:
        cmd += ["--scheduler", "local"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=TOP, capture_output=True)  # the venv's paths
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--rounds", type=int, default=2, help="times each mode runs (median)")
    p.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "sweep.json")
    args = p.parse_args(argv)
    cores = _cores()
    modes = {
        "1 process": (1, False),
        f"{cores} processes (one per core)": (cores, False),
        f"Dask LocalCluster, {cores} worker processes": (cores, True),
    }
    runs: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    load_start = [round(x, 2) for x in os.getloadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        sweep = Path(tmp) / "bench-sweep.toml"
        sweep.write_text(SWEEP)
        for _ in range(args.rounds):
            for mode, (workers, dask) in modes.items():
                runs[mode].append(run_mode(sweep, Path(tmp) / "r", workers, dask))
    load_end = [round(x, 2) for x in os.getloadavg()]
    serial = statistics.median(r["wall_s"] for r in runs["1 process"])
    rows: list[dict[str, Any]] = []
    print(f"{'mode':44} {'wall s':>7} {'cpu s':>7} {'speed-up':>8}   (medians of {args.rounds})")
    for mode, rs in runs.items():
        wall = statistics.median(r["wall_s"] for r in rs)
        cpu = statistics.median(r["cpu_s"] for r in rs)
        rows.append(
            {
                "mode": mode,
                "wall_s": round(wall, 2),
                "cpu_s": round(cpu, 2),
                "speed_up": round(serial / wall, 2),
                "runs": rs,
            }
        )
        print(f"{mode:44} {wall:7.1f} {cpu:7.1f} {serial / wall:7.2f}x")
    print(f"cores: {cores}; load average at the start {load_start}, at the end {load_end}")
    goal = 0.75 * cores  # three quarters of the cores' worth
    heads = [
        Headline(
            f"sweep speed-up, {cores} local processes vs 1", rows[1]["speed_up"], "x", goal, True
        ),
        Headline(
            f"sweep speed-up, Dask LocalCluster ({cores}) vs 1",
            rows[2]["speed_up"],
            "x",
            goal,
            True,
        ),
    ]
    out = write(
        "sweep",
        {
            "cores": cores,
            "load_average_start": load_start,
            "load_average_end": load_end,
            "rows": rows,
        },
        args.out,
        heads,
    )
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
