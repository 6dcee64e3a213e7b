"""The Congestion Manager's experiment-file fields (drop-tail CM experiments): TCP/CM apps,
weights, stagger, aging, feedback frequency, per-flow traces and the ratio expectation."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.driver import trace_table
from fairgate_exp.load import ExperimentError, load
from fairgate_exp.metrics import judge, loss_rate

GOOD = """\
switches = ["s1", "s2"]
hosts = [
  { name = "h1", switch = "s1" },
  { name = "h2", switch = "s1" },
  { name = "r1", switch = "s2", ack_delay = "50ms" },
]
links = [{ a = "s1", b = "s2", capacity = "200pkt/s", buffer = "20pkt" }]
tcp = [{ name = "reno", src = "h2", dst = "r1", congestion_control = "reno" }]

[[cm]]
name = "tcm"
src = "h1"
dst = "r1"
app = "tcp"
flows = 2
weights = [1, 3]
stagger = "1s"
aging = "srtt"
probes_per_rtt = 0.5
size = "2MB"
mss = "1000B"

[experiment]
duration = "10s"
warmup = "2s"
algorithms = ["none"]

[measure]
traces = true

[[expect]]
metric = "ratio"
flows = ["tcm-0", "tcm-1"]
versus = ["reno"]
min = 0.8
max = 1.25
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(text)
    return path


def test_cm_fields_reach_the_plan(tmp_path: Path) -> None:
    plan = load(write(tmp_path, GOOD))
    (a,) = plan.cm
    assert a.app == "tcp" and a.weights == (1.0, 3.0) and a.stagger_s == 1.0
    assert a.aging == "srtt" and a.probes_per_rtt == 0.5
    assert a.size == 2_000_000 and a.mss == 1000
    assert a.flow_names() == ["tcm-0", "tcm-1"]
    assert plan.file.measure.traces


