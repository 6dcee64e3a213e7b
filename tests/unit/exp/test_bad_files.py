"""Bad experiment files: one line on stderr naming the file and the place, exit status 2,
no traceback. Each case starts from a good file and breaks one thing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fairgate_exp.__main__ import main

ROOT = Path(__file__).resolve().parents[3]

GOOD = """\
switches = ["s1", "s2"]
hosts = [
  { name = "h1", switch = "s1" },
  { name = "r1", switch = "s2", ack_delay = "20ms" },
]
links = [{ a = "s1", b = "s2", capacity = "400pkt/s", buffer = "64pkt" }]
flows = [{ name = "f1", src = "h1", dst = "r1" }]

[experiment]
duration = "10s"
warmup = "2s"
algorithms = ["qfcp"]

[[phases]]
name = "steady"
start = "5s"

[[expect]]
metric = "maxmin"
within = "10%"
"""


def run_check(tmp_path: Path, text: str | bytes, capsys: pytest.CaptureFixture[str]) -> str:
    path = tmp_path / "exp.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    code = main(["check", str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert str(path) in lines[0]
    return lines[0]


def test_good_file_passes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(GOOD)
    assert main(["check", str(path)]) == 0
    assert '"s1->s2"' in capsys.readouterr().out


CASES = {
    "toml_syntax": (
        GOOD.replace('duration = "10s"', 'duration = "10s'),
        ["TOML syntax error", "line 10", "column"],
    ),
    "unknown_key_nearest": (
        GOOD.replace('duration = "10s"', 'duraton = "10s"'),
        ["experiment.duraton", "did you mean 'duration'"],
    ),
    "unknown_key_in_list": (
        GOOD.replace('buffer = "64pkt"', 'bufer = "64pkt"'),
        ["links[0].bufer", "did you mean 'buffer'"],
    ),
    "wrong_unit": (
        GOOD.replace('"400pkt/s"', '"400pkts"'),
        ["links[0].capacity", "unknown unit 'pkts'"],
    ),
    "no_unit": (GOOD.replace('"400pkt/s"', "400"), ["links[0].capacity", "needs a unit"]),
    "zero_capacity": (GOOD.replace('"400pkt/s"', '"0Mbit/s"'), ["links[0].capacity", "> 0"]),
    "negative_capacity": (
        GOOD.replace('"400pkt/s"', '"-5Mbit/s"'),
        ["links[0].capacity", "is not <number><unit>"],
    ),
    "link_unknown_node": (
        GOOD.replace('b = "s2"', 'b = "s3"'),
        ["links[0]", "'s3' is unknown", "did you mean 's2'"],
    ),
    "duplicate_names": (
        GOOD.replace('{ name = "r1", switch = "s2"', '{ name = "h1", switch = "s2"'),
        ["host 'h1' is defined 2 times"],
    ),
    "flow_no_route": (
        GOOD.replace('switches = ["s1", "s2"]', 'switches = ["s1", "s2", "s3"]').replace(
            '{ name = "r1", switch = "s2"', '{ name = "r1", switch = "s3"'
        ),
        ["flows[0] (f1): no route from h1 (s1) to r1 (s3)"],
    ),
    "cm_full_packets_with_frame": (
        GOOD.replace(
            'flows = [{ name = "f1", src = "h1", dst = "r1" }]',
            'flows = [{ name = "f1", src = "h1", dst = "r1" }]\n'
            'cm = [{ name = "v", src = "h1", dst = "r1", app = "audio", packets = "full", '
            'frame = "20ms" }]',
        ),
        ["cm[0] (v)", "leave out frame"],
    ),
    "cm_full_packets_not_audio": (
        GOOD.replace(
            'flows = [{ name = "f1", src = "h1", dst = "r1" }]',
            'flows = [{ name = "f1", src = "h1", dst = "r1" }]\n'
            'cm = [{ name = "b", src = "h1", dst = "r1", packets = "full" }]',
        ),
        ["cm[0] (b)", "the audio app's"],
    ),
    "phase_after_end": (
        GOOD.replace('start = "5s"', 'start = "12s"'),
        ["phases[0] (steady)", "after the end"],
    ),
    "overlapping_ports": (
        GOOD.replace(
            '{ name = "h1", switch = "s1" }', '{ name = "h1", switch = "s1", port = 1 }'
        ).replace('capacity = "400pkt/s"', 'capacity = "400pkt/s", a_port = 1'),
        ["both use s1 port 1"],
    ),
    "sweep_unknown_field": (
        GOOD + '\n[sweep.grid]\n"links.0.capacty" = ["200pkt/s", "400pkt/s"]\n',
        ["sweep over unknown field 'links.0.capacty'", "did you mean 'capacity'"],
    ),
    "expect_unrecorded_port": (
        GOOD.replace('within = "10%"', 'within = "10%"')
        + '\n[measure]\nports = ["s1->s2"]\n\n[[expect]]\nmetric = "drops"\nmax = 0\n'
        'ports = ["s2->s1"]\n',
        ["expect[1] (drops): port s2->s1 is not recorded"],
    ),
    "expect_flows_not_recorded": (
        GOOD + "\n[measure]\nflows = false\n",
        ["expect[0] (maxmin): flow rates are not recorded"],
    ),
    "flow_stop_after_end": (
        GOOD.replace('dst = "r1" }', 'dst = "r1", stop = "11s" }'),
        ["flows[0] (f1): stop 11s is after the end"],
    ),
    "unknown_algorithm": (
        GOOD.replace('["qfcp"]', '["qfcp", "xpc"]'),
        ["experiment.algorithms[1]", "'xpc' is not allowed"],
    ),
    "top_level_key_after_table": (
        GOOD + '\nswitches = ["s9"]\n',
        ["'switches' is a top-level key", "before the first [table]"],
    ),
    "flow_number_without_bounds": (
        GOOD + '\n[[expect]]\nmetric = "flow_number"\n',
        ["expect[1] (flow_number): needs min or max"],
    ),
    "zip_of_another_length": (
        GOOD + '\n[sweep.grid]\n"links.0.capacity" = ["200pkt/s", "400pkt/s"]\n'
        '[sweep.zip]\n"experiment.duration" = ["5s"]\n',
        ["sweep.zip.experiment.duration", "as many as this one (1)"],
    ),
    "percent_typo": (GOOD.replace('"10%"', '"10 percent"'), ["expect[0].within"]),
    "scale_sets_unknown_field": (
        GOOD + '\n[scales.lab]\nfactor = 0.5\n\n[scales.lab.set]\n"links.0.capacty" = "1pkt/s"\n',
        ["scales.lab.set: unknown field 'links.0.capacty'", "did you mean 'capacity'"],
    ),
    "scale_sets_a_bad_value": (
        GOOD + '\n[scales.lab]\nfactor = 0.5\n\n[scales.lab.set]\n"hosts.*.delay" = "-2ms"\n',
        ["scales.lab.set: hosts[0].delay"],
    ),
    "scale_extends_unknown": (
        GOOD + '\n[scales.smoke]\nextends = "lob"\n\n[scales.lab]\nfactor = 0.5\n',
        ["scales.smoke.extends: unknown scale 'lob'", "did you mean 'lab'"],
    ),
    "scale_without_factor": (
        GOOD + '\n[scales.lab]\nnote = "no factor"\n',
        ["scales.lab: needs a factor"],
    ),
    "queue_target_for_a_rate_algorithm": (
        GOOD + '\n[[expect]]\nmetric = "queue"\nwithin = "10%"\n',
        ["expect[1] (queue): only lestas regulates the queue to q_ref (or give a target)"],
    ),
    "goodput_without_bulk_tcp": (
        GOOD + '\n[[expect]]\nmetric = "goodput"\nmin = 0.9\n',
        ["expect[1] (goodput): there are no bulk TCP flows to measure"],
    ),
    "capacity_change_unknown_port": (
        GOOD.replace(
            "\n[experiment]",
            'capacity_changes = [{ at = "5s", port = "s1->s3", capacity = "200pkt/s" }]\n'
            "\n[experiment]",
        ),
        ["capacity_changes[0]: unknown port 's1->s3'", "ports are", "s1->s2"],
    ),
    "capacity_change_after_end": (
        GOOD.replace(
            "\n[experiment]",
            'capacity_changes = [{ at = "10s", port = "s1->s2", capacity = "200pkt/s" }]\n'
            "\n[experiment]",
        ),
        ["capacity_changes[0]: at 10 s is not before the end (10 s)"],
    ),
    "capacity_change_bad_rate": (
        GOOD.replace(
            "\n[experiment]",
            'capacity_changes = [{ at = "5s", port = "s1->s2", capacity = "half" }]\n'
            "\n[experiment]",
        ),
        ["capacity_changes[0].capacity"],
    ),
    "measure_unknown_metric": (
        GOOD + '\n[measure]\nmetrics = ["completon_rate"]\n',
        ["measure.metrics[0].metric", "'completon_rate' is not allowed", "'completion_rate'"],
    ),
    "measure_with_min": (
        GOOD + '\n[[measure.metrics]]\nmetric = "jain"\nmin = 1.0\n',
        ["measure.metrics[0]: min: a measured metric is recorded, not judged", "[[expect]]"],
    ),
    "measure_with_min_and_max": (
        GOOD + '\n[measure]\nmetrics = [{ metric = "drops", min = 0, max = 5 }]\n',
        ["measure.metrics[0]: min and max: a measured metric is recorded, not judged"],
    ),
    "measure_with_a_tolerance": (
        GOOD + '\n[measure]\nmetrics = [{ metric = "maxmin", within = "10%" }]\n',
        ["measure.metrics[0] (maxmin): within is a tolerance to judge by"],
    ),
    "measure_convergence_without_band": (
        GOOD + '\n[measure]\nmetrics = ["convergence"]\n',
        ["measure.metrics[0] (convergence): needs within (the band"],
    ),
    "measure_settling": (
        GOOD + '\n[[tcp]]\nname = "up"\nsrc = "h1"\ndst = "r1"\n'
        '\n[measure]\nmetrics = [{ metric = "settling", phase = "steady" }]\n',
        ["measure.metrics[0] (settling): settling is judged across variants", "[[expect]]"],
    ),
    "measure_completion_rate_without_tcp": (
        GOOD + '\n[measure]\nmetrics = ["completion_rate"]\n',
        ["measure.metrics[0] (completion_rate): there are no TCP flows to measure"],
    ),
    "measure_unknown_flow": (
        GOOD + '\n[measure]\nmetrics = [{ metric = "jain", flows = ["f2"] }]\n',
        ["measure.metrics[0] (jain): unknown flow 'f2'", "did you mean 'f1'"],
    ),
    "measure_unknown_phase": (
        GOOD + '\n[measure]\nmetrics = [{ metric = "drops", phase = "stedy" }]\n',
        ["measure.metrics[0] (drops): unknown phase 'stedy'", "did you mean 'steady'"],
    ),
    "measure_unrecorded_port": (
        GOOD
        + '\n[measure]\nports = ["s1->s2"]\nmetrics = [{ metric = "drops", ports = ["s2->s1"] }]\n',
        ["measure.metrics[0] (drops): port s2->s1 is not recorded"],
    ),
    "measure_flow_rate_without_value": (
        GOOD + '\n[measure]\nmetrics = [{ metric = "flow_rate", flows = ["f1"] }]\n',
        ["measure.metrics[0] (flow_rate): needs flows and value"],
    ),
    "unknown_phase": (
        GOOD + '\n[[expect]]\nmetric = "drops"\nmax = 0\nphase = "stedy"\n',
        ["unknown phase 'stedy'", "did you mean 'steady'"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_file(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, wants = CASES[case]
    line = run_check(tmp_path, text, capsys)
    for want in wants:
        assert want in line, line


def test_measured_metrics_pass_without_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A metric name alone, or a table of an expectation's selectors (convergence with its
    band), is a measured metric: accepted without min/max."""
    path = tmp_path / "exp.toml"
    path.write_text(
        GOOD + '\n[measure]\nmetrics = ["utilisation", "drops", '
        '{ metric = "jain", flows = ["f1"], phase = "steady" }, '
        '{ metric = "convergence", within = "10%" }]\n'
    )
    assert main(["check", str(path)]) == 0, capsys.readouterr().err
    from fairgate_exp.load import load

    plan = load(str(path))
    measured = plan.file.measure.metrics
    assert [m.metric for m in measured] == ["utilisation", "drops", "jain", "convergence"]
    assert measured[2].flows == ["f1"] and measured[2].phase == "steady"


def test_non_utf8_names_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = run_check(tmp_path, GOOD.encode() + b"# caf\xe9\n", capsys)
    assert "not UTF-8" in line and "0xe9" in line and f"line {GOOD.count(chr(10)) + 1}" in line


def test_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a directory" in err


def test_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path / "nope.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such experiment file" in err


def test_cli_process_exits_2_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "exp.toml"
    path.write_text(GOOD.replace('"400pkt/s"', '"400furlongs"'))
    env_path = ":".join(
        str(ROOT / p) for p in ("experiments", "sim", "controller", "hosts", "p4src")
    )
    proc = subprocess.run(
        [sys.executable, "-m", "fairgate_exp", "run", str(path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "unknown unit 'furlongs'" in proc.stderr
