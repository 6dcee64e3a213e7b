"""scripts/noise_sensitivity.py: a file run at each host jitter over seeds, per check the
mean, range and passes side by side; the seeds join a file's own sweep grid after its
keys; bad arguments are one-line errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import noise_sensitivity as ns  # noqa: E402

FILE = """\
switches = ["s1"]
hosts = [
  { name = "a", switch = "s1" },
  { name = "r", switch = "s1", capacity = "1Mbit/s", buffer = "5pkt" },
]
flows = [
  { name = "fa", src = "a", dst = "r", max_rate = "600kbit/s" },
]

[experiment]
duration = "4s"
warmup = "1s"
algorithms = ["none"]

[measure]
ports = ["s1->r"]

[[expect]]
metric = "utilisation"
ports = ["s1->r"]
min = 0.5
"""


def test_runs_each_jitter_over_the_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(FILE)
    results = tmp_path / "noise"
    argv = [str(path), "--jitter", "0ms,5ms", "--seeds", "1-2", "--results", str(results)]
    assert ns.main([*argv, "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "host_jitter 0ms" in out and "host_jitter 5ms" in out
    assert "2/2" in out  # both seeds of the utilisation check pass (600 of 1000 kbit/s)
    assert "mean [range] passed/runs" in out  # brackets printed, not read as markup
    record = json.loads((results / "noise.json").read_text())
    assert record["seeds"] == [1, 2] and set(record["files"]["tiny"]) == {"0ms", "5ms"}
    sweep = json.loads(Path(record["files"]["tiny"]["5ms"], "sweep.json").read_text())
    assert sweep["grid"] == {"experiment.seed": [1, 2]}
    assert len(sweep["runs"]) == 2
    run = json.loads(Path(sweep["runs"][0], "experiment.json").read_text())
    assert "5ms" in json.dumps(run)  # the run's own resolved file carries the jitter


def test_seeds_follow_the_files_own_grid_keys() -> None:
    doc = {"sweep": {"grid": {"links.0.capacity": ["1Mbit/s"]}, "zip": {"x": [1]}}}
    out = ns.with_noise(doc, "2ms", [1, 2])
    assert list(out["sweep"]["grid"]) == ["links.0.capacity", "experiment.seed"]
    assert out["experiment"]["host_jitter"] == "2ms"
    assert "experiment" not in doc  # the file's document is left as read


@pytest.mark.parametrize(("flag", "value"), [("--seeds", "a-b"), ("--jitter", "2")])
def test_bad_arguments_are_one_line_errors(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as e:
        ns.main(["cm-aging", flag, value])
    assert e.value.code == 2
    assert flag in capsys.readouterr().err