def test_defaults_are_the_papers(tmp_path: Path) -> None:
    text = GOOD.replace(
        'app = "tcp"\nflows = 2\nweights = [1, 3]\nstagger = "1s"\naging = "srtt"\n'
        'probes_per_rtt = 0.5\nsize = "2MB"\nmss = "1000B"\n',
        'app = "bulk"\nflows = 2\n',
    )
    (a,) = load(write(tmp_path, text)).cm
    assert a.weights == (1.0, 1.0) and a.aging == "min_rtt" and a.probes_per_rtt == 2.0
    assert a.stagger_s == 0.0


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("weights = [1, 3]", "weights = [1]", "1 weights for 2 flows"),
        ("weights = [1, 3]", "weights = [1, 0]", "greater than 0"),
        ('aging = "srtt"', 'aging = "mean"', "aging"),
        ("probes_per_rtt = 0.5", "probes_per_rtt = 0", "probes_per_rtt"),
        ('stagger = "1s"', 'stagger = "10s"', "last flow opens after it stops"),
        ("flows = 2\nweights = [1, 3]", "flows = 0\nweights = []", "flows >= 1"),
        ('versus = ["reno"]', 'versus = ["ren"]', "unknown flow 'ren' in versus"),
        ('versus = ["reno"]\n', "", "needs versus"),
        ("min = 0.8\nmax = 1.25\n", "", "needs min or max"),
        ('flows = ["tcm-0", "tcm-1"]', 'of = "loss_rate"\nflows = ["tcm-0"]', "needs ports"),
    ],
)
def test_bad_cm_fields(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in GOOD
    with pytest.raises(ExperimentError, match=message):
        load(write(tmp_path, GOOD.replace(old, new)))


def test_loss_ratio_checks_port_labels(tmp_path: Path) -> None:
    text = GOOD.replace(
        'flows = ["tcm-0", "tcm-1"]\nversus = ["reno"]',
        'of = "loss_rate"\nports = ["s1->s2"]\nversus = ["s9->s2"]',
    )
    with pytest.raises(ExperimentError, match="unknown port 's9->s2'"):
        load(write(tmp_path, text))


def test_of_and_versus_belong_to_ratio(tmp_path: Path) -> None:
    text = GOOD + '\n[[expect]]\nmetric = "drops"\nmax = 5\nversus = ["s1->s2"]\n'
    with pytest.raises(ExperimentError, match="belong to metric"):
        load(write(tmp_path, text))


def test_flow_rate_ratio_judged(tmp_path: Path) -> None:
    plan = load(write(tmp_path, GOOD))
    series = [(t / 5, 0.0) for t in range(11, 50)]
    rates = {
        "tcm-0": [(t, 20.0) for t, _ in series],
        "tcm-1": [(t, 60.0) for t, _ in series],
        "reno": [(t, 90.0) for t, _ in series],
    }
    (v,) = judge(plan, "none", rates, [])
    assert v.metric == "ratio" and v.measured == pytest.approx(80 / 90, abs=1e-3)
    assert v.passed
    rates["reno"] = [(t, 110.0) for t, _ in series]  # 80/110 = 0.73 < 0.8
    (v,) = judge(plan, "none", rates, [])
    assert not v.passed
    (v,) = judge(plan, "none", {"tcm-0": rates["tcm-0"]}, [])
    assert not v.passed and v.measured is None  # no denominator: no ratio


def row(port: str, t: float, arrived: int, departed: int, queue_drops: int) -> dict[str, object]:
    return {
        "port": port,
        "t": t,
        "arrival_pkts": arrived,
        "departure_pkts": departed,
        "queue_pkts": 0.0,
        "queue_drops": queue_drops,
    }


def test_loss_rate_ratio_judged(tmp_path: Path) -> None:
    text = GOOD.replace(
        'flows = ["tcm-0", "tcm-1"]\nversus = ["reno"]\nmin = 0.8\nmax = 1.25',
        'of = "loss_rate"\nports = ["s1->s2"]\nversus = ["s2->s1"]\nmax = 0.5',
    ).replace("[measure]", '[measure]\nports = ["s1->s2", "s2->s1"]')
    plan = load(write(tmp_path, text))
    rows = [row("s1->s2", 3.0 + k, 100, 99, 1) for k in range(5)]
    rows += [row("s2->s1", 3.0 + k, 100, 96, 4) for k in range(5)]
    assert loss_rate(rows[:5]) == pytest.approx(0.01)
    (v,) = judge(plan, "none", {}, rows)
    assert v.measured == pytest.approx(0.25) and v.passed
    rows = [r | {"queue_drops": 3} if r["port"] == "s1->s2" else r for r in rows]
    (v,) = judge(plan, "none", {}, rows)
    assert v.measured == pytest.approx(0.75) and not v.passed


def test_trace_table_rates_and_losses() -> None:
    rows = trace_table("none", {"f": [(0.2, 0, 0, 100.0), (0.4, 10, 0, 120.0), (0.6, 30, 1, None)]})
    assert [r["seq_pkts"] for r in rows] == [0, 10, 30]
    assert [r["rate_pps"] for r in rows] == [None, pytest.approx(50.0), pytest.approx(100.0)]
    assert [r["losses"] for r in rows] == [0, 0, 1]
    assert rows[2]["cm_rate_kbps"] is None and rows[0]["flow"] == "f"


BULK_PAIR = (
    GOOD.replace(
        'mss = "1000B"\n',
        'mss = "1000B"\n\n[[cm]]\nname = "mean"\nsrc = "h2"\ndst = "r1"\napp = "bulk"\n',
    )
    .replace(
        'flows = ["tcm-0", "tcm-1"]\nversus = ["reno"]\nmin = 0.8\nmax = 1.25',
        'of = "cm_loss"\nflows = ["tcm"]\nversus = ["mean"]\nmax = 0.8',
    )
    .replace('app = "tcp"', 'app = "bulk"')
)


def test_cm_loss_ratio_judged_from_the_cm_facts(tmp_path: Path) -> None:
    plan = load(write(tmp_path, BULK_PAIR))
    cm = {
        "tcm": {"probed_bytes": 100_000, "probe_lost_bytes": 2_000},
        "mean": {"probed_bytes": 50_000, "probe_lost_bytes": 2_000},
    }
    (v,) = judge(plan, "none", {}, [], cm=cm)
    assert v.measured == pytest.approx(0.02 / 0.04) and v.passed
    assert v.detail["tcm"]["loss_rate"] == pytest.approx(0.02)
    cm["tcm"]["probe_lost_bytes"] = 4_000  # 0.04 / 0.04
    (v,) = judge(plan, "none", {}, [], cm=cm)
    assert v.measured == pytest.approx(1.0) and not v.passed
    cm["mean"]["probe_lost_bytes"] = 0  # nothing lost by the denominator: no ratio
    (v,) = judge(plan, "none", {}, [], cm=cm)
    assert v.measured is None and not v.passed
    (v,) = judge(plan, "none", {}, [])  # no facts: no ratio
    assert v.measured is None and not v.passed


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('versus = ["mean"]', 'versus = ["reno"]', "'reno' is not a CM app"),
        ('flows = ["tcm"]', 'flows = ["tcm"]\nports = ["s1->s2"]', "needs flows: CM app names"),
        (
            'name = "mean"\nsrc = "h2"\ndst = "r1"\napp = "bulk"',
            'name = "mean"\nsrc = "h2"\ndst = "r1"\napp = "tcp"',
            "TCP/CM, which sends no probes",
        ),
    ],
)
def test_bad_cm_loss_ratio(tmp_path: Path, old: str, new: str, message: str) -> None:
    assert old in BULK_PAIR
    with pytest.raises(ExperimentError, match=message):
        load(write(tmp_path, BULK_PAIR.replace(old, new)))


