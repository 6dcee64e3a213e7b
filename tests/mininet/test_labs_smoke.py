"""Smoke variants of the lab scenarios (seconds long) on BMv2 in Mininet, each
asserting the paper's qualitative result, plus Ctrl-C leaving nothing running
(issue #6). About 90 s in all."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fairgate_topo.labnet import LabTopology
from fairgate_topo.topos import dumbbell, parking_lot, two_bottleneck

REPO = Path(__file__).resolve().parents[2]


def run_lab(tmp_path: Path, exp: str, algo: str) -> dict[str, Any]:
    from fairgate_topo import lab

    code = lab.main(
        ["--exp", exp, "--algo", algo, "--smoke", "--results", str(tmp_path), "--run-id", "t"]
    )
    assert code == 0
    run_dir = tmp_path / exp / "t"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rtt_emulation"] in ("netem", "ack-delay")
    for plot in summary["plots"]:
        assert (run_dir / plot).stat().st_size > 1000
    assert not list(run_dir.rglob("*.pid")), "a switch PID file was left behind"
    return summary


def test_topologies_write_a_topology_file_the_controller_accepts() -> None:
    topos: list[LabTopology] = [dumbbell(3, 500), two_bottleneck(400, 1000), parking_lot([500] * 3)]
    for topo in topos:
        addresses = {s: (f"127.0.0.1:{5000 + i}", 9000 + i) for i, s in enumerate(topo.switches)}
        doc = topo.topology_json(addresses)
        assert len(doc["hosts"]) == len(topo.hosts)
    tb = two_bottleneck(400, 1000)
    addresses = {s: (f"127.0.0.1:{5000 + i}", 9000 + i) for i, s in enumerate(tb.switches)}
    doc = tb.topology_json(addresses)
    caps = sorted(link["capacity_kbps"] for link in doc["links"])
    assert caps == pytest.approx([400 * 1242 * 8 / 1000, 1000 * 1242 * 8 / 1000])
    assert tb.queues() == [("s1", 1, 400, 64), ("s2", 2, 1000, 64)]


def test_two_bottleneck_reaches_max_min_shares(tmp_path: Path) -> None:
    s = run_lab(tmp_path, "two-bottleneck", "qfcp")["qfcp"]
    assert s["max_relative_error"] <= 0.15, s["final_pps"]
    assert s["max_queue_pkts"] < 64


def test_qfcp_convergence_shares_fairly_and_fills_the_link(tmp_path: Path) -> None:
    s = run_lab(tmp_path, "qfcp-convergence", "qfcp")["qfcp"]
    four = next(p for p in s["phases"] if p["flows"] == 4)
    assert four["jain"] > 0.95, four
    assert 0.8 < four["mean_rate_over_fair"] < 1.1, four
    assert s["mean_utilisation"] > 0.8
    assert s["max_queue_pkts"] < 64


def test_session_gating_completes_more_flows_than_no_control(tmp_path: Path) -> None:
    s = run_lab(tmp_path, "session-control", "all")
    assert s["none"]["completion_rate_per_s"] > 0
    assert s["ratio_to_no_control"]["static-60"] >= 1.5, s["ratio_to_no_control"]


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
    cmd = [sys.executable, "-m", "fairgate_topo.lab", "--exp", "two-bottleneck", "--smoke"]
    cmd += ["--algo", "qfcp", "--results", str(tmp_path), "--run-id", "t"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 60
        for raw in proc.stdout:
            if b"t=  2." in raw or time.monotonic() > deadline:
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
