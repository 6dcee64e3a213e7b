"""Sweeps: ``[sweep.grid]`` maps field paths to values; every point of the grid (the
cartesian product) is the file with those values, checked again and run as its own run
record. In the simulator points fan out over local processes (``concurrent.futures``; by
default one per core), over a Dask ``LocalCluster`` of that many worker processes
(``scheduler="local"``) or over a Dask distributed cluster (``scheduler="tcp://host:8786"``);
on BMv2 they run one after the other in this process, each point in its own lab (one lab
at a time on a machine). One table (``sweep.csv``) and one plot per sweep in
``results/<experiment>/sweep-<UTC time>/``."""

from __future__ import annotations

import copy
import csv
import itertools
import json
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from fairgate_exp.load import read_toml, resolve_path, validate


def grid_points(
    grid: dict[str, list[Any]], zipped: dict[str, list[Any]] | None = None
) -> list[dict[str, Any]]:
    """The cartesian product of the grid; ``zipped`` lists follow the first grid key's
    value (its index), so they vary together with it."""
    keys = list(grid)
    first = grid[keys[0]] if keys else []
    out = []
    for combo in itertools.product(*grid.values()):
        point = dict(zip(keys, combo, strict=True))
        i = first.index(combo[0]) if keys else 0
        point.update({k: v[i] for k, v in (zipped or {}).items()})
        out.append(point)
    return out


