"""``python -m fairgate_sim`` writes the lab's summary keys and plots."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("fairgate_topo.scenarios.convergence", reason="lab scenarios not importable")

from fairgate_sim.__main__ import main


def test_convergence_lab_scale_summary(tmp_path: Path) -> None:
    assert main(["--exp", "qfcp-convergence", "--algo", "qfcp", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["engine"] == "simulator"
    q = summary["qfcp"]
    assert q["min_jain"] > 0.98
    assert q["mean_utilisation"] > 0.95
    for phase in q["phases"]:
        assert phase["mean_rate_over_fair"] == pytest.approx(1.0, rel=0.1)
    assert (tmp_path / summary["plots"][0]).stat().st_size > 0
    assert (tmp_path / "qfcp" / "controller.jsonl").exists()
