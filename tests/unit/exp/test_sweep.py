"""Sweeps: a grid over a capacity runs one record per point, locally and on a Dask
LocalCluster, and the table has each point's verdicts."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import distributed
import pytest

from fairgate_exp.sweep import apply, grid_points, run_sweep

SWEPT = """\
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
         { name = "r1", switch = "s2", ack_delay = "20ms" }, { name = "r2", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "300pkt/s" }]
flows = [{ name = "a", src = "h1", dst = "r1" }, { name = "b", src = "h2", dst = "r2" }]

[experiment]
duration = "5s"
warmup = "3s"

[[expect]]
metric = "flow_rate"
flows = ["a"]
value = "150pkt/s"
within = "10%"

[sweep.grid]
"links.0.capacity" = ["300pkt/s", "600pkt/s"]
"""


def test_grid_and_apply() -> None:
    pts = grid_points({"x.a": [1, 2], "y": ["u", "v", "w"]})
    assert len(pts) == 6 and {"x.a": 2, "y": "w"} in pts
    doc = {"links": [{"capacity": "1pkt/s"}], "sweep": {"grid": {}}}
    out = apply(doc, {"links.0.capacity": "2pkt/s"})
    assert out == {"links": [{"capacity": "2pkt/s"}]} and doc["links"][0]["capacity"] == "1pkt/s"


def test_zip_follows_the_first_grid_key() -> None:
    pts = grid_points({"d": ["5ms", "1s"], "n": [1, 2]}, {"stagger": ["10ms", "1s"]})
    assert len(pts) == 4
    assert all(p["stagger"] == ("10ms" if p["d"] == "5ms" else "1s") for p in pts)


def test_zip_of_another_length_is_refused(tmp_path: Path) -> None:
    from fairgate_exp.load import ExperimentError, load

    path = tmp_path / "zipped.toml"
    path.write_text(SWEPT + '\n[sweep.zip]\n"flows.0.stagger" = ["1s"]\n')
    with pytest.raises(ExperimentError, match=r"sweep\.zip\.flows\.0\.stagger"):
        load(str(path))


def _check(out: Path) -> None:
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    by = {r["links.0.capacity"]: r for r in rows if r["measure"] == ""}  # the verdicts
    assert set(by) == {"300pkt/s", "600pkt/s"}
    # a at half of 300 pkt/s meets 150 pkt/s; at 600 pkt/s it gets 300 and does not
    assert by["300pkt/s"]["passed"] == "True" and by["600pkt/s"]["passed"] == "False"
    assert abs(float(by["600pkt/s"]["measured"]) - 1.0) < 0.1  # 300 vs 150: 100 % off
    assert (out / "sweep.png").exists()
    runs = [p for p in out.parent.iterdir() if p.name[0].isdigit()]
    assert len(runs) == 2


def test_sweep_local(tmp_path: Path) -> None:
    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    _check(run_sweep(str(path), None, None, tmp_path / "r", workers=1, say=lambda _m: None))


def test_sweep_on_a_dask_local_cluster(tmp_path: Path) -> None:
    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        out = run_sweep(
            str(path),
            None,
            None,
            tmp_path / "r",
            scheduler=cluster.scheduler_address,
            say=lambda _m: None,
        )
    _check(out)


def test_bmv2_sweep_runs_points_one_after_the_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On BMv2 every point is its own lab, run in this process in grid order (the labs
    themselves are exercised by the lab runs; here: the sequencing and the table)."""
    import fairgate_exp.sweep as sweep

    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    calls: list[tuple[str, str]] = []

    def fake_point(
        doc: dict[str, Any], *_args: Any, engine: str = "sim", say: Any = None
    ) -> dict[str, Any]:
        calls.append((doc["links"][0]["capacity"], engine))
        verdict = {"algo": "qfcp", "expect": 0, "metric": "flow_rate", "passed": True}
        run_dir = tmp_path / f"run-{len(calls)}"
        return {"run_dir": str(run_dir), "summary": {"verdicts": [{**verdict, "measured": 1}]}}

    monkeypatch.setattr(sweep, "run_point", fake_point)
    out = sweep.run_sweep(
        str(path), None, None, tmp_path / "res", say=lambda _m: None, engine="bmv2"
    )
    assert calls == [("300pkt/s", "bmv2"), ("600pkt/s", "bmv2")]
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    assert [r["run"] for r in rows] == ["run-1", "run-2"]
    with pytest.raises(ValueError, match="one lab at a time"):
        sweep.run_sweep(str(path), None, None, tmp_path / "res", workers=2, engine="bmv2")


