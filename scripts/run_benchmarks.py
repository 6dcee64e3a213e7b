"""Run every benchmark (benchmarks/bench_*.py) one after another.

Each prints its own table and writes results/bench/<name>.json; a benchmark
whose tools are missing says so and is skipped. Exit status 1 if one crashed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent


def main() -> int:
    failed = []
    for script in sorted((TOP / "benchmarks").glob("bench_*.py")):
        print(f"\n=== {script.stem}", flush=True)
        if subprocess.call([sys.executable, str(script)], cwd=TOP) != 0:
            failed.append(script.stem)
    print(f"\nbenchmarks done; results in {TOP / 'results' / 'bench'}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
