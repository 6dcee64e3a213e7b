"""The controller's command line: help, and clear errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairgate_controller.__main__ import main, parser
from fairgate_controller.live import render
from fairgate_controller.records import Recorder


def test_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for action in parser()._actions:
        for flag in action.option_strings:
            assert flag in out
        assert action.help, f"{action.option_strings} has no help"


@pytest.mark.parametrize(
    "args,message",
    [
        (["--period", "0"], "the period must be > 0 s"),
        (["--period", "fast"], "not a number of seconds or 'auto'"),
        (["--algo", "xcp"], "invalid choice"),
    ],
)
def test_bad_arguments_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--topo", str(tmp_path / "t.json"), *args])
    assert done.value.code == 2
    assert message in capsys.readouterr().err


def test_bad_topology_exits_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({"switches": [], "hosts": []}))
    assert main(["--topo", str(topo)]) == 2
    assert "no switches" in capsys.readouterr().err
    assert main(["--topo", str(tmp_path / "missing.json")]) == 2
    assert "no such topology file" in capsys.readouterr().err


def test_records_and_live_table(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "r.jsonl")
    row = {
        "switch": "s1",
        "port": 3,
        "period_s": 0.1,
        "y_Bps": 1.25e6,
        "departure_Bps": 1e6,
        "drop_pkts": 2,
        "queue_mean_bytes": 3000.0,
        "rtt_mean_s": None,
        "fins": 4,
        "rate_kbps": 800,
        "congested": True,
        "admit_fps": None,
        "nan": float("nan"),
    }
    rec.write(row)
    rec.close()
    line = json.loads((tmp_path / "r.jsonl").read_text())
    assert line["nan"] is None and line["rate_kbps"] == 800
    table = render(rec)
    assert table.row_count == 1
