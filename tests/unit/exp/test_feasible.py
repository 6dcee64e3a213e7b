"""``feasible`` on completion_rate against other variants: strategy 2 (paper 000) maximises
the completion rate only over admit rates that do not exceed it, so its reference is the
best static gate that obeys that constraint, not the best of all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fairgate_exp.load import ExperimentError, load
from fairgate_exp.metrics import feasible_refs, judge_versus

GATES = """\
switches = ["s1", "s2"]
hosts = [{ name = "c", switch = "s1" }, { name = "srv", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "200pkt/s", buffer = "64pkt", gate_syn = true }]
variants = [{ name = "open" }, { name = "gate-50", admit_rate = 50.0 },
            { name = "gate-75", admit_rate = 75.0 }, { name = "search", session = "strategy2" }]

[[tcp]]
name = "small"
src = "c"
dst = "srv"
kind = "poisson"
arrival_rate = 40.0
mean_size = "2kB"

[experiment]
duration = "12s"
warmup = "2s"
algorithms = ["none"]

[[expect]]
metric = "completion_rate"
variants = ["search"]
versus = ["gate-50", "gate-75"]
feasible = "20%"
min = 0.95
"""


def _tcp(rates: dict[str, float]) -> dict[str, dict[str, Any]]:
    return {
        v: {"small": {"completion_rate_per_s": r, "window_s": [2.0, 12.0]}}
        for v, r in rates.items()
    }


def _load(tmp_path: Path, text: str) -> Any:
    path = tmp_path / "gates.toml"
    path.write_text(text)
    return load(path)


def test_only_gates_admitting_within_the_bound_are_references(tmp_path: Path) -> None:
    plan = _load(tmp_path, GATES)
    # gate-50 completes 44: 50 <= 1.2 x 44 = 52.8 counts; gate-75 completes 48:
    # 75 > 57.6 does not, however many it completes
    refs = feasible_refs(plan, {"gate-50": 44.0, "gate-75": 48.0}, 0.2)
    assert refs == {"gate-50": 44.0}
    assert feasible_refs(plan, {"gate-50": 41.0, "gate-75": 48.0}, 0.2) == {}
    # a larger bound admits both; no-gating (no admit rate) never counts
    assert feasible_refs(plan, {"gate-50": 44.0, "gate-75": 48.0, "open": 60.0}, 0.6) == {
        "gate-50": 44.0,
        "gate-75": 48.0,
    }


def test_search_is_judged_against_the_best_feasible_gate(tmp_path: Path) -> None:
    plan = _load(tmp_path, GATES)
    tcp = _tcp({"open": 20.0, "gate-50": 44.0, "gate-75": 48.0, "search": 43.0})
    (v,) = judge_versus(plan, "none", tcp, lambda n: n)
    assert v.detail["reference_variant"] == "gate-50" and v.detail["reference"] == 44.0
    assert v.measured == pytest.approx(43.0 / 44.0, abs=1e-3) and v.passed is True
    assert "admitting <= 1.2 x its completions" in v.expected
    # against every gate it would fail: 43 / 48 < 0.95
    plain = _load(tmp_path, GATES.replace('feasible = "20%"\n', ""))
    (w,) = judge_versus(plain, "none", tcp, lambda n: n)
    assert w.detail["reference_variant"] == "gate-75" and w.passed is False


def test_no_feasible_gate_fails_with_no_value(tmp_path: Path) -> None:
    plan = _load(tmp_path, GATES)
    tcp = _tcp({"open": 20.0, "gate-50": 30.0, "gate-75": 31.0, "search": 29.0})
    (v,) = judge_versus(plan, "none", tcp, lambda n: n)
    assert v.measured is None and v.passed is False and v.detail["reference"] is None


def test_feasible_needs_static_gates_and_a_completion_rate(tmp_path: Path) -> None:
    with pytest.raises(ExperimentError, match="versus variant 'open' has no admit_rate"):
        _load(tmp_path, GATES.replace('versus = ["gate-50", "gate-75"]', 'versus = ["open"]'))
    fct = GATES.replace('metric = "completion_rate"', 'metric = "fct"')
    with pytest.raises(ExperimentError, match="feasible belongs to completion_rate"):
        _load(tmp_path, fct)


def test_fct_of_arriving_flows_against_another_variant(tmp_path: Path) -> None:
    """fct_arrived judges the FCT of the flows arriving in the window, not of those that
    complete in it (a search's early flows): strategy 2 against strategy 1."""
    text = (
        GATES.replace(
            '{ name = "search", session = "strategy2" }',
            '{ name = "s1", session = "strategy1" }, { name = "s2", session = "strategy2" }',
        ).split("[[expect]]")[0]
        + '[[expect]]\nmetric = "fct_arrived"\nvariants = ["s2"]\nversus = ["s1"]\nmax = 1.0\n'
    )
    plan = _load(tmp_path, text)

    def tcp(window_fct: float, arrived_fct: float) -> dict[str, Any]:
        return {
            "small": {
                "completion_rate_per_s": 40.0,
                "window_s": [2.0, 12.0],
                "fct_s": {"mean": window_fct},
                "fct_arrived_s": {"mean": arrived_fct},
            }
        }

    # s2 has the longer window FCT (early flows) and the shorter arrived FCT
    (v,) = judge_versus(plan, "none", {"s1": tcp(3.0, 3.8), "s2": tcp(7.0, 2.9)}, lambda n: n)
    assert v.metric == "fct_arrived" and v.passed is True
    assert v.measured == pytest.approx(2.9 / 3.8, abs=1e-3)
    (w,) = judge_versus(plan, "none", {"s1": tcp(7.0, 2.1), "s2": tcp(3.0, 2.8)}, lambda n: n)
    assert w.passed is False and w.measured == pytest.approx(2.8 / 2.1, abs=1e-3)
