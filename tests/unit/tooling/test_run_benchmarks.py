"""scripts/run_benchmarks.py's run records and the history table made from them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import run_benchmarks as rb  # noqa: E402


def _record(results: Path, run_id: str, value: float, load: float, skipped: bool = False) -> None:
    head = {
        "measure": "simulator, paper parking lot",
        "value": value,
        "unit": "x real time",
        "goal": 0.5,
        "higher_is_better": True,
        "benchmark": "bench_sim",
        "met": value >= 0.5,
    }
    doc = {
        "run_id": run_id,
        "machine": {
            "commit": run_id[-7:],
            "cores": 2,
            "cpu": "test CPU",
            "load_average_at_start": load,
            "load_average_at_end": load + 1,
            "benchmarks": ["bench_sim"],
        },
        "headlines": [] if skipped else [head],
        "skipped": [["bench_sim", "no compiler"]] if skipped else [],
    }
    out = results / "bench" / run_id
    out.mkdir(parents=True)
    (out / "summary.json").write_text(json.dumps(doc))


def test_history_has_one_column_per_run_oldest_first(tmp_path: Path) -> None:
    _record(tmp_path, "20260102T000000Z-bbbbbbb", 0.61, 3.5)
    _record(tmp_path, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    table = rb.history_table(rb.load_runs(tmp_path))
    lines = table.splitlines()
    assert lines[0] == ("| measure | goal | 20260101T000000Z-aaaaaaa | 20260102T000000Z-bbbbbbb |")
    assert "| simulator, paper parking lot | >= 0.5 x real time | 0.29 (missed) | 0.61 |" in lines
    assert "| load average start / end |  | 4.00 / 5.00 | 3.50 / 4.50 |" in lines


def test_history_keeps_the_newest_runs_and_says_skipped(tmp_path: Path) -> None:
    _record(tmp_path, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    _record(tmp_path, "20260102T000000Z-bbbbbbb", 0.61, 3.5)
    _record(tmp_path, "20260103T000000Z-ccccccc", 0.0, 1.0, skipped=True)
    table = rb.history_table(rb.load_runs(tmp_path), last=2)
    assert "aaaaaaa" not in table
    assert "| simulator, paper parking lot | >= 0.5 x real time | 0.61 | skipped |" in table


def test_write_history_replaces_only_the_marked_block(tmp_path: Path) -> None:
    _record(tmp_path, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    runs = rb.load_runs(tmp_path)
    doc = tmp_path / "performance.md"
    doc.write_text(f"before\n{rb.HISTORY_START}\nold table\n{rb.HISTORY_END}\nafter\n")
    rb.write_history(doc, runs)
    assert doc.read_text() == (
        f"before\n{rb.HISTORY_START}\n{rb.history_table(runs)}\n{rb.HISTORY_END}\nafter\n"
    )
    doc.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no history markers"):
        rb.write_history(doc, runs)


def test_write_history_keeps_columns_whose_records_are_gone(tmp_path: Path) -> None:
    """A new machine has only its own run records: the table's older columns stay."""
    old = tmp_path / "old"
    _record(old, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    doc = tmp_path / "performance.md"
    doc.write_text(f"x\n{rb.HISTORY_START}\n{rb.HISTORY_END}\ny\n")
    rb.write_history(doc, rb.load_runs(old))
    new = tmp_path / "new"
    _record(new, "20260102T000000Z-bbbbbbb", 0.61, 3.5)
    rb.write_history(doc, rb.load_runs(new))
    text = doc.read_text()
    assert "| measure | goal | 20260101T000000Z-aaaaaaa | 20260102T000000Z-bbbbbbb |" in text
    assert "| simulator, paper parking lot | >= 0.5 x real time | 0.29 (missed) | 0.61 |" in text
    assert "| commit |  | aaaaaaa | bbbbbbb |" in text
    # the same records again change nothing
    rb.write_history(doc, rb.load_runs(new))
    assert doc.read_text() == text


def test_latest_block_gives_each_measure_its_newest_figure(tmp_path: Path) -> None:
    _record(tmp_path, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    _record(tmp_path, "20260102T000000Z-bbbbbbb", 0.61, 3.5)
    _record(tmp_path, "20260103T000000Z-ccccccc", 0.0, 1.0, skipped=True)
    doc = tmp_path / "README.md"
    doc.write_text(f"a\n{rb.LATEST_START}\nold\n{rb.LATEST_END}\nb\n")
    rb.write_history(doc, rb.load_runs(tmp_path))
    text = doc.read_text()
    assert (
        "| simulator, paper parking lot | >= 0.5 x real time | 0.61 |"
        " 20260102T000000Z-bbbbbbb (3.50 / 4.50) |"
    ) in text
    assert "old" not in text and text.startswith("a\n") and text.endswith("b\n")


def test_unknown_benchmark_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert rb.main(["--only", "nosuch", "--results", str(tmp_path)]) == 2
    assert "no benchmark nosuch" in capsys.readouterr().err
    assert not (tmp_path / "bench").exists()


def test_docs_performance_holds_the_generated_history() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    assert rb.HISTORY_START in text and rb.HISTORY_END in text
    readme = (ROOT / "README.md").read_text()
    assert rb.LATEST_START in readme and rb.LATEST_END in readme


def test_a_pipe_in_a_measure_survives_the_table(tmp_path: Path) -> None:
    """'delay line: worst |added RTT - 2D|' is escaped in the table and read back whole."""
    _record(tmp_path, "20260101T000000Z-aaaaaaa", 0.29, 4.0)
    doc = json.loads((tmp_path / "bench/20260101T000000Z-aaaaaaa/summary.json").read_text())
    doc["headlines"][0]["measure"] = "delay line: worst |added RTT - 2D|"
    (tmp_path / "bench/20260101T000000Z-aaaaaaa/summary.json").write_text(json.dumps(doc))
    table = rb.history_table(rb.load_runs(tmp_path))
    assert (
        "| delay line: worst \\|added RTT - 2D\\| | >= 0.5 x real time | 0.29 (missed) |" in table
    )
    goals, cols = rb.parse_history(table)
    assert goals == {"delay line: worst |added RTT - 2D|": ">= 0.5 x real time"}
    assert cols["20260101T000000Z-aaaaaaa"]["delay line: worst |added RTT - 2D|"] == "0.29 (missed)"