def apply(doc: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """A copy of the raw document with each dotted path set (paths were checked)."""
    out = copy.deepcopy(doc)
    out.pop("sweep", None)
    for path, value in point.items():
        here: Any = out
        parts = path.split(".")
        for part in parts[:-1]:
            here = here[int(part)] if isinstance(here, list) else here.setdefault(part, {})
        last = parts[-1]
        if isinstance(here, list):
            here[int(last)] = value
        else:
            here[last] = value
    return out


def run_point(
    doc: dict[str, Any],
    path: str,
    scale: str | None,
    algos: list[str],
    results: str,
    engine: str = "sim",
    say: Any = None,
) -> dict[str, Any]:
    """One point, in whatever process runs it: validate, plan, run, summarise."""
    from fairgate_exp.check import check
    from fairgate_exp.driver import run
    from fairgate_exp.load import scaled
    from fairgate_exp.plan import build_plan

    p = Path(path)
    exp = validate(doc, p)
    check(exp)
    exp = scaled(doc, exp, p, scale)
    plan = build_plan(exp, p, scale)
    make: Any
    if engine == "bmv2":
        from fairgate_exp.engines.bmv2 import Bmv2Engine

        make = Bmv2Engine
    else:
        from fairgate_exp.engines.sim import SimEngine

        make = SimEngine
    quiet = say if say is not None else (lambda _m: None)
    run_dir, summary = run(plan, make, engine, Path(results), algos, say=quiet)
    return {"run_dir": str(run_dir), "summary": summary}


def sweep_refusal(engine: str, workers: int, scheduler: str | None) -> str | None:
    """Why a sweep cannot run this way (None: it can): BMv2 labs run one at a time."""
    if engine == "bmv2" and (workers > 1 or scheduler):
        return (
            "sweeps on BMv2 run one point after the other in one process "
            "(one lab at a time): drop --workers/--scheduler"
        )
    return None


def cores() -> int:
    """The cores this process may run on (its affinity; all of them by default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _on_dask(client: Any, jobs: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    futures = [client.submit(run_point, *job, pure=False) for job in jobs]
    return list(client.gather(futures))


def run_sweep(
    name_or_path: str,
    scale: str | None,
    algos: list[str] | None,
    results: Path,
    workers: int | None = None,
    scheduler: str | None = None,
    say: Any = print,
    engine: str = "sim",
    doc: dict[str, Any] | None = None,
) -> Path:
    """Run every point; ``workers`` local processes (None or 0: one per core, at most
    one per point), or on Dask: ``scheduler="local"`` starts a ``LocalCluster`` of
    ``workers`` processes, one thread each; an address uses that cluster. ``doc``: the
    file's document as read, changed by the caller (default: the file as it is)."""
    path = resolve_path(name_or_path)
    doc = read_toml(path) if doc is None else doc
    exp = validate(doc, path)
    assert exp.sweep is not None
    from fairgate_exp.check import check

    check(exp)
    points = grid_points(exp.sweep.grid, exp.sweep.zip)
    algos = algos or list(exp.experiment.algorithms)
    name = exp.experiment.name or path.stem
    jobs = [(apply(doc, pt), str(path), scale, algos, str(results)) for pt in points]
    refusal = sweep_refusal(engine, workers or 0, scheduler)
    if refusal:
        raise ValueError(refusal)
    if workers is not None and workers < 0:
        raise SystemExit(f"sweep {name}: --workers must be >= 0 (0: one per core), got {workers}")
    workers = 1 if engine == "bmv2" else min(workers or cores(), max(1, len(jobs)))
    where = f"{workers} local process(es)"
    if engine == "bmv2":
        where = "BMv2, one lab per point, one after the other"
    elif scheduler == "local":
        where = f"dask LocalCluster of {workers} process(es)"
    elif scheduler:
        where = f"dask {scheduler}"
    say(f"sweep {name}: {len(points)} points x {len(algos)} algorithms, {where}")
    t0 = time.monotonic()
    if engine == "bmv2":
        outs = []
        for i, job in enumerate(jobs, start=1):
            say(f"sweep {name}: point {i}/{len(jobs)}: {points[i - 1]}")
            outs.append(run_point(*job, engine="bmv2", say=say))
    elif scheduler == "local":
        from dask.distributed import Client, LocalCluster

        with (
            LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            ) as cluster,
            Client(cluster) as client,
        ):
            outs = _on_dask(client, jobs)
    elif scheduler:
        from dask.distributed import Client

        with Client(scheduler) as client:
            outs = _on_dask(client, jobs)
    elif workers <= 1:
        outs = [run_point(*job) for job in jobs]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            outs = list(pool.map(run_point, *zip(*jobs, strict=True)))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out_dir = results / name / f"sweep-{stamp}"
    n = 0
    while out_dir.exists():
        n += 1
        out_dir = results / name / f"sweep-{stamp}.{n}"
    out_dir.mkdir(parents=True)
    rows = [
        row
        for pt, res in zip(points, outs, strict=True)
        for row in sweep_rows(pt, res["summary"], Path(res["run_dir"]).name)
    ]
    with (out_dir / "sweep.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["run"])
        w.writeheader()
        w.writerows(rows)
    (out_dir / "sweep.json").write_text(
        json.dumps(
            {
                "experiment": name,
                "engine": engine,
                "grid": exp.sweep.grid,
                "zip": exp.sweep.zip,
                "algos": algos,
                "scheduler": scheduler,
                "workers": workers,
                "elapsed_s": round(time.monotonic() - t0, 1),
                "runs": [res["run_dir"] for res in outs],
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    _plot(out_dir, list(exp.sweep.grid), rows)
    say(f"sweep {name}: {tally(rows)}; {out_dir}")
    return out_dir


def tally(rows: list[dict[str, Any]]) -> str:
    """``<passed>/<judged> verdicts pass`` and how many values were measured (not judged)."""
    judged = [r for r in rows if r["measure"] is None]
    measured = len(rows) - len(judged)
    parts = [f"{sum(bool(r['passed']) for r in judged)}/{len(judged)} verdicts pass"]
    parts = parts if judged or not measured else ["nothing judged"]
    return ", ".join([*parts, f"{measured} values measured"] if measured else parts)


def sweep_rows(point: dict[str, Any], summary: dict[str, Any], run: str) -> list[dict[str, Any]]:
    """The table's rows of one point: each verdict (``expect``: its index, ``passed``)
    and each measured value (``measure``: its index in ``[measure]`` metrics, ``passed``
    empty: not judged), every row with the same columns."""
    verdicts = [
        _row(point, v, run, expect=v["expect"], passed=v["passed"])
        for v in summary.get("verdicts", [])
    ]
    measured = [_row(point, m, run, measure=m["measure"]) for m in summary.get("measured", [])]
    return verdicts + measured


def _row(
    point: dict[str, Any],
    v: dict[str, Any],
    run: str,
    expect: int | None = None,
    measure: int | None = None,
    passed: bool | None = None,
) -> dict[str, Any]:
    return {
        **point,
        "algo": v["algo"],
        "expect": expect,
        "measure": measure,
        "metric": v["metric"],
        "measured": v["measured"],
        "passed": passed,
        "run": run,
    }


def row_label(row: dict[str, Any]) -> str:
    """A table row's series: ``<algo> <metric>#<expect>`` for a verdict, ``<algo>
    <metric> (measured #<index>)`` for a measured value (old tables: verdicts only)."""
    if row.get("measure") is not None:
        return f"{row['algo']} {row['metric']} (measured #{row['measure']})"
    return f"{row['algo']} {row['metric']}#{row.get('expect')}"


def plot_series(
    key: str, rows: list[dict[str, Any]], others: list[str] | None = None
) -> dict[str, list[tuple[str, float]]]:
    """The plot's lines: per ``row_label`` (verdicts and measured values alike) and value
    of each of the ``others`` grid keys (one line per admit rate beside the offered load
    on the x axis), the swept ``key``'s value against what was measured, in row order; a
    point measured nothing (None) is left out."""
    out: dict[str, list[tuple[str, float]]] = {}
    for r in rows:
        if r["measured"] is not None:
            label = " ".join([row_label(r), *(f"{k}={r[k]}" for k in others or [])])
            out.setdefault(label, []).append((str(r[key]), float(r["measured"])))
    return out


def _plot(out_dir: Path, keys: list[str], rows: list[dict[str, Any]]) -> None:
    """sweep.png: the first grid key on the x axis, a line per series (``plot_series``)."""
    key = keys[0]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, pts in plot_series(key, rows, keys[1:]).items():
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    ax.set_xlabel(key)
    ax.set_ylabel("measured (see sweep.csv)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "sweep.png", dpi=90)
    plt.close(fig)
