"""The lab scenarios rtt-fairness, lestas-dynamics, parking-lot and cm-sharing through
``python -m fairgate_sim`` (smoke variants, seed 1, about 2 s each): the lab's summary
keys and plots, and each paper's qualitative claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fairgate_topo.scenarios.parking_lot", reason="lab scenarios not importable")

from fairgate_sim.__main__ import main


def _run(tmp_path: Path, exp: str, *extra: str) -> dict[str, Any]:
    assert main(["--exp", exp, "--smoke", "--out", str(tmp_path), *extra]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"] == "simulator" and summary["smoke"] is True
    assert summary["scaling"]
    for plot in summary["plots"]:
        assert (tmp_path / plot).stat().st_size > 1000
    return summary


def test_rtt_fairness_both_rtts_reach_the_fair_share(tmp_path: Path) -> None:
    """QFCP Fig. 3: 20 ms and 200 ms flows both hold C/2 within seconds."""
    s = _run(tmp_path, "rtt-fairness", "--algo", "qfcp")
    q = s["qfcp"]
    assert q["converged_s"] is not None and q["converged_s"] < 2.0, q
    for rate in q["final_pps"].values():
        assert rate == pytest.approx(s["fair_pps"], rel=0.05)
    assert q["mean_utilisation"] > 0.95


def test_lestas_queue_settles_at_q_ref_after_users_leave_and_join(tmp_path: Path) -> None:
    """Lestas Figs. 6-7 (6 -> 2 -> 10 users): fair shares, full link and a queue that
    settles near q_ref (12.1 frames) in the 6- and 10-user phases, no drops."""
    s = _run(tmp_path, "lestas-dynamics")
    run, q_ref = s["lestas"], s["q_ref_pkts"]
    assert run["drops_total_pkts"] == 0 and run["max_queue_pkts"] < run["buffer_pkts"]
    six, two, ten = run["phases"]
    for phase in (six, ten):
        assert phase["users_seen"] == phase["users"], phase
        assert phase["jain"] > 0.99 and phase["utilisation"] > 0.97, phase
        assert phase["mean_rate_pps"] == pytest.approx(phase["fair_pps"], rel=0.05)
        assert 0.8 * q_ref <= phase["mean_queue_pkts"] <= 1.5 * q_ref, phase
    assert two["users_seen"] == 2 and two["mean_rate_pps"] > 0.85 * two["fair_pps"], two


def test_parking_lot_reaches_max_min_with_queues_at_q_ref(tmp_path: Path) -> None:
    """Lestas Figs. 8-9 (4 links, the third narrow): max-min rates, every link full,
    every queue near q_ref, no drops."""
    s = _run(tmp_path, "parking-lot")
    run = s["lestas"]
    assert run["max_relative_error"] <= 0.05, run["final_pps"]
    assert run["min_utilisation"] > 0.97
    q_ref = 10 * 1500 / 1242
    for link in run["links"].values():
        assert 0.8 * q_ref <= link["mean_queue_pkts"] <= 1.5 * q_ref, run["links"]
    assert run["drops_after_2s_pkts"] == 0


def test_cm_sharing_ensemble_behaves_as_one_flow(tmp_path: Path) -> None:
    """CM Figs. 9-10 with the CM core and the apps' own classes: four CM flows share
    one macroflow fairly and leave the competitor about C/2 (four independent flows
    leave it C/5); the audio picks the highest layer not above its CM share."""
    s = _run(tmp_path, "cm-sharing")
    run, cap = s["qfcp"], s["capacity_pps"]
    ind, cm, audio = run["independent"], run["cm"], run["audio"]
    assert len(ind["flow_pps"]) == 4 and len(cm["flow_pps"]) == 4, run
    assert ind["competitor_pps"] == pytest.approx(cap / 5, rel=0.1)
    assert cm["jain"] > 0.99
    assert run["competitor_gain_with_cm"] > 1.8
    assert audio["audio_share_pps"] / 2 <= audio["audio_pps"] <= audio["audio_share_pps"]
    assert audio["layer_kbps_samples"], audio
