"""Smoke variants (seconds long) of the issue #6 scenarios lestas-dynamics,
parking-lot, cm-sharing and fct on BMv2 in Mininet, each asserting the
paper's qualitative result. About 90 s in all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fairgate_topo.topos import fan_in


def run_lab(tmp_path: Path, exp: str, algo: str) -> dict[str, Any]:
    from fairgate_topo import lab

    code = lab.main(
        ["--exp", exp, "--algo", algo, "--smoke", "--results", str(tmp_path), "--run-id", "t"]
    )
    assert code == 0
    run_dir = tmp_path / exp / "t"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["rtt_emulation"] in ("netem", "ack-delay")
    assert summary["scaling"]
    assert summary["plots"]
    for plot in summary["plots"]:
        assert (run_dir / plot).stat().st_size > 1000
    assert not list(run_dir.rglob("*.pid")), "a switch PID file was left behind"
    return summary


def test_fan_in_topology_has_one_receiver() -> None:
    topo = fan_in(10, 600, 256)
    assert sorted(topo.hosts) == sorted([f"h{i}" for i in range(1, 11)] + ["r1"])
    assert topo.queues() == [("s1", 1, 600, 256)]


def test_lestas_dynamics_no_drops_and_queue_near_q_ref(tmp_path: Path) -> None:
    summary = run_lab(tmp_path, "lestas-dynamics", "lestas")
    s, q_ref = summary["lestas"], summary["q_ref_pkts"]
    assert s["drops_after_transient_pkts"] == 0, s
    six, two, ten = s["phases"]
    assert 0.5 * q_ref <= six["mean_queue_pkts"] <= 2.0 * q_ref, six
    assert six["utilisation"] > 0.9 and six["jain"] > 0.95, six
    assert two["mean_rate_pps"] > 0.8 * two["fair_pps"], two
    assert ten["users_seen"] == 10 and ten["jain"] > 0.9, ten
    assert s["max_queue_pkts"] < s["buffer_pkts"]


def test_parking_lot_max_min_full_links_queues_at_q_ref(tmp_path: Path) -> None:
    summary = run_lab(tmp_path, "parking-lot", "lestas")
    s = summary["lestas"]
    assert s["max_relative_error"] <= 0.15, s["final_pps"]
    assert s["min_utilisation"] > 0.9, s["links"]
    q_ref = 10 * 1500 / 1242
    for link in s["links"].values():
        assert 0.5 * q_ref <= link["mean_queue_pkts"] <= 2.0 * q_ref, s["links"]
    assert s["drops_after_2s_pkts"] == 0


def test_cm_ensemble_shares_fairly_and_behaves_as_one_flow(tmp_path: Path) -> None:
    summary = run_lab(tmp_path, "cm-sharing", "qfcp")
    s = summary["qfcp"]
    ind, cm, audio = s["independent"], s["cm"], s["audio"]
    assert len(ind["flow_pps"]) == 4 and len(cm["flow_pps"]) == 4, s
    assert cm["jain"] > 0.95, cm
    # four independent flows take 4/5 of the link, the CM's four take 1/2
    assert s["competitor_gain_with_cm"] > 1.8, s
    # layered audio: an encoding within a factor 2 of its CM share
    assert audio["audio_share_pps"] / 2 <= audio["audio_pps"] <= audio["audio_share_pps"], audio
    assert audio["competitor_pps"] > 0.35 * summary["capacity_pps"], audio


def test_fct_flows_complete_quickly_under_qfcp(tmp_path: Path) -> None:
    summary = run_lab(tmp_path, "fct", "qfcp")
    s = summary["qfcp"]
    assert s["flows"] > 20
    assert s["completed_fraction"] >= 0.95, s
    # short flows (<= 10 packets) finish within a few RTTs (100 ms)
    assert s["mean_fct_short_s"] < 0.6, s
