"""On/off paced flows (``every``, ``until``): one entry expands into one ordinary flow per
on-period before either engine sees the plan (``fairgate_exp/flows.py``); bad
combinations are one-line errors; cm-feedback, written with it, runs the same CBR flows
its 115 hand-listed entries did, and cm-aging its CBR (180 hand-listed flows over 480 s,
372 over 960 s since)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.__main__ import main
from fairgate_exp.load import EXPERIMENTS_DIR, load

BASE = """\
switches = ["s1"]
hosts = [
  {{ name = "h1", switch = "s1" }},
  {{ name = "r1", switch = "s1", capacity = "1Mbit/s" }},
]
flows = [
  {{ name = "cbr", src = "h1", dst = "r1", max_rate = "600kbit/s", {keys} }},
]

[experiment]
duration = "{duration}"
warmup = "2s"
algorithms = ["none"]
"""


def write(tmp_path: Path, keys: str, duration: str = "100s") -> Path:
    path = tmp_path / "onoff.toml"
    path.write_text(BASE.format(keys=keys, duration=duration))
    return path


def times(path: Path) -> list[tuple[str, float, float]]:
    return [(f.name, f.start_s, f.stop_s) for f in load(path).flows]


def test_on_periods_until_the_end_of_the_run(tmp_path: Path) -> None:
    """On 10 s every 30 s from 5 s in a 100 s run: onsets 5, 35, 65, 95 (95 < 100), the
    last cut at the end of the run."""
    path = write(tmp_path, 'start = "5s", stop = "15s", every = "30s"')
    assert times(path) == [
        ("cbr-1", 5.0, 15.0),
        ("cbr-2", 35.0, 45.0),
        ("cbr-3", 65.0, 75.0),
        ("cbr-4", 95.0, 100.0),
    ]
    plan = load(path)
    assert {f.max_rate_bps for f in plan.flows} == {plan.flows[0].max_rate_bps}
    assert {(f.src, f.dst) for f in plan.flows} == {("h1", "r1")}


def test_until_is_the_last_onset_exclusive(tmp_path: Path) -> None:
    """``until`` bounds the onsets, strictly: 65 s is the last before 95 s, and an onset at
    ``until`` itself is not one."""
    path = write(tmp_path, 'start = "5s", stop = "15s", every = "30s", until = "95s"')
    assert [n for n, _, _ in times(path)] == ["cbr-1", "cbr-2", "cbr-3"]
    path = write(tmp_path, 'start = "5s", stop = "15s", every = "30s", until = "96s"')
    assert times(path)[-1] == ("cbr-4", 95.0, 100.0)
    # past the end of the run it bounds nothing (a scale or a short test run may cut it)
    path = write(tmp_path, 'start = "5s", stop = "15s", every = "30s", until = "1000s"')
    assert len(times(path)) == 4


def test_decimal_periods_land_on_the_written_times(tmp_path: Path) -> None:
    """0.1 s + 2 x 0.1 s is 0.3 s, as a hand-written "0.3s" would be (no float residue)."""
    path = write(tmp_path, 'start = "0.1s", stop = "0.15s", every = "0.1s", until = "0.45s"')
    assert times(path) == [
        ("cbr-1", 0.1, 0.15),
        ("cbr-2", 0.2, 0.25),
        ("cbr-3", 0.3, 0.35),
        ("cbr-4", 0.4, 0.45),
    ]


def test_expanded_names_are_flow_names_for_expectations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An expectation names an on-period as it is recorded (``cbr-2``); the entry's own
    name is no flow, and a flow clashing with an on-period's name is a duplicate."""
    keys = 'start = "5s", stop = "15s", every = "30s"'
    good = write(tmp_path, keys).read_text()
    expect = (
        '\n[[expect]]\nmetric = "flow_rate"\nflows = ["{f}"]\nvalue = "1Mbit/s"\nwithin = "50%"\n'
    )
    path = tmp_path / "e.toml"
    path.write_text(good + expect.format(f="cbr-2"))
    assert main(["check", str(path)]) == 0
    capsys.readouterr()
    path.write_text(good + expect.format(f="cbr"))
    assert main(["check", str(path)]) == 2
    assert "unknown flow 'cbr'" in capsys.readouterr().err
    clash = good.replace(
        "]\n\n[experiment]", '  { name = "cbr-3", src = "h1", dst = "r1" },\n]\n\n[experiment]'
    )
    path.write_text(clash)
    assert main(["check", str(path)]) == 2
    assert "flow 'cbr-3' is defined 2 times" in capsys.readouterr().err


