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
        (["--algo", "xpc"], "invalid choice"),
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


@pytest.mark.parametrize(
    "args,message",
    [
        (["--min-rate", "0"], "--min-rate must be > 0"),
        (["--q-ref", "nan"], "--q-ref must be a finite number"),
        (["--election-id", "0"], "--election-id must be >= 1"),
        (["--device-id", "-1"], "--device-id must be >= 0"),
        (["--ficcrd-k", "0"], "--ficcrd-k must be >= 1"),
        (["--switch-timeout", "-1"], "--switch-timeout must be > 0"),
        (["--period-min", "2", "--period-max", "1"], "need 0 < period_min <= period_max"),
        (["--election-id", "ten"], "argument --election-id: invalid int value"),
        (["--records", "."], "--records .: is a directory"),
        (["--admit-rate", "0"], "--admit-rate must be > 0 flows/s"),
        (["--admit-rate", "50", "--session", "strategy2"], "give one of them"),
    ],
)
def test_bad_options_one_line_exit_2(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #16: a bad option is one line on stderr naming it, exit 2."""
    topo = tmp_path / "t.json"
    from .test_topology import dumbbell

    topo.write_text(json.dumps(dumbbell()))
    try:
        code = main(["--topo", str(topo), *args])
    except SystemExit as done:
        code = done.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "content",
    [None, b"\xff\xfe", b'{"switches": 3}', b'{"switches": [{"name": "s1", "grpc_addr": ":1"}]}'],
)
def test_cli_bad_topology_file_one_line_no_traceback(tmp_path: Path, content: bytes | None) -> None:
    """The real command: one line naming the file, exit 2, no traceback."""
    import subprocess
    import sys

    path = tmp_path  # a directory when content is None
    if content is not None:
        path = tmp_path / "topo.json"
        path.write_bytes(content)
    proc = subprocess.run(
        [sys.executable, "-m", "fairgate_controller", "--topo", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith(f"fairgate_controller: {path}: "), proc.stderr


@pytest.mark.parametrize("args", [["--admit-rate", "50"], ["--session", "strategy1"]])
def test_gating_without_an_admission_port_exits_2(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A static gate or a search on a topology with no admission port would gate
    nothing: one line naming the option and what to mark, exit 2."""
    from .test_topology import dumbbell

    doc = dumbbell()
    for link in doc.get("links", []):
        link.pop("admission", None)
    for host in doc.get("hosts", []):
        host.pop("admission", None)
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps(doc))
    assert main(["--topo", str(topo), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{args[0]} {args[1]}" in err, err
    assert "has no admission port to gate" in err
