"""Smoke variants (seconds long) of the experiment files on BMv2 in Mininet: the files in
``tests/mininet/smoke/`` (the same networks and flows as ``experiments/`` with shorter
phases) run through the BMv2 engine unchanged and every expectation they carry holds;
Ctrl-C on ``python -m fairgate_exp run`` leaves nothing running (issue #6). About 70 s.
Serialise with other BMv2 users: ``flock /tmp/fairgate-lab.lock .venv/bin/python -m pytest
tests/mininet/test_labs_smoke.py -q``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SMOKE = Path(__file__).resolve().parent / "smoke"


def run_file(tmp_path: Path, name: str) -> dict[str, Any]:
    from fairgate_exp.driver import run
    from fairgate_exp.engines.bmv2 import Bmv2Engine
    from fairgate_exp.load import load

    plan = load(SMOKE / f"{name}.toml")
    run_dir, summary = run(plan, Bmv2Engine, "bmv2", tmp_path, plan.algorithms, print)
    failed = [v for v in summary["verdicts"] if not v["passed"]]
    assert summary["verdicts"] and not failed, failed
    assert not list(run_dir.rglob("*.pid")), "a switch PID file was left behind"
    for plot in summary["plots"]:
        assert (run_dir / plot).stat().st_size > 1000
    return summary


def test_two_bottleneck_reaches_max_min_shares(tmp_path: Path) -> None:
    run_file(tmp_path, "two-bottleneck")


def test_cm_macroflow_shares_fairly_next_to_a_competitor(tmp_path: Path) -> None:
    """Four independent flows take 4/5 of the link; the CM's four flows one macroflow's
    half, split equally; audio plus bulk in one macroflow leave the competitor its half."""
    summary = run_file(tmp_path, "cm-sharing")
    windows = summary["results"]["qfcp"]["windows"]
    cm = next(w for name, w in windows.items() if name.startswith("cm"))
    rates = [cm["flows"][f"cm-{i}"]["mean_pps"] for i in range(4)]
    assert all(r > 0 for r in rates), rates
    audio = next(w for name, w in windows.items() if name.startswith("audio"))
    assert audio["flows"]["voice-audio"]["mean_pps"] > 0, audio["flows"]


def test_a_static_gate_is_the_controllers_and_recorded(tmp_path: Path) -> None:
    """A static gate (``admit_rate``) holds completions to its rate, and the controller
    that keeps it records the gated port and each session window, as for a search."""
    import csv
    import json

    summary = run_file(tmp_path, "session-gate")
    run_dir = next(tmp_path.rglob("summary.json")).parent
    assert summary["results"]["static-10"]["variant"]["admit_fps"] == 10.0
    rows = list(csv.DictReader((run_dir / "ports.csv").open()))
    gated = [r for r in rows if r["algo"] == "static-10" and float(r["t"]) >= 5.0]
    assert gated and sum(int(r["departure_pkts"]) for r in gated) > 0
    records = (run_dir / "static-10" / "controller.jsonl").read_text().splitlines()
    windows = [w for w in map(json.loads, records) if "window_completions_fps" in w]
    assert windows and all(w["session_phase"] == "static" for w in windows)
    assert all(w["admit_fps"] == 10.0 for w in windows)
    admitted = [w["window_admitted_fps"] for w in windows[1:]]
    assert max(admitted) <= 10.0 + 5 / 2  # the meter's rate, plus its burst over 2 s
    assert sum(w["window_completions_fps"] for w in windows[1:]) > 0


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if text.encode() in cmdline:
            pids.append(int(entry.name))
    return pids


def test_ctrl_c_leaves_nothing_running(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "fairgate_exp", "run", str(SMOKE / "two-bottleneck.toml")]
    cmd += ["--engine", "bmv2", "--results", str(tmp_path)]
    # unbuffered: through a pipe the child's progress lines would otherwise arrive in one
    # block at the end of the (10 s) run, after which there is nothing left to interrupt
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for raw in proc.stdout:
            # the first progress line (every 5 s without a terminal): agents are running
            if b"] t=" in raw or time.monotonic() > deadline:
                break
        assert _processes_mentioning(str(tmp_path)), "no agents were running"
        switch_pids = [int(p.read_text()) for p in tmp_path.rglob("*.pid")]
        assert switch_pids
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, out[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not _processes_mentioning(str(tmp_path))
    for pid in switch_pids:
        assert not Path(f"/proc/{pid}").exists(), f"switch {pid} still running"
