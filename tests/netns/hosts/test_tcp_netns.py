"""TCP traffic generator and TCP over CM between two namespaces on a veth (root only)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairgate_hosts.netns import VethPair, netns_unavailable_reason

from .common import ENV, records, veth_lab

REASON = netns_unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture(scope="module")
def lab() -> Iterator[VethPair]:
    with veth_lab("fgt") as pair:
        yield pair


def run_in(lab: VethPair, ns: str, args: list[str], timeout: float) -> int:
    proc = lab.popen(ns, args, env=ENV)
    try:
        return proc.wait(timeout)
    finally:
        lab.stop(proc)


@pytest.mark.parametrize("mbps", [5, 20])
def test_tcp_paced_goodput_matches_the_set_rate(lab: VethPair, tmp_path: Path, mbps: int) -> None:
    port = 5100 + mbps
    srv = lab.popen(
        lab.ns_b,
        ["-m", "fairgate_hosts.traffic.server", "--port", str(port), "--summary", os.devnull],
        env=ENV,
    )
    try:
        time.sleep(0.5)
        log = tmp_path / "tcp.jsonl"
        rc = run_in(
            lab,
            lab.ns_a,
            [
                "-m",
                "fairgate_hosts.apps.tcp_cm",
                "--dst",
                lab.addr_b,
                "--port",
                str(port),
                "--rate",
                str(mbps * 1000),
                "--duration",
                "4",
                "--log",
                str(log),
            ],
            30,
        )
    finally:
        lab.stop(srv)
    assert rc == 0
    flow = records(log)[-1]["flows"][0]
    assert flow["steady_goodput_kbps"] == pytest.approx(mbps * 1000, rel=0.10), flow


def test_tcpgen_over_a_veth(lab: VethPair, tmp_path: Path) -> None:
    srv = lab.popen(
        lab.ns_b,
        [
            "-m",
            "fairgate_hosts.traffic.server",
            "--port",
            "5201",
            "--summary",
            str(tmp_path / "srv.json"),
        ],
        env=ENV,
    )
    try:
        time.sleep(0.5)
        rc = run_in(
            lab,
            lab.ns_a,
            [
                "-m",
                "fairgate_hosts.traffic.client",
                "--dst",
                lab.addr_b,
                "--port",
                "5201",
                "--rate",
                "100",
                "--duration",
                "2",
                "--warmup",
                "0.5",
                "--records",
                str(tmp_path / "f.jsonl"),
                "--summary",
                str(tmp_path / "s.json"),
            ],
            30,
        )
    finally:
        lab.stop(srv)
    assert rc == 0
    s = json.loads((tmp_path / "s.json").read_text())
    assert s["outcomes"] == {"completed": s["flows"]} and 120 < s["flows"] < 300
    assert s["completion_rate_per_s"] == pytest.approx(100, rel=0.3)
    assert json.loads((tmp_path / "srv.json").read_text())["connections"]["eof"] == s["flows"]


def test_syn_retransmissions_are_counted(lab: VethPair, tmp_path: Path) -> None:
    """Take the server side's veth down for 2.5 s: the first SYNs are lost (static ARP entry)."""
    link = ["ip", "-n", lab.ns_b, "link", "set", "veth1"]
    srv = lab.popen(
        lab.ns_b,
        ["-m", "fairgate_hosts.traffic.server", "--port", "5202", "--summary", os.devnull],
        env=ENV,
    )
    try:
        time.sleep(0.5)
        # a permanent neighbour entry, so the lost SYNs are not turned into EHOSTUNREACH
        out = subprocess.run(
            ["ip", "-n", lab.ns_b, "-j", "link", "show", "veth1"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        mac = json.loads(out)[0]["address"]
        subprocess.run(
            [
                "ip",
                "-n",
                lab.ns_a,
                "neigh",
                "replace",
                lab.addr_b,
                "lladdr",
                mac,
                "dev",
                "veth0",
                "nud",
                "permanent",
            ],
            check=True,
        )
        subprocess.run([*link, "down"], check=True)
        cli = lab.popen(
            lab.ns_a,
            [
                "-m",
                "fairgate_hosts.traffic.client",
                "--dst",
                lab.addr_b,
                "--port",
                "5202",
                "--rate",
                "20",
                "--duration",
                "0.3",
                "--warmup",
                "0",
                "--timeout",
                "10",
                "--records",
                str(tmp_path / "f.jsonl"),
                "--summary",
                os.devnull,
            ],
            env=ENV,
        )
        time.sleep(2.5)  # the client's first SYNs leave within ~1 s (interpreter start)
        subprocess.run([*link, "up"], check=True)
        assert cli.wait(20) == 0
    finally:
        subprocess.run([*link, "up"], capture_output=True, check=False)
        lab.stop(srv)
    recs = [r for r in records(tmp_path / "f.jsonl") if r["type"] == "flow"]
    assert recs and all(r["outcome"] == "completed" for r in recs), [
        (r["outcome"], r["error"], r["connect_s"], r["syn_retrans"]) for r in recs
    ]
    assert all(r["syn_retrans"] >= 1 and r["connect_s"] > 0.9 for r in recs), recs