def test_bmv2_sweep_with_workers_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fairgate_exp.__main__ import main

    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    code = main(["run", str(path), "--engine", "bmv2", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "one lab at a time" in err, err


def test_sweep_uses_every_core_by_default(tmp_path: Path) -> None:
    import json

    from fairgate_exp.sweep import cores

    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    said: list[str] = []
    out = run_sweep(str(path), None, None, tmp_path / "r", say=said.append)
    _check(out)
    want = min(cores(), 2)  # one process per core, at most one per point
    assert json.loads((out / "sweep.json").read_text())["workers"] == want
    assert f"{want} local process(es)" in said[0]


def test_sweep_on_a_local_cluster_of_processes(tmp_path: Path) -> None:
    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    said: list[str] = []
    out = run_sweep(str(path), None, None, tmp_path / "r", 2, "local", say=said.append)
    _check(out)
    assert "dask LocalCluster of 2 process(es)" in said[0]


def test_negative_workers_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "swept.toml"
    path.write_text(SWEPT)
    with pytest.raises(SystemExit, match="--workers must be >= 0"):
        run_sweep(str(path), None, None, tmp_path / "r", -1, say=lambda _m: None)


MEASURED = SWEPT.replace(
    "[[expect]]",
    '[measure]\nmetrics = ["utilisation", { metric = "flow_rate", flows = ["a"], '
    'value = "150pkt/s" }]\n\n[[expect]]',
)


def test_measured_metrics_are_rows_without_a_verdict(tmp_path: Path) -> None:
    """[measure] metrics become rows of their own, measured by the expectations' code
    (the measured flow_rate is the verdict's own number) and never judged."""
    import json

    from fairgate_exp.sweep import plot_series

    path = tmp_path / "measured.toml"
    path.write_text(MEASURED)
    said: list[str] = []
    out = run_sweep(str(path), None, None, tmp_path / "r", workers=1, say=said.append)
    _check(out)
    rows = list(csv.DictReader((out / "sweep.csv").open()))
    judged = [r for r in rows if r["expect"] != ""]
    measured = [r for r in rows if r["measure"] != ""]
    assert len(judged) == 2 and len(measured) == 4 and len(rows) == 6
    assert all(r["measure"] == "" and r["passed"] in ("True", "False") for r in judged)
    assert all(r["expect"] == "" and r["passed"] == "" for r in measured)
    for cap in ("300pkt/s", "600pkt/s"):
        (verdict,) = [r for r in judged if r["links.0.capacity"] == cap]
        (rate,) = [r for r in measured if r["links.0.capacity"] == cap and r["measure"] == "1"]
        (util,) = [r for r in measured if r["links.0.capacity"] == cap and r["measure"] == "0"]
        assert rate["metric"] == "flow_rate" and rate["measured"] == verdict["measured"]
        assert util["metric"] == "utilisation" and 0.5 < float(util["measured"]) <= 1.0
    run = Path(json.loads((out / "sweep.json").read_text())["runs"][0])
    summary = json.loads((run / "summary.json").read_text())
    assert [v["expect"] for v in summary["verdicts"]] == [0]
    assert [(m["measure"], m["metric"]) for m in summary["measured"]] == [
        (0, "utilisation"),
        (1, "flow_rate"),
    ]
    assert all("passed" not in m for m in summary["measured"])
    assert "1/2 verdicts pass, 4 values measured" in said[-1]  # not 3/6
    series = plot_series("links.0.capacity", json.loads((out / "sweep.json").read_text())["rows"])
    assert set(series) == {
        "qfcp flow_rate#0",
        "qfcp utilisation (measured #0)",
        "qfcp flow_rate (measured #1)",
    }
    assert [x for x, _ in series["qfcp utilisation (measured #0)"]] == ["300pkt/s", "600pkt/s"]


def test_sweep_rows_of_an_old_summary_and_a_point_that_measured_nothing() -> None:
    """A summary with verdicts only (records before [measure] metrics) gives its verdict
    rows; a value measured as None is a row but no point of the plot."""
    from fairgate_exp.sweep import plot_series, sweep_rows

    old = {
        "verdicts": [
            {"expect": 0, "algo": "none", "metric": "drops", "measured": 3, "passed": False}
        ]
    }
    rows = sweep_rows({"x": 1}, old, "run-1")
    assert rows == [
        {
            "x": 1,
            "algo": "none",
            "expect": 0,
            "measure": None,
            "metric": "drops",
            "measured": 3,
            "passed": False,
            "run": "run-1",
        }
    ]
    new = {"measured": [{"measure": 0, "algo": "none", "metric": "fct", "measured": None}]}
    rows += sweep_rows({"x": 2}, new, "run-2")
    assert rows[1]["passed"] is None and rows[1]["measure"] == 0
    assert plot_series("x", rows) == {"none drops#0": [("1", 3.0)]}


def test_tally_says_what_was_judged_and_what_measured() -> None:
    from fairgate_exp.sweep import tally

    verdict = {"measure": None, "passed": True}
    value = {"measure": 0, "passed": None}
    assert tally([verdict, {**verdict, "passed": False}]) == "1/2 verdicts pass"
    assert tally([verdict, value, value]) == "1/1 verdicts pass, 2 values measured"
    assert tally([value]) == "nothing judged, 1 values measured"


def test_plot_has_a_line_per_value_of_the_other_grid_keys() -> None:
    """Two grid keys (offered load x admit rate): the x axis is the first, one line per
    admit rate, not one line zig-zagging through every point."""
    from fairgate_exp.sweep import plot_series, sweep_rows

    rows = []
    for load, admit, rate in ((500, 150, 120.0), (500, 250, 114.0), (1500, 150, 117.0)):
        summary = {
            "measured": [
                {"measure": 0, "algo": "static", "metric": "completion_rate", "measured": rate}
            ]
        }
        rows += sweep_rows({"load": load, "admit": admit}, summary, f"run-{load}-{admit}")
    series = plot_series("load", rows, ["admit"])
    assert series == {
        "static completion_rate (measured #0) admit=150": [("500", 120.0), ("1500", 117.0)],
        "static completion_rate (measured #0) admit=250": [("500", 114.0)],
    }
