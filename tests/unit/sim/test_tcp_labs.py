"""The TCP lab scenarios in the simulator, short and seeded: session control's SYN
gating beats no gating under overload, and the FCT experiment's ordering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fairgate_topo.scenarios.session_control", reason="lab scenarios missing")

from fairgate_sim.__main__ import main
from fairgate_sim.tcp_labs import FctLab, SessionLab


def test_session_control_gating_beats_no_gating_under_overload(tmp_path: Path) -> None:
    """The lab's smoke claim (static gating >= 1.5x the completions of no gating) on a
    14 s run at the lab's 500 pkt/s and 250 flows/s; gated flows finish faster."""
    lab = SessionLab("lab", smoke=True)
    assert lab.sc.algos == ("none", "static-60")
    none, _ = lab.run("none", 1, tmp_path / "none" / "controller.jsonl")
    gated, net = lab.run("static-60", 1, tmp_path / "static" / "controller.jsonl")
    a, b = none["summary"], gated["summary"]
    assert a["offered_per_s"] == pytest.approx(250, rel=0.1)
    assert b["completion_rate_per_s"] >= 1.5 * a["completion_rate_per_s"]
    assert b["fct_s"]["mean"] < a["fct_s"]["mean"]
    # The gate admitted about 60 SYNs/s and dropped the rest (the switch's counters).
    sw = net.switches["s1"]
    admitted, dropped = sw.events[1 << 3 | 0], sw.events[1 << 3 | 1]
    assert admitted / net.clock.now == pytest.approx(60, rel=0.1)
    assert dropped > admitted
    assert (tmp_path / "static" / "hosts" / "client-flows.jsonl").stat().st_size > 0


def test_session_search_settles_on_a_gated_rate(tmp_path: Path) -> None:
    """Strategy 1 over the simulated TCP: the controller's search runs unchanged on the
    switch's counters, measures the baseline, then gates below the offered rate."""
    lab = SessionLab("lab", duration_s=30.0)
    result, _ = lab.run("strategy1", 1, tmp_path / "s1" / "controller.jsonl")
    admit = result["admit"]
    assert admit[0][1] is None  # the baseline: no gating
    gated = [v for t, v in admit if v is not None]
    assert gated and all(1.0 <= v < 250 for v in gated)
    assert result["summary"]["completion_rate_per_s"] > 10


def test_fct_short_run_qfcp_beats_tcp(tmp_path: Path) -> None:
    """15 s of the lab's FCT workload: QFCP completes every flow and short flows faster
    than TCP (same flows, same 100 ms RTT); the summary has the lab's keys."""
    lab = FctLab("lab", duration_s=15.0)
    runs = {a: lab.run(a, 1, None)[0] for a in ("qfcp", "tcp")}
    out = lab.sc.summarize(runs, False)
    q, t = out["qfcp"], out["tcp"]
    assert q["flows"] == t["flows"] > 50
    assert q["completed_fraction"] == 1.0 and t["completed_fraction"] == 1.0
    assert q["mean_fct_short_s"] < t["mean_fct_short_s"]
    # Nothing completes faster than its handshake-free ideal: one RTT.
    assert min(f["fct_s"] for f in runs["qfcp"]["flows"]) > 0.1
    assert min(f["fct_s"] for f in runs["tcp"]["flows"]) > 0.2  # + the handshake
    assert lab.sc.plot(tmp_path, runs)[0].stat().st_size > 0


def test_cli_fct_smoke_writes_lab_keys(tmp_path: Path) -> None:
    assert main(["--exp", "fct", "--smoke", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["algos"] == ["qfcp"] and summary["engine"] == "simulator"
    assert {"flows", "completed", "mean_fct_s", "mean_fct_by_size_pkts"} <= set(summary["qfcp"])
    assert summary["qfcp"]["completed_fraction"] >= 0.95
    assert (tmp_path / "fct.png").stat().st_size > 0
