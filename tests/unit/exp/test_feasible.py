"""``feasible`` on completion_rate against other variants: strategy 2 (paper 000) maximises
the completion rate only over admit rates that do not exceed it, so its reference is the
best static gate that obeys that constraint, not the best of all. Judged on
experiments/session-control.toml's own variants (no gating, static gates 25-150 flows/s,
both strategies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fairgate_exp.load import ExperimentError, load
from fairgate_exp.metrics import Verdict, feasible_refs, judge_versus
from fairgate_exp.schema import Expect

FILE = Path(__file__).resolve().parents[3] / "experiments" / "session-control.toml"
GATES = ["static-50", "static-75"]


@pytest.fixture(scope="module")
def plan() -> Any:
    return load(FILE)


def _tcp(rates: dict[str, float]) -> dict[str, dict[str, Any]]:
    return {
        v: {"uploads": {"completion_rate_per_s": r, "window_s": [90.0, 150.0]}}
        for v, r in rates.items()
    }


def _judge(plan: Any, tcp: dict[str, dict[str, Any]], **expect: Any) -> list[Verdict]:
    return judge_versus(plan, "none", tcp, lambda n: n, [(0, Expect.model_validate(expect))])


def _feasible(plan: Any, tcp: dict[str, dict[str, Any]], **extra: Any) -> list[Verdict]:
    return _judge(
        plan,
        tcp,
        metric="completion_rate",
        variants=["strategy2"],
        versus=GATES,
        min=0.95,
        **extra,
    )


def test_only_gates_admitting_within_the_bound_are_references(plan: Any) -> None:
    # static-50 completes 44: 50 <= 1.2 x 44 = 52.8 counts; static-75 completes 48:
    # 75 > 57.6 does not, however many it completes
    refs = feasible_refs(plan, {"static-50": 44.0, "static-75": 48.0}, 0.2)
    assert refs == {"static-50": 44.0}
    assert feasible_refs(plan, {"static-50": 41.0, "static-75": 48.0}, 0.2) == {}
    # a larger bound admits both; no gating (no admit rate) never counts
    got = feasible_refs(plan, {"static-50": 44.0, "static-75": 48.0, "none": 60.0}, 0.6)
    assert got == {"static-50": 44.0, "static-75": 48.0}


def test_search_is_judged_against_the_best_feasible_gate(plan: Any) -> None:
    tcp = _tcp({"none": 20.0, "static-50": 44.0, "static-75": 48.0, "strategy2": 43.0})
    (v,) = _feasible(plan, tcp, feasible="20%")
    assert v.detail["reference_variant"] == "static-50" and v.detail["reference"] == 44.0
    assert v.measured == pytest.approx(43.0 / 44.0, abs=1e-3) and v.passed is True
    assert "admitting <= 1.2 x its completions" in v.expected
    # against every gate it would fail: 43 / 48 < 0.95
    (w,) = _feasible(plan, tcp)
    assert w.detail["reference_variant"] == "static-75" and w.passed is False


def test_no_feasible_gate_fails_with_no_value(plan: Any) -> None:
    tcp = _tcp({"none": 20.0, "static-50": 30.0, "static-75": 31.0, "strategy2": 29.0})
    (v,) = _feasible(plan, tcp, feasible="20%")
    assert v.measured is None and v.passed is False and v.detail["reference"] is None


def test_feasible_needs_static_gates_and_a_completion_rate(tmp_path: Path) -> None:
    path = tmp_path / "gates.toml"
    base = FILE.read_text()
    extra = '\n[[expect]]\nmetric = "{}"\nvariants = ["strategy2"]\nversus = [{}]\n'
    extra += 'feasible = "20%"\nmin = 0.95\n'
    path.write_text(base + extra.format("completion_rate", '"none"'))
    with pytest.raises(ExperimentError, match="versus variant 'none' has no admit_rate"):
        load(path)
    path.write_text(base + extra.format("fct", '"static-50"'))
    with pytest.raises(ExperimentError, match="feasible belongs to completion_rate"):
        load(path)


def test_fct_of_arriving_flows_against_another_variant(plan: Any) -> None:
    """fct_arrived judges the FCT of the flows arriving in the window, not of those that
    complete in it (a search's early flows): strategy 2 against strategy 1."""

    def tcp(window_fct: float, arrived_fct: float) -> dict[str, Any]:
        return {
            "uploads": {
                "completion_rate_per_s": 40.0,
                "window_s": [90.0, 150.0],
                "fct_s": {"mean": window_fct},
                "fct_arrived_s": {"mean": arrived_fct},
            }
        }

    def judge(s1: dict[str, Any], s2: dict[str, Any]) -> Verdict:
        (v,) = _judge(
            plan,
            {"strategy1": s1, "strategy2": s2},
            metric="fct_arrived",
            variants=["strategy2"],
            versus=["strategy1"],
            max=1.0,
        )
        return v

    # strategy 2 has the longer window FCT (early flows) and the shorter arrived FCT
    v = judge(tcp(3.0, 3.8), tcp(7.0, 2.9))
    assert v.metric == "fct_arrived" and v.passed is True
    assert v.measured == pytest.approx(2.9 / 3.8, abs=1e-3)
    w = judge(tcp(7.0, 2.1), tcp(3.0, 2.8))
    assert w.passed is False and w.measured == pytest.approx(2.8 / 2.1, abs=1e-3)
