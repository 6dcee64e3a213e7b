"""An experiment's ``delayed_ack`` (simulator only): off by default, a clear error when it
is not a boolean, and on it reaches every simulated TCP receiver, the bulk flows' and
TCP/CM's: the receiver then acks a slow bulk flow about once per two segments, as the
lab's Linux receivers do (tests/unit/sim/test_tcp.py has the rules)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.__main__ import main
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

FILE = """\
switches = ["s1", "s2"]
hosts = [
  {{ name = "h1", switch = "s1" }},
  {{ name = "h2", switch = "s1" }},
  {{ name = "r1", switch = "s2", ack_delay = "120ms" }},
  {{ name = "r2", switch = "s2", ack_delay = "120ms" }},
]
links = [{{ a = "s1", b = "s2", capacity = "250kbit/s", buffer = "20pkt" }}]
cm = [{{ name = "tcpcm", src = "h1", dst = "r1", app = "tcp", flows = 1, size = "1000MB" }}]

[experiment]
duration = "40s"
warmup = "5s"
algorithms = ["none"]
payload = "1448B"
{delack}

[[tcp]]
name = "newreno"
src = "h2"
dst = "r2"
kind = "bulk"
size = "1000MB"
congestion_control = "reno"
hold = "120ms"
"""


def _write(tmp_path: Path, delack: str) -> Path:
    path = tmp_path / "delack.toml"
    path.write_text(FILE.format(delack=delack))
    return path


def test_off_by_default(tmp_path: Path) -> None:
    assert load(_write(tmp_path, "")).delayed_ack is False
    assert load(_write(tmp_path, "delayed_ack = true")).delayed_ack is True


@pytest.mark.parametrize("bad", ['"yes"', "2"])
def test_not_a_boolean_is_a_clear_error(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(_write(tmp_path, f"delayed_ack = {bad}"))]) == 2
    assert "delayed_ack" in capsys.readouterr().err


def _acks_per_segment(tmp_path: Path, delack: str) -> dict[str, float]:
    """Run the file for 40 s; per receiver, acks sent over data segments received (and
    whether its server delays acks, under "r1 on" and "r2 on")."""
    plan = load(_write(tmp_path, delack))
    engine = SimEngine()
    engine.build(plan, "none", tmp_path / "run")
    counts = {"r1": [0, 0], "r2": [0, 0]}
    for name, c in counts.items():
        host = engine.net.hosts[name]
        send = host.send

        def counted(pkt, send=send, c=c):  # type: ignore[no-untyped-def]
            c[0] += pkt.length == 0
            return send(pkt)

        host.send = counted  # type: ignore[method-assign]
    for gen in plan.tcp:
        engine.start_tcp(gen)
    for app in plan.cm:
        engine.start_cm(app)
    engine.net.run(40.0)
    servers = engine.servers
    out = {n: counts[n][0] / max(1, servers[n].stats.bytes // 1448) for n in counts}
    return out | {f"{n} on": float(servers[n].delayed_ack) for n in counts}


def test_on_it_reaches_every_receiver(tmp_path: Path) -> None:
    off = _acks_per_segment(tmp_path, "")
    on = _acks_per_segment(tmp_path, "delayed_ack = true")
    assert off["r2"] == pytest.approx(1.0, abs=0.03)  # NewReno: one ack per segment
    assert 0.6 < on["r2"] < 0.85  # about one per two, as Linux (lab: 0.74)
    assert on["r1"] > 0.9  # TCP/CM's one-MSS writes carry PSH: acked at once
    assert (off["r1 on"], off["r2 on"], on["r1 on"], on["r2 on"]) == (0, 0, 1, 1)
