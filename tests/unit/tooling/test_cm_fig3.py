"""scripts/cm_fig3.py: the CM paper's Fig. 3 quantities (n_r, n_d, p, K) from run records."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import cm_fig3  # noqa: E402


def write_run(
    d: Path, cm: tuple[int, int, float], nr: tuple[int, int, float], cap: str = "1Mbit/s"
) -> Path:
    """A run folder: (segments delivered, retransmitted, window goodput) per flow."""
    d.mkdir(parents=True)
    summary = {
        "results": {
            "none": {
                "windows": {
                    "run": {
                        "flows": {"tcpcm-0": {"mean_pps": cm[2]}, "newreno": {"mean_pps": nr[2]}}
                    }
                },
                "engine": {"cm": {"tcpcm": {"retransmits": cm[1]}}},
                "tcp_flows": {"retrans_per_flow": {"newreno": {"total": nr[1]}}},
            }
        }
    }
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "experiment.json").write_text(json.dumps({"links": [{"capacity": cap}]}))
    lines = ["algo,t,flow,seq_pkts,rate_pps,losses,cm_rate_kbps"]
    for t, frac in ((1.0, 0.5), (2.0, 1.0)):
        lines.append(f"none,{t},tcpcm-0,{int(cm[0] * frac)},,0,")
        lines.append(f"none,{t},newreno,{int(nr[0] * frac)},,0,")
    (d / "traces.csv").write_text("\n".join(lines) + "\n")
    return d


def test_k_is_n_r_sqrt_p_and_the_ratio_compares_at_equal_loss(tmp_path: Path) -> None:
    # TCP/CM delivers 1.25x NewReno's segments at 1/1.25^2 of its loss rate:
    # the paper's lambda = K / sqrt(p) holds for both, K's ratio is 1
    run = write_run(tmp_path / "r", (12500, 80, 50.0), (10000, 100, 40.0))
    pt = cm_fig3.run_facts(run)
    assert pt.label == "1Mbit/s"
    assert pt.goodput_ratio == pytest.approx(1.25)
    assert pt.cm.p == pytest.approx(80 / 12580)
    assert pt.newreno.k == pytest.approx(10000 * math.sqrt(100 / 10100))
    assert pt.k_ratio == pytest.approx(
        12500 * math.sqrt(80 / 12580) / (10000 * math.sqrt(100 / 10100))
    )
    assert 0.99 < pt.k_ratio < 1.01
    # the same goodput ratio at the same loss rate: TCP/CM is more aggressive
    same = cm_fig3.run_facts(write_run(tmp_path / "s", (12500, 125, 50.0), (10000, 100, 40.0)))
    assert same.k_ratio == pytest.approx(1.25, rel=0.01)


def test_sweep_points_in_order_with_the_swept_value(tmp_path: Path) -> None:
    root = tmp_path / "cm-tcp-friendly-sweep"
    write_run(root / "a", (100, 10, 1.0), (100, 10, 1.0))
    write_run(root / "b", (400, 10, 2.0), (200, 10, 1.0))
    sweep = root / "sweep-x"
    sweep.mkdir()
    rows = [
        {"links.0.capacity": cap, "run": run, "expect": e}
        for cap, run in (("2Mbit/s", "b"), ("1Mbit/s", "a"))
        for e in (0, 1)
    ]
    (sweep / "sweep.json").write_text(
        json.dumps({"grid": {"links.0.capacity": ["2Mbit/s", "1Mbit/s"]}, "rows": rows})
    )
    pts = cm_fig3.sweep_points(sweep)
    assert [(p.label, p.run) for p in pts] == [("2Mbit/s", "b"), ("1Mbit/s", "a")]
    assert pts[0].goodput_ratio == 2.0
    assert "| 2Mbit/s | `b` | 2.000 |" in cm_fig3.table(pts)


def test_slope_of_the_papers_line() -> None:
    # n_r^2 = K^2 (n_r / n_d) + K^2 with K^2 = 4: slope 4
    assert cm_fig3.slope([(x, 4 * x + 4) for x in (10.0, 20.0, 50.0)]) == pytest.approx(4.0)
    assert cm_fig3.slope([(1.0, 2.0)]) is None
    assert cm_fig3.fig3_xy(cm_fig3.FlowFacts(100, 0, 1.0)) is None


def test_main_refuses_a_folder_that_is_no_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cm_fig3.main([str(tmp_path)]) == 2
    run = write_run(tmp_path / "r", (300, 3, 3.0), (200, 2, 2.0))
    assert cm_fig3.main([str(run)]) == 0
    assert "slope of n_r^2 on n_r/n_d, TCP/CM: -" in capsys.readouterr().out
