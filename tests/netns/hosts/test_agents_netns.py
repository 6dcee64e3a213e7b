"""Sender and receiver agents in two network namespaces joined by a veth pair (root only)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairgate_hosts.netns import VethPair, netns_unavailable_reason

from .common import ENV, records, veth_lab

REASON = netns_unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")


@pytest.fixture
def lab() -> Iterator[VethPair]:
    with veth_lab("fgh") as pair:
        yield pair


def run_pair(
    lab: VethPair, tmp: Path, rx_args: list[str], tx_args: list[str], timeout: float = 30
) -> tuple[list[dict], list[dict], int]:
    rx_log, tx_log = tmp / "rx.jsonl", tmp / "tx.jsonl"
    rx = lab.popen(
        lab.ns_b, ["-m", "fairgate_hosts.receiver", "--log", str(rx_log), *rx_args], env=ENV
    )
    time.sleep(0.4)
    tx = lab.popen(
        lab.ns_a,
        ["-m", "fairgate_hosts.sender", "--dst", lab.addr_b, "--log", str(tx_log), *tx_args],
        env=ENV,
    )
    try:
        rc = tx.wait(timeout)
    finally:
        lab.stop(tx)
        lab.stop(rx)
    return records(tx_log), records(rx_log), rc


def test_rate_follows_feedback(lab: VethPair, tmp_path: Path) -> None:
    tx, _rx, rc = run_pair(
        lab,
        tmp_path,
        ["--stamp", "0:4000,2.4:16000", "--ack-delay-ms", "10"],
        ["--mode", "qfcp", "--duration", "4", "--log-interval", "0.25"],
    )
    assert rc == 0
    samples = [r for r in tx if r["type"] == "sample"]
    early = [r["sent_kbps"] for r in samples if 0.5 <= r["t_us"] / 1e6 <= 1.5]
    late = [r["sent_kbps"] for r in samples if 3.0 <= r["t_us"] / 1e6 <= 4.0]
    assert sum(early) / len(early) == pytest.approx(4000, rel=0.05)
    assert sum(late) / len(late) == pytest.approx(16000, rel=0.05)


def test_ack_delay_gives_the_asked_rtt(lab: VethPair, tmp_path: Path) -> None:
    tx, _rx, rc = run_pair(
        lab,
        tmp_path,
        ["--ack-delay-ms", "40"],
        ["--mode", "fixed", "--rate", "2000", "--duration", "2"],
    )
    assert rc == 0
    done = tx[-1]
    assert done["type"] == "done"
    assert 40_000 <= done["min_rtt_us"] <= 41_500
    assert 40_000 <= done["srtt_us"] <= 43_000


def test_losses_are_recovered(lab: VethPair, tmp_path: Path) -> None:
    tx, rx, rc = run_pair(
        lab,
        tmp_path,
        ["--stamp", "0:8000", "--ack-delay-ms", "5", "--drop-every", "20"],
        ["--size", "1M", "--min-rto-ms", "50"],
    )
    assert rc == 0
    done = tx[-1]
    assert done["outcome"] == "completed" and done["acked_bytes"] == 1_000_000
    assert done["retransmissions"] >= 40  # every 20th of ~900 arrivals was dropped
    flows = [r for r in rx if r["type"] == "flow_done"]
    assert flows and flows[0]["unique_bytes"] == 1_000_000
