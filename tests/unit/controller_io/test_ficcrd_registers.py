"""FICCRD's MAPR and DPF in the BMv2 agent's records: the registers read over Thrift
(simple_switch_CLI's register_read; here a stand-in CLI script), DPF evaluated on the
ranges the controller installed, and a failed read logged once and left out."""

from __future__ import annotations

import logging
import stat
import textwrap
from collections.abc import Callable
from pathlib import Path

import finsy as fy
import pytest

from fairgate_controller import ficcrd as fc
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.thrift_cli import SwitchCliError, parse_register_reads, read_registers
from fairgate_controller.topology import parse
from fairgate_p4 import generated as g

from .fake_p4rt import FakeP4Runtime
from .test_agent import Clock, options, run
from .test_topology import dumbbell

# what simple_switch_CLI prints for two whole-array reads (stdin not a tty)
CLI_OUT = (
    "Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation\n"
    "RuntimeCmd: ficcrd_mapr= 0, 0, 0, 4321, 0\n"
    "RuntimeCmd: ficcrd_queue_seen= 0, 1, 2, 40, 0\nRuntimeCmd: \n"
)


def test_parse_register_reads() -> None:
    assert parse_register_reads(CLI_OUT) == {
        "ficcrd_mapr": [0, 0, 0, 4321, 0],
        "ficcrd_queue_seen": [0, 1, 2, 40, 0],
    }
    assert parse_register_reads("RuntimeCmd: \n") == {}


def _fake_cli(tmp_path: Path, out: str) -> Path:
    """A stand-in simple_switch_CLI: records its stdin and --thrift-port, prints `out`."""
    script = tmp_path / "fake_cli"
    script.write_text(
        textwrap.dedent(f"""\
        import sys
        args = " ".join(sys.argv[1:])
        open({str(tmp_path / "stdin")!r}, "w").write(args + "\\n" + sys.stdin.read())
        sys.stdout.write({out!r})
        """)
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_read_registers_runs_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCH_CLI", str(_fake_cli(tmp_path, CLI_OUT)))
    regs = read_registers(9090, list(fc.REGISTERS))
    assert regs["ficcrd_mapr"][3] == 4321 and regs["ficcrd_queue_seen"][3] == 40
    sent = (tmp_path / "stdin").read_text()
    assert (
        sent == "--thrift-port 9090\nregister_read ficcrd_mapr\nregister_read ficcrd_queue_seen\n"
    )
    # a register the switch did not answer for is an error, not a zero
    monkeypatch.setenv("SWITCH_CLI", str(_fake_cli(tmp_path, "RuntimeCmd: ficcrd_mapr= 1\n")))
    with pytest.raises(SwitchCliError, match="ficcrd_queue_seen"):
        read_registers(9090, list(fc.REGISTERS))


def test_core_state_is_the_installed_range_at_the_seen_queue() -> None:
    (core,) = fc.roles(parse(dumbbell()), "s1", fc.FiccrdConfig()).core  # port 3, 64 pkts
    cfg = fc.FiccrdConfig()
    regs = {"ficcrd_mapr": [0, 0, 0, 4321], "ficcrd_queue_seen": [0, 0, 0, 40]}
    table = fc.dpf_levels(64, cfg.bur, cfg.alpha, cfg.levels)
    want = fc.dpf_lookup(table, 40).dpf / g.FG_DPF_ONE
    assert 0 < want < 1  # 40 > Q0 = 32: below one
    assert fc.core_state(core, cfg, regs) == {
        "ficcrd_q0_pkts": 32.0,
        "ficcrd_mapr_kbps": 4321,
        "ficcrd_queue_pkts": 40,
        "ficcrd_dpf": want,
    }
    assert fc.core_state(core, cfg, None) == {"ficcrd_q0_pkts": 32.0}


def _agent(reader: Callable[[int, list[str]], dict[str, list[int]]]) -> SwitchAgent:
    topo = parse(dumbbell())
    clock = Clock()
    return SwitchAgent(
        topo.switches["s1"],
        topo,
        ControlConfig(ficcrd=fc.FiccrdConfig()),
        Recorder(),
        clock=clock,
        wall=clock,
        register_reader=reader,
    )


def _three_steps(a: SwitchAgent, dt: float) -> None:
    async def scenario() -> None:
        fake = FakeP4Runtime()
        async with fake.serve(), fy.Switch("s1", fake.address, options()) as sw:
            await a.install(sw)
            for _ in range(3):
                await a.step(sw)
                if a._reg_task is not None:
                    await a._reg_task
                a.clock.t += dt

    run(scenario())


def test_agent_records_mapr_and_dpf_of_core_ports() -> None:
    calls: list[tuple[int, list[str]]] = []

    def reader(port: int, names: list[str]) -> dict[str, list[int]]:
        calls.append((port, names))
        return {"ficcrd_mapr": [0, 0, 0, 900], "ficcrd_queue_seen": [0, 0, 0, 10]}

    a = _agent(reader)
    _three_steps(a, 0.1)
    assert calls == [(9090, list(fc.REGISTERS))]  # one read per register_read_every_s
    rec = a.recorder.latest[("s1", 3)]
    assert rec["ficcrd_mapr_kbps"] == 900 and rec["ficcrd_queue_pkts"] == 10
    assert rec["ficcrd_dpf"] == fc.dpf_lookup(fc.dpf_levels(64), 10).dpf / g.FG_DPF_ONE
    assert "ficcrd_dpf" not in a.recorder.latest[("s1", 1)]  # a host port: no core queue


def test_a_failed_read_is_logged_once_and_left_out(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    def reader(port: int, names: list[str]) -> dict[str, list[int]]:
        calls.append(port)
        raise SwitchCliError("simple_switch_CLI: connection refused")

    a = _agent(reader)
    with caplog.at_level(logging.WARNING, logger="fairgate.controller"):
        _three_steps(a, 1.0)
    assert len(calls) == 3  # every step tried again
    warned = [r for r in caplog.records if "FICCRD registers not read" in r.getMessage()]
    assert len(warned) == 1
    rec = a.recorder.latest[("s1", 3)]
    assert rec["ficcrd_q0_pkts"] == 32.0 and "ficcrd_mapr_kbps" not in rec
    assert "ficcrd_dpf" not in rec and a.periods == 2
