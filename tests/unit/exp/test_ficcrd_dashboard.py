"""FICCRD's MAPR and DPF on the dashboard: a short simulator run of ficcrd.toml's lab
network writes them into each core port's period record from the switch's registers
(SimFiccrd), and the feed serves exactly the recorded values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairgate_controller.ficcrd import FiccrdConfig, dpf_levels, dpf_lookup
from fairgate_exp.dashboard.feed import STATE_CHARTS, RunFeed, plan_of_run
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import EXPERIMENTS_DIR, load
from fairgate_p4 import generated as g

KEYS = ("ficcrd_mapr_kbps", "ficcrd_dpf", "ficcrd_queue_pkts", "ficcrd_q0_pkts")


@pytest.fixture(scope="module")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("ficdash")
    text = (EXPERIMENTS_DIR / "ficcrd.toml").read_text() + (
        '\n[scales.test]\nextends = "lab"\n\n[scales.test.set]\n'
        '"experiment.duration" = "6s"\n"experiment.warmup" = "2s"\n'
    )
    (tmp / "ficcrd.toml").write_text(text)
    run_dir, _ = run(load(tmp / "ficcrd.toml", "test"), SimEngine, "sim", tmp / "r", None, print)
    return run_dir


def test_core_records_carry_mapr_and_dpf(short_run: Path) -> None:
    recs = [json.loads(x) for x in (short_run / "ficcrd" / "controller.jsonl").open()]
    plan = plan_of_run(short_run)
    (key,) = [k for k, p in plan.ports.items() if p.label == "s1->s2"]
    bottleneck = [r for r in recs if (r["switch"], r["port"]) == key]
    assert len(bottleneck) > 20 and all(set(KEYS) <= r.keys() for r in bottleneck)
    buffer = 200  # the lab's s1 -> s2 buffer (200pkt)
    table = dpf_levels(buffer)
    assert {r["ficcrd_q0_pkts"] for r in bottleneck} == {FiccrdConfig().bur * buffer}
    # MAPR is learnt from the RDs: unknown (0) at first, then a rate below the link's
    maprs = [r["ficcrd_mapr_kbps"] for r in bottleneck]
    assert maprs[0] == 0 and 0 < max(maprs) < plan.ports[key].capacity_Bps(plan.frame) * 8 / 1e3
    for r in bottleneck:  # DPF is the installed range's value at the recorded queue
        level = dpf_lookup(table, r["ficcrd_queue_pkts"])
        assert r["ficcrd_dpf"] == level.dpf / g.FG_DPF_ONE
    assert len({r["ficcrd_dpf"] for r in bottleneck}) > 1  # the queue moved across ranges
    # host-facing ports are not core queues: no FICCRD state there
    hosts = [r for r in recs if plan.ports[(r["switch"], r["port"])].peer in plan.hosts]
    assert len(hosts) > 20 and all("ficcrd_q0_pkts" not in r for r in hosts)


def test_feed_serves_the_recorded_mapr_and_dpf(short_run: Path) -> None:
    recs = [json.loads(x) for x in (short_run / "ficcrd" / "controller.jsonl").open()]
    plan = plan_of_run(short_run)
    events = RunFeed(plan, short_run).since(0)
    ports = [e for e in events if e["k"] == "port" and e["algo"] == "ficcrd"]
    assert ports
    charted = {k for c in STATE_CHARTS["ficcrd"] for k, *_ in c["series"]}
    assert {"ficcrd_mapr_kbps", "ficcrd_dpf", "ficcrd_q0_pkts"} <= charted
    by_key = {(r["switch"], r["port"], r["t"]): r for r in recs}
    label = {p.label: k for k, p in plan.ports.items()}
    served = 0
    for e in ports:
        sw, port = label[e["port"]]
        rec = by_key[(sw, port, e["t"])]
        for key in ("ficcrd_mapr_kbps", "ficcrd_dpf"):
            assert e["state"][key] == (float(rec[key]) if key in rec else None)
            served += key in rec
    assert served > 10
