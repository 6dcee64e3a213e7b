"""How much an experiment's verdicts rest on timing noise, in the simulator.

Each file runs with ``[experiment] host_jitter`` at each value given (every packet every
host sends leaves after a random delay of up to that much, in order: docs/experiments.md),
over several seeds (a sweep over ``experiment.seed``, added to the file's own sweep grid if
it has one). Per check, side by side per jitter: the mean of the measured values, their
range and how many runs pass. A verdict that flips between 0 ms and a few milliseconds of
noise rests on the drop-tail phase of a jitter-free model (Floyd and Jacobson 1992), not on
the mechanism the check is about. The run records stay under ``--results``.

``python scripts/noise_sensitivity.py cm-aging cm-feedback --jitter 0ms,2ms,10ms --seeds 1-4``
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for part in ("experiments", "sim", "controller", "hosts", "p4src"):
    sys.path.insert(0, str(ROOT / part))

from fairgate_exp import units  # noqa: E402
from fairgate_exp.load import ExperimentError, read_toml, resolve_path, validate  # noqa: E402
from fairgate_exp.sweep import run_sweep  # noqa: E402


def seeds_arg(text: str) -> list[int]:
    """``1-4`` or ``1,3,5``."""
    try:
        if "-" in text:
            lo, hi = (int(x) for x in text.split("-", 1))
            out = list(range(lo, hi + 1))
        else:
            out = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: seeds are 1-4 or 1,3,5") from None
    if not out:
        raise argparse.ArgumentTypeError(f"{text!r}: no seeds")
    return out


def jitters_arg(text: str) -> list[str]:
    out = [x.strip() for x in text.split(",") if x.strip()]
    for x in out:
        try:
            units.parse_time(x, "jitter")
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return out


def with_noise(doc: dict[str, Any], jitter: str, seeds: list[int]) -> dict[str, Any]:
    """The document with ``host_jitter`` set and the seeds as the sweep's last grid key
    (after the file's own keys, so its zipped lists still follow its first one)."""
    out = copy.deepcopy(doc)
    out.setdefault("experiment", {})["host_jitter"] = jitter
    sweep = out.setdefault("sweep", {})
    grid = sweep.setdefault("grid", {})
    if "experiment.seed" in grid:
        raise ExperimentError("the file sweeps experiment.seed itself; give it without")
    grid["experiment.seed"] = seeds
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[tuple[str, int, str], list[tuple[float, bool]]]:
    """Per (the point's other keys, check, what it wants): the measured values by seed."""
    out: dict[tuple[str, int, str], list[tuple[float, bool]]] = defaultdict(list)
    skip = {"experiment.seed", "algo", "expect", "measure", "metric", "measured", "passed", "run"}
    for r in rows:
        if r.get("expect") is None or r.get("measured") is None:
            continue
        point = ", ".join(f"{k}={v}" for k, v in r.items() if k not in skip and k != "want")
        key = (point, int(r["expect"]), str(r.get("metric", "")))
        out[key].append((float(r["measured"]), bool(r["passed"])))
    return out


def cell(values: list[tuple[float, bool]]) -> str:
    xs = [v for v, _ in values]
    ok = sum(p for _, p in values)
    return f"{statistics.fmean(xs):.3g} [{min(xs):.3g}-{max(xs):.3g}] {ok}/{len(xs)}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+", help="experiments/<name>.toml or a path")
    ap.add_argument("--jitter", type=jitters_arg, default=jitters_arg("0ms,2ms,10ms"))
    ap.add_argument("--seeds", type=seeds_arg, default=seeds_arg("1-4"))
    ap.add_argument("--results", type=Path, default=Path("results/noise"))
    ap.add_argument("--workers", type=int, default=0, help="processes (0: one per core)")
    args = ap.parse_args(argv)
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=escape("verdicts against host jitter: mean [range] passed/runs"))
    for col in ("file", "point", "check"):
        table.add_column(col)
    for j in args.jitter:
        table.add_column(f"host_jitter {j}")
    record: dict[str, Any] = {"jitter": args.jitter, "seeds": args.seeds, "files": {}}
    for name in args.files:
        try:
            path = resolve_path(name)
            doc = read_toml(path)
            validate(doc, path)
            by_jitter = {}
            for j in args.jitter:
                noisy = with_noise(doc, j, args.seeds)
                validate(noisy, path)
                out = run_sweep(
                    str(path), None, None, args.results / f"jitter-{j}", args.workers, doc=noisy
                )
                sweep = json.loads((out / "sweep.json").read_text())
                by_jitter[j] = (summarise(sweep["rows"]), str(out))
        except ExperimentError as e:
            print(f"noise_sensitivity: {e}", file=sys.stderr)
            return 2
        record["files"][path.stem] = {j: sweep_dir for j, (_, sweep_dir) in by_jitter.items()}
        keys = list(by_jitter[args.jitter[0]][0])
        for key in keys:
            point, i, metric = key
            cells = [
                cell(by_jitter[j][0][key]) if key in by_jitter[j][0] else "-" for j in args.jitter
            ]
            table.add_row(path.stem, escape(point or "-"), f"#{i} {metric}", *map(escape, cells))
    Console(width=200).print(table)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "noise.json").write_text(json.dumps(record, indent=2) + "\n")
    print(f"records: {args.results}/noise.json lists each sweep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
