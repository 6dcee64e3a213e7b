"""Run records: two runs leave two folders, ``latest`` follows, the record is complete;
the simulator engine never imports the BMv2 lab; every shipped file is valid."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fairgate_exp.__main__ import main
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import EXPERIMENTS_DIR, load

ROOT = Path(__file__).resolve().parents[3]

SMALL = """\
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
         { name = "r1", switch = "s2", ack_delay = "20ms" }, { name = "r2", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "300pkt/s" }]
flows = [{ name = "a", src = "h1", dst = "r1" },
         { name = "b", src = "h2", dst = "r2", start = "1s" }]

[experiment]
duration = "6s"
warmup = "4s"

[[expect]]
metric = "maxmin"
within = "10%"
"""


def test_two_runs_two_records(tmp_path: Path) -> None:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    plan = load(path)
    first, _ = run(plan, SimEngine, "sim", tmp_path / "results", say=lambda _m: None)
    second, _ = run(plan, SimEngine, "sim", tmp_path / "results", say=lambda _m: None)
    assert first != second and first.parent == second.parent == tmp_path / "results" / "small"
    assert (first.parent / "latest").resolve() == second.resolve()
    assert "-sim-file-" in second.name
    resolved = json.loads((second / "experiment.json").read_text())
    assert resolved["control"]["period"] == "auto"  # a default, filled in
    assert resolved["resolved"]["flows"]["a"]["path"] == ["s1->s2", "s2->r1"]
    versions = json.loads((second / "versions.json").read_text())
    assert versions["python"] and versions["fairgate_commit"]
    summary = json.loads((second / "summary.json").read_text())
    assert summary["seed"] == 1 and summary["run_id"] == second.name
    (verdict,) = summary["verdicts"]
    assert verdict["metric"] == "maxmin" and verdict["passed"] is True
    flows = list(csv.DictReader((second / "flows.csv").open()))
    assert {r["flow"] for r in flows} == {"a", "b"}
    late = [float(r["rate_pps"]) for r in flows if r["flow"] == "b" and 4.5 < float(r["t"]) <= 6.0]
    assert late and abs(sum(late) / len(late) - 150) < 15  # half of 300 pkt/s
    ports = list(csv.DictReader((second / "ports.csv").open()))
    assert {r["port"] for r in ports} == {"s1->s2"}
    assert (second / "small.png").stat().st_size > 1000


def test_cli_run_writes_a_record(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    code = main(["run", str(path), "--results", str(tmp_path / "r"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS [qfcp] maxmin" in out
    assert (tmp_path / "r" / "small" / "latest" / "summary.json").exists()


def test_simulator_engine_does_not_import_the_lab() -> None:
    code = (
        "import sys, fairgate_exp.engines.sim, fairgate_exp.driver, fairgate_exp.__main__;"
        "print(sorted(m for m in sys.modules if m.startswith('fairgate_topo')))"
    )
    path = ":".join(str(ROOT / p) for p in ("experiments", "sim", "controller", "hosts", "p4src"))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": path},
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("path", sorted(EXPERIMENTS_DIR.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_files_are_valid(path: Path) -> None:
    plan = load(path)
    # every file judges something or records values without a verdict ([measure] metrics)
    assert (plan.flows or plan.tcp or plan.cm) and (plan.file.expect or plan.file.measure.metrics)
    for scale in plan.file.scales:
        own = plan.file.scales[scale]
        parent = plan.file.scales[own.extends] if own.extends is not None else own
        assert load(path, scale).factor == (own.factor or parent.factor)


def test_exact_queue_in_the_simulator(tmp_path: Path) -> None:
    """measure.queue = "exact": the queue column is the true queue sampled every 5 ms;
    Lestas holds it near q_ref (10 x 1500 B = 12.1 frames of 1242 B)."""
    path = tmp_path / "small.toml"
    text = SMALL.replace('warmup = "4s"', 'warmup = "4s"\nalgorithms = ["lestas"]')
    path.write_text(text.replace("[experiment]", '[measure]\nqueue = "exact"\n\n[experiment]'))
    plan = load(path)
    assert plan.exact_queue
    run_dir, summary = run(plan, SimEngine, "sim", tmp_path / "r", say=lambda _m: None)
    q = summary["results"]["lestas"]["ports"]["s1->s2"]["queue_pkts"]
    assert 0.7 * 12.1 < q < 1.3 * 12.1, q
    raw = [
        json.loads(x) for x in (run_dir / "lestas" / "controller.jsonl").read_text().splitlines()
    ]
    assert raw  # the controller's own records are kept beside


def test_flow_count_expands_users_and_uplink(tmp_path: Path) -> None:
    """flows[].count = N: users <name>-1..N, started stagger apart; hosts[].uplink sets
    the host -> switch rate in the simulator."""
    plan = load(EXPERIMENTS_DIR / "lestas-users.toml")
    users = [f for f in plan.flows]
    assert [f.name for f in users[:2]] == ["user-1", "user-2"] and len(users) == 50
    assert users[1].start_s - users[0].start_s == pytest.approx(0.01)
    assert plan.hosts["h1"].uplink_bps == pytest.approx(10e9)
    path = tmp_path / "late.toml"
    path.write_text(
        SMALL.replace(
            '{ name = "a", src = "h1", dst = "r1" }',
            '{ name = "a", src = "h1", dst = "r1", count = 5, stagger = "2s" }',
        )
    )
    with pytest.raises(Exception, match="last user starts after it stops"):
        load(path)


def test_write_json_replaces_the_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader polling the folder sees the old document or the new one, never a truncated
    file: until the rename, summary.json still holds the old document (the live dashboard
    read an empty summary.json once, while the driver was writing it)."""
    import os

    from fairgate_exp import records

    path = tmp_path / "summary.json"
    records.write_json(path, {"old": 1})
    seen: list[str] = []
    real_replace = os.replace

    def replace(src: Any, dst: Any) -> None:
        seen.append(path.read_text())  # what a reader sees just before the rename
        real_replace(src, dst)

    monkeypatch.setattr(records.os, "replace", replace)
    records.write_json(path, {"new": 2})
    assert json.loads(seen[0]) == {"old": 1}
    assert json.loads(path.read_text()) == {"new": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary left


def test_terminal_table_shows_measured_values_without_a_mark() -> None:
    from rich.console import Console

    from fairgate_exp.live import verdict_table

    summary = {
        "experiment": "gates",
        "engine": "sim",
        "scale": "file",
        "algos": ["static", "search"],
        "verdicts": [
            {
                "expect": 0,
                "metric": "drops",
                "algo": "static",
                "window_s": [2, 10],
                "expected": "<= 5",
                "passed": False,
                "measured": 7,
            }
        ],
        "measured": [
            {
                "measure": 0,
                "metric": "completion_rate",
                "algo": a,
                "window_s": [2, 10],
                "measured": r,
            }
            for a, r in (("static", 41.5), ("search", 44.25))
        ],
    }
    console = Console(width=120, record=True)
    console.print(verdict_table(summary))
    lines = console.export_text().splitlines()
    (row,) = [x for x in lines if "completion_rate measured (2-10 s)" in x]
    assert "41.5" in row and "44.25" in row and "pass" not in row and "FAIL" not in row
    (judged,) = [x for x in lines if "drops <= 5" in x]
    assert "FAIL 7" in judged
