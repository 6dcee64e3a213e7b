"""Run every benchmark (benchmarks/bench_*.py) one after another, then one table.

Each benchmark prints its own table and writes results/bench/<name>.json with its
headline figures (or why it was skipped: the missing tool first, then root). The
final table puts every headline beside its goal (docs/performance.md) and lists the
skipped ones with their reasons; the run is kept in results/bench/<run-id>/ with the
machine's facts so runs can be compared. Exit status 1 if a benchmark crashed."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

TOP = Path(__file__).resolve().parent.parent
BENCH = TOP / "results" / "bench"


def git_commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=TOP, capture_output=True, text=True
    )
    return proc.stdout.strip() or "unknown"


def machine_facts() -> dict[str, Any]:
    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        cpu = next(
            (ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
             if ln.startswith("model name")),
            "",
        )  # fmt: skip
    switch = shutil.which(os.environ.get("SWITCH", "simple_switch_grpc"))
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "switch": switch,
        "commit": git_commit(),
        "load_average_at_start": os.getloadavg()[0],
    }


def fresh_record(script: Path, since: float) -> dict[str, Any] | None:
    """The JSON the benchmark wrote in this run (None if it wrote none)."""
    path = BENCH / f"{script.stem.removeprefix('bench_')}.json"
    if not path.exists() or path.stat().st_mtime < since:
        return None
    return json.loads(path.read_text())


def fmt(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:,.0f}"


def print_table(rows: list[dict[str, Any]], skipped: list[tuple[str, str]]) -> None:
    print("\n=== FairGate benchmark summary (goals: docs/performance.md)")
    print(f"{'measure':<52} {'now':>9} {'goal':>10} {'unit':<12} {'ratio':>6}  met")
    for r in rows:
        goal = ("<= " if not r["higher_is_better"] else ">= ") + fmt(r["goal"])
        ratio = r["value"] / r["goal"] if r["goal"] else 0.0
        met = "yes" if r["met"] else "NO"
        print(
            f"{r['measure'][:52]:<52} {fmt(r['value']):>9} {goal:>10} {r['unit'][:12]:<12}"
            f" {ratio:>6.2f}  {met}"
        )
    for name, reason in skipped:
        print(f"{name:<52} {'skipped':>9}  {reason}")


def main() -> int:
    run_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + git_commit()
    facts = machine_facts()
    crashed: list[str] = []
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    written: list[Path] = []
    for script in sorted((TOP / "benchmarks").glob("bench_*.py")):
        print(f"\n=== {script.stem}", flush=True)
        since = time.time() - 1
        if subprocess.call([sys.executable, str(script)], cwd=TOP) != 0:
            crashed.append(script.stem)
            continue
        record = fresh_record(script, since)
        if record is not None:
            written.append(BENCH / f"{script.stem.removeprefix('bench_')}.json")
        if record is None:
            skipped.append((script.stem, "wrote no results/bench record"))
        elif "skipped" in record:
            skipped.append((script.stem, record["skipped"]))
        else:
            for h in record.get("headlines", []):
                met = h["value"] >= h["goal"] if h["higher_is_better"] else h["value"] <= h["goal"]
                rows.append({**h, "benchmark": script.stem, "met": met})
    print_table(rows, skipped)
    out = BENCH / run_id
    out.mkdir(parents=True, exist_ok=True)
    for path in written:
        shutil.copy(path, out / path.name)
    summary = {"run_id": run_id, "machine": facts, "headlines": rows, "skipped": skipped}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(f"\nrun record: {out.relative_to(TOP)}")
    if crashed:
        print(f"crashed: {', '.join(crashed)}")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
