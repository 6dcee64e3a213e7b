"""``make report`` keeps the records it cites (docs/records/) and never drops silently a
section of the previous docs/results.md whose records are not on this machine."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fairgate_exp.__main__ import main
from fairgate_exp.report import ReportError, update
from fairgate_exp.report_keep import NOTE


def _record(results: Path, exp: str, run_id: str, rate: float, engine: str = "sim") -> Path:
    """A run record as `make sim` writes it: the files the report reads and the bulky
    ones it must not archive."""
    run = results / exp / run_id
    run.mkdir(parents=True)
    summary = {
        "experiment": exp,
        "run_id": run_id,
        "engine": engine,
        "scale": "lab",
        "factor": 1.0,
        "algos": ["qfcp"],
        "results": {"qfcp": {"flows": {"f1": {"mean_pps": rate, "maxmin_pps": 100.0}}}},
        "verdicts": [
            {
                "expect": 0,
                "metric": "maxmin",
                "window_s": [2.0, 10.0],
                "algo": "qfcp",
                "expected": "<= 0.1",
                "passed": True,
                "measured": abs(rate - 100.0) / 100.0,
            }
        ],
    }
    (run / "summary.json").write_text(json.dumps(summary, indent=2))
    (run / "experiment.json").write_text(json.dumps({"experiment": {"algorithms": ["qfcp"]}}))
    (run / "versions.json").write_text("{}")
    (run / "flows.csv").write_text("t,flow,pps\n" * 100)
    (run / f"{exp}.png").write_bytes(b"\x89PNG")
    (run / "qfcp").mkdir()
    (run / "qfcp" / "controller.jsonl").write_text("{}\n" * 100)
    return run


def _sweep(results: Path, exp: str, stamp: str, util: float) -> None:
    rows = []
    for i, cap in enumerate(("1Mbit/s", "2Mbit/s")):
        run = results / exp / f"{stamp}-sim-file-p{i}"
        run.mkdir(parents=True)
        ports = {"s1->s2": {"util": util, "queue_pkts": 3.0, "drops": 0}}
        (run / "summary.json").write_text(json.dumps({"results": {"qfcp": {"ports": ports}}}))
        (run / "experiment.json").write_text("{}")
        (run / "ports.csv").write_text("x\n")
        rows.append(
            {
                "links.0.capacity": cap,
                "algo": "qfcp",
                "metric": "utilisation",
                "measured": util,
                "passed": True,
                "run": run.name,
            }
        )
    out = results / exp / f"sweep-{stamp}"
    out.mkdir()
    doc = {"grid": {"links.0.capacity": ["1Mbit/s", "2Mbit/s"]}, "rows": rows, "elapsed_s": 1.0}
    (out / "sweep.json").write_text(json.dumps(doc))
    (out / "sweep.csv").write_text("x\n")


def _files(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    exps = tmp_path / "experiments"
    exps.mkdir()
    (exps / "alpha.toml").write_text('[experiment]\ntitle = "Alpha"\n')
    (exps / "beta.toml").write_text('[experiment]\ntitle = "Beta"\n')
    (exps / "swept.toml").write_text(
        '[experiment]\ntitle = "Swept"\n[sweep.grid]\n"links.0.capacity" = ["1Mbit/s"]\n'
    )
    return exps, tmp_path / "results", tmp_path / "docs" / "records", tmp_path / "results.md"


def _section(text: str, name: str) -> str:
    start = text.index(f"(`{name}`)")
    end = text.find("\n## ", start)
    return text[start : end if end >= 0 else len(text)]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_archive_holds_exactly_the_cited_record_files(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260101T000000Z-sim-lab-a", 50.0)
    newest = _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    _sweep(results, "swept", "20260101T000000Z", 0.9)
    archive.mkdir(parents=True)
    (archive / "README.md").write_text("what this folder is\n")
    rep = update(doc, results, exps, archive=archive)
    assert rep.changed and not rep.kept
    assert (archive / "README.md").read_text() == "what this folder is\n"
    (archive / "README.md").unlink()
    tree = _tree(archive)
    assert sorted(tree) == [
        "alpha/20260102T000000Z-sim-lab-b/experiment.json",
        "alpha/20260102T000000Z-sim-lab-b/summary.json",
        "swept/20260101T000000Z-sim-file-p0/summary.json",
        "swept/20260101T000000Z-sim-file-p1/summary.json",
        "swept/sweep-20260101T000000Z/sweep.json",
    ]  # not the older alpha run, no logs, CSVs, plots or versions
    assert (
        tree["alpha/20260102T000000Z-sim-lab-b/summary.json"]
        == (newest / "summary.json").read_bytes()
    )  # byte for byte: nothing the report reads is stripped
    # a newer record replaces the cited one: the archive follows the document
    _record(results, "alpha", "20260103T000000Z-sim-lab-c", 99.0)
    update(doc, results, exps, archive=archive)
    assert "alpha/20260102T000000Z-sim-lab-b/summary.json" not in _tree(archive)
    assert not (archive / "alpha" / "20260102T000000Z-sim-lab-b").exists()
    assert "alpha/20260103T000000Z-sim-lab-c/summary.json" in _tree(archive)


def test_archive_refresh_never_touches_a_folder_with_other_files(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    full = _record(archive, "beta", "20250101T000000Z-sim-lab-x", 10.0)  # not cited later
    (full / "summary.json").write_text("{}")  # unreadable as a run: not cited
    update(doc, results, exps, archive=archive)
    assert (full / "summary.json").exists() and (full / "flows.csv").exists()


def test_the_archive_alone_makes_the_same_document(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    _sweep(results, "swept", "20260101T000000Z", 0.9)
    update(doc, results, exps, archive=archive)
    before = doc.read_text()
    shutil.rmtree(results)  # a new machine: only what git holds
    rep = update(doc, results, exps, archive=archive)
    assert not rep.changed and not rep.kept
    assert doc.read_text() == before and NOTE not in before
    assert "| run | f1 | 100 | 97 |" in before
    assert "| 2Mbit/s | qfcp | s1->s2 | 0.9 | 3 | 0 | utilisation pass 0.9 |" in before


def test_newest_record_wins_across_archive_and_local_folder(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(archive, "alpha", "20260105T000000Z-sim-lab-arch", 80.0)
    _record(results, "alpha", "20260101T000000Z-sim-lab-old", 60.0)
    _record(results, "beta", "20260109T000000Z-sim-lab-new", 70.0)
    _record(archive, "beta", "20260102T000000Z-sim-lab-arch", 40.0)
    text = update(doc, results, exps, archive=archive).text
    assert "| run | f1 | 100 | 80 |" in _section(text, "alpha")
    assert "| run | f1 | 100 | 70 |" in _section(text, "beta")
    assert "20260101T000000Z" not in text and "20260102T000000Z" not in text


def test_absent_records_keep_the_previous_sections_verbatim_and_marked(
    tmp_path: Path,
) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    _record(results, "beta", "20260102T000000Z-sim-lab-b", 55.0, engine="bmv2")
    _sweep(results, "swept", "20260101T000000Z", 0.9)
    before = update(doc, results, exps).text  # no archive: as on the old machine
    results.rename(tmp_path / "elsewhere")
    rep = update(doc, results, exps, archive=archive)
    text = rep.text
    assert rep.changed
    assert sorted(k.name for k in rep.kept) == ["alpha", "beta", "swept"]
    for name in ("alpha", "beta", "swept"):
        old, new = _section(before, name), _section(text, name)
        assert NOTE in new and NOTE not in old
        # the numbers and everything else verbatim: only the note line (and its blank) added
        assert [x for x in new.splitlines() if not x.startswith(NOTE)] == (
            old.splitlines()[:2] + old.splitlines()[1:]
        )
    assert (
        f"{NOTE} records `results/alpha/20260102T000000Z-sim-lab-b` are not on this machine" in text
    )
    assert "`results/swept/sweep-20260101T000000Z` are not on this machine" in text
    assert "No run record yet" not in text
    # a second run keeps them again without a second note
    rep = update(doc, results, exps, archive=archive)
    assert not rep.changed and rep.text.count(NOTE) == 3
    # the records back: the sections are made from them again, the notes gone
    (tmp_path / "elsewhere").rename(results)
    rep = update(doc, results, exps, archive=archive)
    assert rep.text == before and not rep.kept


def test_a_fresh_record_of_one_experiment_changes_only_its_section(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    _record(results, "beta", "20260102T000000Z-sim-lab-b", 55.0)
    _sweep(results, "swept", "20260101T000000Z", 0.9)
    before = update(doc, results, exps).text
    shutil.rmtree(results)
    _sweep(results, "swept", "20260201T000000Z", 0.5)
    rep = update(doc, results, exps, archive=archive)
    assert sorted(k.name for k in rep.kept) == ["alpha", "beta"]
    assert _section(rep.text, "swept") != _section(before, "swept")
    assert "| 2Mbit/s | qfcp | s1->s2 | 0.5 | 3 | 0 | utilisation pass 0.5 |" in rep.text
    assert NOTE not in _section(rep.text, "swept")
    assert "| run | f1 | 100 | 97 |" in _section(rep.text, "alpha")
    assert "| run | f1 | 100 | 55 |" in _section(rep.text, "beta")
    # only the fresh sweep went into the archive (the kept sections' records are absent)
    assert all(k.startswith("swept/") for k in _tree(archive))


def test_a_missing_column_keeps_the_section_unless_dropped(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    bmv2 = _record(results, "alpha", "20260102T000000Z-bmv2-lab-b", 91.0, engine="bmv2")
    before = update(doc, results, exps).text
    assert "| run | f1 | 100 | 91 | 97 |" in before
    shutil.rmtree(bmv2)
    _record(results, "alpha", "20260103T000000Z-sim-lab-c", 99.0)  # fresh sim only
    rep = update(doc, results, exps, archive=archive)
    (kept,) = rep.kept
    assert kept.absent == ["results/alpha/20260102T000000Z-bmv2-lab-b"]
    assert kept.unshown == ["results/alpha/20260103T000000Z-sim-lab-c"]
    assert "| run | f1 | 100 | 91 | 97 |" in rep.text  # both old columns, the bmv2 one too
    # the kept section's sim record that is here stays archived with it
    assert "alpha/20260102T000000Z-sim-lab-b/summary.json" in _tree(archive)
    rep = update(doc, results, exps, archive=archive, drop={"alpha"})
    assert not rep.kept and "| run | f1 | 100 | 99 |" in rep.text and "91" not in rep.text
    assert sorted(_tree(archive)) == [
        "alpha/20260103T000000Z-sim-lab-c/experiment.json",
        "alpha/20260103T000000Z-sim-lab-c/summary.json",
    ]


def test_strict_fails_and_writes_nothing(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    before = update(doc, results, exps).text
    shutil.rmtree(results)
    with pytest.raises(ReportError, match=r"alpha.*20260102T000000Z-sim-lab-b"):
        update(doc, results, exps, archive=archive, strict=True)
    assert doc.read_text() == before and not archive.exists()


def test_a_section_whose_file_is_gone_is_removed_and_named(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    update(doc, results, exps)
    shutil.rmtree(results)
    (exps / "alpha.toml").unlink()
    rep = update(doc, results, exps, archive=archive)
    assert rep.removed == ["alpha"] and "(`alpha`)" not in rep.text


def test_a_section_whose_file_cannot_be_read_is_kept(tmp_path: Path) -> None:
    exps, results, archive, doc = _files(tmp_path)
    _record(results, "beta", "20260102T000000Z-sim-lab-b", 55.0)
    before = update(doc, results, exps).text
    shutil.rmtree(results)
    (exps / "beta.toml").write_text("[experiment\n")  # a syntax error: skipped by the report
    rep = update(doc, results, exps, archive=archive)
    assert [k.name for k in rep.kept] == ["beta"] and not rep.removed
    assert "| run | f1 | 100 | 55 |" in _section(rep.text, "beta")
    assert _section(before, "alpha") == _section(rep.text, "alpha")  # nothing to lose there


def test_make_report_warns_of_each_kept_section_and_strict_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, results, archive, doc = _files(tmp_path)
    monkeypatch.chdir(tmp_path)  # the report reads experiments/ where it runs
    _record(results, "alpha", "20260102T000000Z-sim-lab-b", 97.0)
    args = ["report", "--results", str(results), "--doc", str(doc), "--archive", str(archive)]
    assert main(args) == 0
    assert (archive / "alpha" / "20260102T000000Z-sim-lab-b" / "summary.json").is_file()
    shutil.rmtree(results)
    shutil.rmtree(archive)  # the record is nowhere
    before = doc.read_text()
    assert main([*args, "--strict"]) == 1
    assert doc.read_text() == before
    assert "alpha" in capsys.readouterr().err
    assert main(args) == 0
    out = capsys.readouterr()
    assert "WARNING kept section `alpha`" in out.err
    assert "results/alpha/20260102T000000Z-sim-lab-b" in out.err
    assert NOTE in doc.read_text()