BAD = {
    "no_stop": ('start = "5s", every = "30s"', ["flows[0] (cbr)", "every needs stop"]),
    "on_as_long_as_period": (
        'start = "5s", stop = "35s", every = "30s"',
        ["flows[0] (cbr)", "on for 30s every 30s", "stop - start must be shorter than every"],
    ),
    "every_zero": ('start = "5s", stop = "15s", every = "0s"', ["flows[0].every", "must be > 0"]),
    "every_no_unit": ('start = "5s", stop = "15s", every = "30"', ["flows[0].every"]),
    "until_before_start": (
        'start = "5s", stop = "15s", every = "30s", until = "5s"',
        ["flows[0] (cbr)", "until 5s is not after start 5s"],
    ),
    "until_without_every": (
        'start = "5s", stop = "15s", until = "50s"',
        ["flows[0] (cbr)", "until needs every"],
    ),
    "with_count": (
        'start = "5s", stop = "15s", every = "30s", count = 3',
        ["flows[0] (cbr)", "every and count > 1 cannot be combined"],
    ),
    "too_many_periods": (
        'start = "0s", stop = "1ms", every = "2ms"',
        ["flows[0] (cbr)", "more than 2000 on-periods"],
    ),
    "first_stop_after_end": (
        'start = "95s", stop = "105s", every = "30s"',
        ["flows[0] (cbr)", "stop 105s is after the end"],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_onoff(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    keys, wants = BAD[case]
    path = write(tmp_path, keys)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert str(path) in err
    for want in wants:
        assert want in err, err


def hand_expanded(
    rows: list[tuple[str, float, int]], rate_bps: float
) -> list[tuple[str, str, float, float, float | None]]:
    """The CBR as the files listed it until 2026-11-28, one flow per on-period: per
    receiver its first onset and its number of onsets, on 10 s every 20 s from x1."""
    return [
        ("x1", dst, first + 20.0 * k, first + 10.0 + 20.0 * k, rate_bps)
        for dst, first, n in rows
        for k in range(n)
    ]


def normalised(name: str) -> tuple[list[tuple[str, str, float, float, float | None]], list[str]]:
    """The plan's paced flows as both engines get them (src, dst, start, stop, max_rate in
    bit/s at the file's own scale), in order, and their names."""
    plan = load(EXPERIMENTS_DIR / f"{name}.toml")
    assert plan.factor == 1
    flows = [(f.src, f.dst, f.start_s, f.stop_s, f.max_rate_bps) for f in plan.flows]
    return flows, [f.name for f in plan.flows]


def test_cm_aging_runs_its_on_off_cbr() -> None:
    """cm-aging's 8 on/off entries (960 s; until 2026-11-28 480 s and 180 hand-listed
    flows): r5/r6 and r9/r10 from 20 s (onsets 20 .. 940 s, 47), r7/r8 and r11/r12 from
    30 s (30 .. 930 s, 46), in that order, 1000 kbit/s, named <entry>-<k>."""
    rows = [
        ("r5", 20.0, 47),
        ("r6", 20.0, 47),
        ("r7", 30.0, 46),
        ("r8", 30.0, 46),
        ("r9", 20.0, 47),
        ("r10", 20.0, 47),
        ("r11", 30.0, 46),
        ("r12", 30.0, 46),
    ]
    flows, names = normalised("cm-aging")
    assert flows == hand_expanded(rows, 1e6)
    assert len(flows) == 372 and len(set(names)) == 372
    assert names[:2] == ["cbr5-1", "cbr5-2"] and names[46] == "cbr5-47"
    assert names[94:96] == ["cbr7-1", "cbr7-2"] and names[-1] == "cbr12-46"


def test_cm_feedback_runs_the_hand_listed_cbr() -> None:
    """cm-feedback's 5 on/off entries are the 115 flows it listed by hand: r1 .. r5, each
    from 20 s on 10 s every 20 s (onsets 20 .. 460 s, 23), 600 kbit/s."""
    flows, names = normalised("cm-feedback")
    assert flows == hand_expanded([(f"r{i}", 20.0, 23) for i in range(1, 6)], 600e3)
    assert len(flows) == 115 and names[0] == "cbr1-1" and names[-1] == "cbr5-23"
