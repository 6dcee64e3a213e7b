"""RCP on the experiment files where it collapsed (issue 14), in the simulator:
qfcp-convergence at utilisation >= 0.9 in every phase (the file judges one), and fct with
every flow completed (it left 7-12 of 328 unfinished)."""

from __future__ import annotations

from pathlib import Path

from fairgate_exp.check import check
from fairgate_exp.driver import run_algo
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import read_toml, validate
from fairgate_exp.plan import build_plan

EXPERIMENTS = Path(__file__).resolve().parents[3] / "experiments"


def _run(doc: dict, path: Path, tmp_path: Path) -> dict:
    exp = validate(doc, path)
    check(exp)
    plan = build_plan(exp, path, None)
    return run_algo(plan, SimEngine(), "rcp", tmp_path / "rcp", lambda _m: None)


def test_qfcp_convergence_rcp_utilisation_in_every_phase(tmp_path: Path) -> None:
    path = EXPERIMENTS / "qfcp-convergence.toml"
    doc = read_toml(path)
    phases = [p["name"] for p in doc["phases"]]
    assert len(phases) == 7
    doc["expect"] = [{"metric": "utilisation", "min": 0.9, "phase": p} for p in phases]
    res = _run(doc, path, tmp_path)
    measured = {v.window: v.measured for v in res["verdicts"]}
    assert len(res["verdicts"]) == len(phases)
    assert all(v.passed for v in res["verdicts"]), measured


def test_fct_rcp_completes_every_flow(tmp_path: Path) -> None:
    path = EXPERIMENTS / "fct.toml"
    res = _run(read_toml(path), path, tmp_path)
    outcomes = [r["outcome"] for r in res["tcp"]]
    assert len(outcomes) > 300
    assert outcomes.count("completed") == len(outcomes), {o: outcomes.count(o) for o in outcomes}