def test_report_rows_give_each_cm_apps_own_loss() -> None:
    from fairgate_exp.report import _cm_figures

    res = {"engine": {"cm": {"a": {"probed_bytes": 40_000, "probe_lost_bytes": 1_000}}}}
    by = {("sim", "file"): {"results": {"none": res}}}
    rows = dict(_cm_figures(by))
    assert rows["a: CM own loss (probes, whole run)"](res) == pytest.approx(0.025)
    none = {"engine": {"cm": {"a": {"probed_bytes": 0}}}}
    assert rows["a: CM own loss (probes, whole run)"](none) is None


def test_probe_spread_reaches_both_engines(tmp_path: Path) -> None:
    """RTCP's 0.5 by default; a file's value goes to the plan, the lab app's command line
    (always given, 0 included, since the apps' own default is 0.5) and the simulator's CM,
    seeded by the run."""
    import dataclasses

    from fairgate_exp.engines.bmv2 import cm_command
    from fairgate_exp.engines.sim import SimEngine
    from fairgate_hosts.apps import bulk

    text = GOOD.replace('app = "tcp"\n', 'app = "bulk"\n').replace(
        "probes_per_rtt = 0.5\n", "probes_per_rtt = 0.5\nprobe_spread = 0.25\n"
    )
    plan = load(write(tmp_path, text))
    (a,) = plan.cm
    assert a.probe_spread == 0.25
    cmd = cm_command(plan, a, 10.0, tmp_path / "cm.jsonl")
    assert cmd[cmd.index("--probe-spread") + 1] == "0.25"
    assert bulk.build_parser().parse_args(cmd[3:]).probe_spread == 0.25
    fixed = cm_command(plan, dataclasses.replace(a, probe_spread=0.0), 10.0, tmp_path / "x")
    assert bulk.build_parser().parse_args(fixed[3:]).probe_spread == 0.0
    with pytest.raises(SystemExit) as exc:
        bulk.main(["--dst", "10.0.0.1", "--probe-spread", "1.5"])
    assert exc.value.code == 2
    engine = SimEngine()
    engine.build(plan, "none", tmp_path / "run")
    engine.start_cm(a)
    ((_, _, host),) = engine.cm_apps.values()
    assert host.cfg.probe_spread == 0.25 and host.cfg.seed == "1-cm-h1-r1"
    default = load(write(tmp_path, GOOD.replace('app = "tcp"\n', 'app = "bulk"\n'))).cm[0]
    assert default.probe_spread == 0.5
    with pytest.raises(ExperimentError, match="probe_spread"):
        load(write(tmp_path, text.replace("probe_spread = 0.25", "probe_spread = 1")))
