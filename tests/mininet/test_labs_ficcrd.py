"""Smoke variant of the FICCRD lab (issue #7): ten kernel TCP Reno uploads
through one BMv2 bottleneck, droptail vs FICCRD, about 50 s."""

from __future__ import annotations

import json
from pathlib import Path

from fairgate_topo.topos import ficcrd_p2p


def test_ficcrd_topology_file_is_accepted() -> None:
    topo = ficcrd_p2p(10, 500, 200)
    addresses = {s: (f"127.0.0.1:{5000 + i}", 9000 + i) for i, s in enumerate(topo.switches)}
    doc = topo.topology_json(addresses)
    assert len(doc["hosts"]) == 20
    assert topo.queues() == [("s1", 1, 500, 200)]


def test_ficcrd_is_fairer_and_loses_less_than_droptail(tmp_path: Path) -> None:
    from fairgate_topo import lab

    code = lab.main(["--exp", "ficcrd", "--smoke", "--results", str(tmp_path), "--run-id", "t"])
    assert code == 0
    run_dir = tmp_path / "ficcrd" / "t"
    s = json.loads((run_dir / "summary.json").read_text())
    for plot in s["plots"]:
        assert (run_dir / plot).stat().st_size > 1000
    drop, fic = s["droptail"], s["ficcrd"]
    # Every flow learned an ER and had its ACK windows rewritten.
    rewritten = sum(c.get("windows_rewritten", 0) for c in fic["ficcrd_counters"].values())
    assert rewritten > 1000, fic["ficcrd_counters"]
    assert fic["jain"] >= 0.95, fic["normalised_goodput"]
    assert fic["jain"] >= drop["jain"] - 0.01
    # After slow start FICCRD loses (almost) nothing; droptail keeps losing.
    assert fic["retrans_after_warmup"] <= 2
    assert drop["retrans_after_warmup"] > fic["retrans_after_warmup"]
    # The queue sits below the buffer, around Q0, not full as with droptail.
    assert fic["queue_pkts"]["mean"] < drop["queue_pkts"]["mean"]
    assert 0.4 * s["q0_pkts"] <= fic["queue_pkts"]["mean"] <= 1.2 * s["q0_pkts"]
