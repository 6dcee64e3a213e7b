"""scripts/session_settling.py: when the search restarted, in s of the run, both engines."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import session_settling  # noqa: E402

GATED = ("s1", 2)


def _write(vdir: Path, t0: float | None, rows: list[tuple[float, int]]) -> None:
    vdir.mkdir(parents=True)
    lines = [
        # another port's controller restarting is not the gated port's
        {
            "t": (t0 or 0.0) + 5.0,
            "switch": "s2",
            "port": 1,
            "admit_fps": None,
            "session_restarts": 9,
        },
    ]
    lines += [
        {
            "t": (t0 or 0.0) + t,
            "switch": GATED[0],
            "port": GATED[1],
            "admit_fps": 50.0,
            "session_restarts": n,
        }
        for t, n in rows
    ]
    (vdir / "controller.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    if t0 is not None:
        (vdir / "t0.json").write_text(json.dumps({"t0": t0}) + "\n")


@pytest.mark.parametrize("t0", [None, 1795930359.79])
def test_detections_are_in_seconds_of_the_run(tmp_path: Path, t0: float | None) -> None:
    # the simulator's records start at 0; BMv2's carry wall time and a t0.json: reading
    # them as they are put every BMv2 restart outside every regime ("no restart")
    rows = [(100.0, 0), (167.1, 1), (169.1, 1), (320.1, 2), (322.1, 2)]
    _write(tmp_path / "strategy1", t0, rows)
    got = session_settling.detections(tmp_path, "strategy1", GATED)
    assert got == pytest.approx([167.1, 320.1])


def test_a_file_without_phases_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # session-control.toml: no phases, and tcp generators without a stop
    exp = {"experiment": {"duration": "153s"}, "tcp": [{"name": "web"}], "phases": []}
    (tmp_path / "experiment.json").write_text(json.dumps(exp))
    (tmp_path / "tcp.csv").write_text("algo,fct_s\nstrategy1,1.5\n")
    assert session_settling.main([str(tmp_path)]) == 2
    assert "has no phases" in capsys.readouterr().err
