"""Congestion Manager apps in experiment files (simulator engine): experiments/cm-sharing.toml
reproduces the old path (the removed sim/fairgate_sim/labs_cm.py, lab scale, seed 1), less
the link slots its probes took."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import ExperimentError, load


def test_cm_sharing_matches_the_old_path(tmp_path: Path) -> None:
    _, summary = run(load("cm-sharing"), SimEngine, "sim", tmp_path / "r", say=lambda _m: None)
    w = summary["results"]["qfcp"]["windows"]

    def pps(phase: str, flow: str) -> float:
        return float(w[phase]["flows"][flow]["mean_pps"])

    # old path: competitor 79.6 / 188.9 / 185.1 pkt/s; CM flows 48.9 each; audio phase:
    # bulk 125.0, audio 75.0 (receiver packets/s). Since the CM's probes ride on its data
    # packets they take no slot of the 400 pkt/s link: the macroflow and the competitor
    # both come closer to their 200 pkt/s (record cm-sharing/20261127T214626Z-sim-file-605e86a:
    # competitor 194.3, CM flows 50.3 each, audio phase bulk 132.4, audio 75.0)
    assert abs(pps("independent", "competitor") - 79.6) < 2
    assert abs(pps("cm", "competitor") - 194.3) < 4
    assert all(abs(pps("cm", f"cm-{i}") - 50.3) < 2 for i in range(4))
    assert abs(pps("audio", "voice-0") - 132.4) < 4
    assert abs(pps("audio", "voice-audio") - 75.0) < 4
    assert summary["passed"]


def test_cm_app_with_unknown_host(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(
        """switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "100pkt/s" }]
cm = [{ name = "c", src = "h1", dst = "r9" }]
"""
    )
    with pytest.raises(ExperimentError, match="unknown host 'r9'"):
        load(path)
