"""An experiment's ``host_jitter`` (simulator only): parsed with the other times, a clear
error when it is not one, and it reaches every simulated host with a stream of its own,
seeded by the run (what it does to a drop-tail queue: tests/unit/sim/test_host_jitter.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.__main__ import main
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

FILE = """\
switches = ["s1"]
hosts = [
  {{ name = "a", switch = "s1" }},
  {{ name = "b", switch = "s1" }},
  {{ name = "r", switch = "s1", capacity = "1Mbit/s", buffer = "5pkt" }},
]
flows = [
  {{ name = "fa", src = "a", dst = "r", max_rate = "600kbit/s" }},
  {{ name = "fb", src = "b", dst = "r", max_rate = "600kbit/s" }},
]

[experiment]
duration = "20s"
warmup = "2s"
algorithms = ["none"]
{jitter}

[[expect]]
metric = "ratio"
flows = ["fb"]
versus = ["fa"]
min = 0.9
max = 1.1
"""


def _write(tmp_path: Path, jitter: str) -> Path:
    path = tmp_path / "phase.toml"
    path.write_text(FILE.format(jitter=jitter))
    return path


def test_parsed_as_a_time_default_none(tmp_path: Path) -> None:
    assert load(_write(tmp_path, 'host_jitter = "8ms"')).host_jitter_s == pytest.approx(0.008)
    assert load(_write(tmp_path, "")).host_jitter_s == 0.0


@pytest.mark.parametrize("bad", ['"8"', '"-1ms"', "8"])
def test_not_a_time_is_a_clear_error(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(_write(tmp_path, f"host_jitter = {bad}"))]) == 2
    assert "host_jitter" in capsys.readouterr().err


def test_it_reaches_every_simulated_host_seeded_by_the_run(tmp_path: Path) -> None:
    plan = load(_write(tmp_path, 'host_jitter = "8ms"'))
    engine = SimEngine()
    engine.build(plan, "none", tmp_path / "run")
    assert engine.net is not None
    hosts = engine.net.hosts
    assert {h.jitter_s for h in hosts.values()} == {0.008}
    draws = {name: h.rng.random() for name, h in hosts.items() if h.rng is not None}
    assert len(draws) == 3 and len(set(draws.values())) == 3  # one stream per host
    plain = SimEngine()
    plain.build(load(_write(tmp_path, "")), "none", tmp_path / "run0")
    assert plain.net is not None
    assert {(h.jitter_s, h.rng) for h in plain.net.hosts.values()} == {(0.0, None)}


def test_a_run_with_it_is_the_same_for_the_same_seed(tmp_path: Path) -> None:
    """Two runs of the file with jitter give the same flows.csv; without, another."""

    def flows(jitter: str, tag: str) -> str:
        results = tmp_path / tag
        rc = main(
            [
                "run",
                str(_write(tmp_path, jitter)),
                "--engine",
                "sim",
                "--results",
                str(results),
                "--quiet",
            ]
        )
        assert rc in (0, 1)
        (run,) = [d for d in results.glob("phase/*") if d.name != "latest"]
        return (run / "flows.csv").read_text()

    with_jitter = flows('host_jitter = "8ms"', "a")
    assert flows('host_jitter = "8ms"', "b") == with_jitter
    assert flows("", "c") != with_jitter
