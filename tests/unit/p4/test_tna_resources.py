"""fairgate_p4.tna_resources reads the placement bf-p4c kept: the last round of
table_summary.log, not the first (which may have failed)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from fairgate_p4 import tna_resources as t


def _round(n: int, state: str, stages: tuple[int, int], rows: list[tuple[int, str]]) -> str:
    lines = [
        f"Table allocation done {n} time(s), state = {state}",
        f"Number of stages in table allocation: {max(stages)}",
        f"  Number of stages for ingress table allocation: {stages[0]}",
        f"  Number of stages for egress table allocation: {stages[1]}",
        "Critical path length through the table dependency graph: 3",
        "+-------+-----------------+------------+",
        "| Stage | Min / Max Stage | Table Name |",
        "+-------+-----------------+------------+",
    ]
    lines += [f"|   {s}   |    [ 0, 9 ]     |  {name}  |" for s, name in rows]
    return "\n".join([*lines, "+-------+-----------------+------------+", ""])


SUMMARY = _round(1, "INITIAL", (14, 18), [(0, ".a"), (15, ".b"), (17, "tbl_c")]) + _round(
    2, "NOCC_TRY1", (10, 12), [(0, ".a"), (3, ".b"), (3, ".b"), (11, "tbl_c")]
)


def test_stages_are_the_last_rounds() -> None:
    assert t.stages_from_log(SUMMARY) == {"ingress": 10, "egress": 12}
    assert t.last_round("no rounds") == "no rounds"


def _write_logs(out: Path, srams: int = 1) -> None:
    """The three logs read_resources reads, in one compile's output folder ``out``."""
    logs = out / "pipe" / "logs"
    logs.mkdir(parents=True)
    (logs / "table_summary.log").write_text(SUMMARY)
    stage = {
        "meter_alus": {"meters": []},
        "statistic_alus": {},
        "hash_distribution_units": {"units": []},
    }
    resources = {"resources": {"mau": {"mau_stages": [stage]}}}
    (logs / "resources.json").write_text(json.dumps(resources))
    mau = {"srams": srams, "tcams": 2, "map_rams": 3, "logical_tables": 3}
    metrics = {"mau": mau, "phv": {"normal": [], "tagalong": []}}
    (logs / "metrics.json").write_text(json.dumps(metrics))


def _fake_logs(root: Path, variant: str, srams: int = 1) -> None:
    """One variant's logs where a report looks for them: ``root/tofino/<variant>``."""
    _write_logs(root / "tofino" / variant, srams)


def test_stage_map_is_the_last_rounds(tmp_path: Path) -> None:
    _write_logs(tmp_path)
    res = t.read_resources(tmp_path, "x")
    assert (res.stages, res.ingress_stages, res.egress_stages) == (12, 10, 12)
    assert sorted(res.stage_map) == [(0, ".a"), (3, ".b"), (11, "tbl_c")]


def _doc(tmp_path: Path) -> Path:
    doc = tmp_path / "hardware.md"
    doc.write_text(f"before\n{t.BEGIN}\nold section\n{t.END}\nafter\n")
    return doc


def test_unusable_logs_names_missing_and_stale_ones(tmp_path: Path) -> None:
    src = tmp_path / "a.p4"
    src.write_text("// source")
    _fake_logs(tmp_path, "base")
    _fake_logs(tmp_path, "full")
    metrics = tmp_path / "tofino" / "full" / "pipe" / "logs" / "metrics.json"
    old = src.stat().st_mtime - 60
    os.utime(metrics, (old, old))  # compiled a minute before the source changed
    why = t.unusable_logs(["base", "full", "xcp-less"], "tofino", tmp_path, [src])
    assert set(why) == {"full", "xcp-less"}
    assert why["full"].startswith("compiled before") and "a.p4" in why["full"]
    assert why["xcp-less"].startswith("no logs")


def test_report_without_compiling_keeps_every_row(tmp_path: Path) -> None:
    for n, variant in enumerate(t.VARIANTS):
        _fake_logs(tmp_path, variant, srams=10 + n)
    doc = _doc(tmp_path)
    assert t.report("tofino", tmp_path, doc, to_compile=[]) == 0
    text = doc.read_text()
    assert text.startswith("before\n") and text.endswith("after\n")
    assert "old section" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and " | yes |" in line]
    assert [r.split(" | ")[0][2:] for r in rows] == list(t.VARIANTS)
    # each row is its own variant's logs
    assert all(f"| {10 + n} |" in rows[n] for n in range(len(rows)))


def test_report_refuses_before_compiling_when_a_kept_row_has_no_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for variant in t.VARIANTS:
        if variant != "base+xcp":
            _fake_logs(tmp_path, variant)
    doc = _doc(tmp_path)
    before = doc.read_text()
    compiles: list[str] = []
    monkeypatch.setattr(t, "compile_variant", lambda v, *_: compiles.append(v))
    assert t.report("tofino", tmp_path, doc, to_compile=["full"]) == 2
    assert compiles == []  # refused before any compile
    assert doc.read_text() == before
    listed = [
        line.split(":")[0].strip()
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("  ")
    ]
    assert listed == ["base+xcp"]


def test_compile_only_and_the_flags_that_clash(capsys: pytest.CaptureFixture[str]) -> None:
    ns = argparse.Namespace
    assert t.compile_only(ns(no_compile=True, variants=None)) == []
    assert t.compile_only(ns(no_compile=False, variants=["base"])) == ["base"]
    assert t.compile_only(ns(no_compile=False, variants=None)) == list(t.VARIANTS)
    with pytest.raises(SystemExit) as exc:
        t.main(["report", "--no-compile", "--variants", "base"])
    assert exc.value.code == 2
    assert "--no-compile compiles nothing" in capsys.readouterr().err


def test_p4_sources_follow_quoted_includes_only(tmp_path: Path) -> None:
    (tmp_path / "tna").mkdir()
    (tmp_path / "include").mkdir()
    (tmp_path / "tna" / "main.p4").write_text(
        '#include <tna.p4>\n#include "types.p4"\n  # include "missing.p4"\n'
    )
    (tmp_path / "tna" / "types.p4").write_text('#include "../include/headers.p4"\n')
    (tmp_path / "include" / "headers.p4").write_text('#include "../tna/types.p4"\n')  # a cycle
    (tmp_path / "include" / "unused.p4").write_text("// not included\n")
    got = t.p4_sources(tmp_path / "tna" / "main.p4")
    assert [f.relative_to(tmp_path).as_posix() for f in got] == [
        "include/headers.p4",
        "tna/main.p4",
        "tna/types.p4",
    ]


def test_p4_sources_of_the_tna_program_are_its_own() -> None:
    got = t.p4_sources()
    assert {"fairgate_tna.p4", "ingress.p4", "headers.p4"} <= {f.name for f in got}
    # v1model's controls are not part of a TNA compile, so editing them leaves its logs fresh
    assert t.P4SRC / "include" / "admission.p4" not in got
    assert t.P4SRC / "fairgate.p4" not in got
