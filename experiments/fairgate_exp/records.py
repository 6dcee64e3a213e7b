"""Run records: ``results/<experiment>/<run-id>/``, never overwritten, ``latest`` link."""

from __future__ import annotations

import csv
import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
#: A BMv2 variant folder's time 0 (its controller.jsonl carries wall time; the simulator's
#: records start at 0 and have none)
T0_FILE = "t0.json"


def write_t0(folder: Path, t0: float) -> None:
    """Store a run's time 0 (wall clock) in ``folder``."""
    (folder / T0_FILE).write_text(json.dumps({"t0": t0}) + "\n")


def read_t0(folder: Path) -> float | None:
    """The time 0 stored in ``folder``, or None when it has none."""
    path = folder / T0_FILE
    return float(json.loads(path.read_text())["t0"]) if path.is_file() else None


def git_commit(short: bool = True) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", *(["--short"] if short else []), "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        commit = out.stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "nogit"


def _tool_version(cmd: str) -> str | None:
    path = shutil.which(cmd)
    if path is None:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[-1] if text else None


def versions(engine: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "fairgate_commit": git_commit(short=False),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }
    if engine == "bmv2":
        out["p4c"] = _tool_version(os.environ.get("P4C", "p4c-bm2-ss"))
        out["bmv2"] = _tool_version(os.environ.get("SWITCH", "simple_switch_grpc"))
    return out


def new_run_dir(results: Path, experiment: str, engine: str, scale: str) -> Path:
    """``<UTC time>-<engine>-<scale>-<commit>``; a suffix if that folder exists already."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = f"{stamp}-{engine}-{scale}-{git_commit()}"
    root = results / experiment
    root.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        run_id = base if n == 0 else f"{base}.{n}"
        try:
            (root / run_id).mkdir()
        except FileExistsError:
            continue
        return root / run_id
    raise RuntimeError(f"cannot make a run folder under {root}")


def link_latest(run_dir: Path) -> None:
    latest = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    tmp.replace(latest)


def write_json(path: Path, doc: Any) -> None:
    """``doc`` as indented JSON, written whole or not at all: to a temporary file beside
    ``path``, then renamed over it, so a reader polling the run folder (the live
    dashboard waits for summary.json) never sees it empty or half written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(doc, indent=2) + "\n")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    if not rows:
        path.write_text("")
        return
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def read_tcp_rows(run_dir: Path) -> dict[str, list[dict[str, str]]]:
    """A run folder's ``tcp.csv`` (the driver's ``write_csv``: one row per generated flow),
    its rows by variant (the ``algo`` column), in file order. OSError, ValueError (a
    malformed file) and KeyError (no ``algo`` column) reach the caller."""
    by: dict[str, list[dict[str, str]]] = {}
    with (run_dir / "tcp.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            by.setdefault(r["algo"], []).append(r)
    return by


def read_tcp_run(run_dir: Path) -> tuple[dict[str, Any], dict[str, list[dict[str, str]]]]:
    """A run folder's ``summary.json`` and its ``tcp.csv`` rows by variant
    (``read_tcp_rows``): what the session scripts read of a run. OSError, ValueError and
    KeyError reach the caller."""
    return json.loads((run_dir / "summary.json").read_text()), read_tcp_rows(run_dir)
