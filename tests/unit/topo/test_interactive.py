"""The interactive lab's pure parts: the experiment -> network function, algorithm choice,
cheat sheet, command wrappers, background marking (no root, no Mininet)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from fairgate_topo import interactive as ia


def test_lab_spec_takes_the_network_from_the_experiment_file() -> None:
    spec = ia.lab_spec("two-bottleneck")
    assert spec.topology.switches == ["s1", "s2", "s3"]
    assert sorted(spec.topology.hosts) == ["h1", "h2", "h3", "r1", "r2", "r3"]
    assert spec.ack_delay_ms["r1"] == 40.0 and spec.ack_delay_ms["h1"] == 0.0
    assert spec.default_algo == "qfcp" and "--q-ref" in spec.controller_args
    assert ia.choose_algo(spec, None) == "qfcp" and ia.choose_algo(spec, "all") == "qfcp"
    assert ia.choose_algo(spec, "lestas") == "lestas"
    assert ia.choose_algo(spec, "xcp") == "xcp"  # two-bottleneck has an XCP variant
    with pytest.raises(ia.LabError, match="ring runs with rcp, qfcp, lestas, none, not 'xcp'"):
        ia.choose_algo(ia.lab_spec("ring"), "xcp")
    with pytest.raises(ia.LabError, match="nope"):
        ia.lab_spec("nope")


def test_lab_spec_reads_a_path(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(
        'switches = ["a"]\nhosts = [{ name = "x", switch = "a", ack_delay = "25ms" },'
        ' { name = "y", switch = "a" }]\n[experiment]\nalgorithms = ["rcp"]\n'
    )
    spec = ia.lab_spec(str(path))
    assert spec.name == "mine" and spec.default_algo == "rcp"
    assert spec.topology.switches == ["a"] and spec.ack_delay_ms == {"x": 25.0, "y": 0.0}


def test_cheat_sheet_names_hosts_bottlenecks_and_commands() -> None:
    spec = ia.lab_spec("two-bottleneck")
    text = ia.cheat_sheet(spec, "qfcp", Path("/tmp/run"), {"s1": 9090, "s2": 9091, "s3": 9092})
    assert "h1 10.0.1.1 (s1:1)" in text and "r3 10.0.6.1 (s3:3)" in text
    assert "s1:3 -> s2  400 pkt/s = 3.97 Mbit/s  depth 64" in text
    assert "s2:3 -> s3  1000 pkt/s = 9.94 Mbit/s  depth 64" in text
    assert "acks held r1 40 ms, r2 40 ms, r3 40 ms" in text and "9090 (s1)" in text
    for cmd in ia.COMMANDS:
        assert cmd in text
    assert ia.port_peers(spec.topology)["s1:3"] == "s2"
    assert ia.port_peers(spec.topology)["s3:1"] == "r1"


def test_background_fg_commands_are_marked() -> None:
    assert ia.background_marked("h1 fg-send r1 --for 30 &") == (
        "h1 FG_BACKGROUND=1 fg-send r1 --for 30 &"
    )
    assert ia.background_marked("h1 fg-send r1 --for 30") == "h1 fg-send r1 --for 30"
    assert ia.background_marked("h1 ping r1 &") == "h1 ping r1 &"
    assert ia.background_marked("fg-status") == "fg-status"


def test_wrappers_run_the_commands(tmp_path: Path) -> None:
    ia.write_wrappers(tmp_path / "bin")
    for name in ia.COMMANDS:
        out = subprocess.run(
            [str(tmp_path / "bin" / name), "--help"], capture_output=True, text=True, check=True
        ).stdout
        assert out.startswith(f"usage: {name}"), out


def test_stop_pids_skips_a_reused_pid() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        start = ia.process_start_ticks(proc.pid)
        assert start is not None
        assert ia.stop_pids({proc.pid: start + 1}, grace_s=0.2) == []  # not the same process
        assert proc.poll() is None
        assert ia.stop_pids({proc.pid: start}, grace_s=2.0) == [proc.pid]
        proc.wait(5)
        assert ia.process_start_ticks(proc.pid) is None
    finally:
        if proc.poll() is None:
            proc.kill()
    assert os.getpid() not in ia.stop_pids({}, grace_s=0.1)


def test_missing_switch_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SWITCH", "/nonexistent/simple_switch_grpc")
    assert ia.main(["--exp", "two-bottleneck"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("make run: "), err
    assert "simple_switch_grpc not found" in err or "need root" in err


def test_bad_experiment_or_algorithm_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert ia.main(["--exp", "nope"]) == 2
    assert ia.main(["--exp", "ring", "--algo", "xcp"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(x.startswith("make run: ") for x in lines), lines


def test_start_up_failure_is_one_line_with_details_in_the_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: object) -> None:
        raise RuntimeError("s1: switch process 42 exited during start-up\nlog tail ...")

    monkeypatch.setattr("fairgate_exp.engines.bmv2.check_environment", lambda: None)
    monkeypatch.setattr(ia, "run_session", broken)
    code = ia.main(["--exp", "two-bottleneck", "--results", str(tmp_path), "--run-id", "t"])
    assert code == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("make run: s1: switch process 42 exited during start-up (details: ")
    assert "Traceback" in (tmp_path / "two-bottleneck" / "t" / "error.txt").read_text()


class FakeShell:
    """A Mininet host shell as settle_shells sees it: ``waiting`` until the prompt shows."""

    def __init__(self, name: str, waiting: bool, answers: bool) -> None:
        self.name, self.waiting, self.answers = name, waiting, answers
        self.interrupts = 0
        self.reads = 0

    def sendInt(self) -> None:
        self.interrupts += 1

    def monitor(self, timeoutms: int | None = None) -> str:
        self.reads += 1
        if self.answers and self.interrupts:
            self.waiting = False  # the shell printed its prompt after the Ctrl-C
        return ""


def test_settle_shells_interrupts_busy_shells_and_never_blocks() -> None:
    idle = FakeShell("h1", waiting=False, answers=True)
    busy = FakeShell("h2", waiting=True, answers=True)
    deaf = FakeShell("h3", waiting=True, answers=False)
    assert ia.settle_shells([idle, busy, deaf], timeout_s=0.3) == ["h2", "h3"]
    assert idle.interrupts == 0 and idle.reads == 0
    assert busy.interrupts == 1 and not busy.waiting
    assert deaf.interrupts == 1 and not deaf.waiting and deaf.reads >= 1
