"""scripts/pcap_drops.py: which sent packets never arrived, by burst and by resend."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import pcap_drops  # noqa: E402
from pcap_drops import Packet  # noqa: E402


def test_drops_by_gap_and_by_resend() -> None:
    """Flow a: pairs sent back to back every 100 ms, the second of each pair lost; flow b:
    one packet every 50 ms, none lost but a resend of seq 0 that is lost too."""
    sent, got = [], set()
    for k in range(10):
        t = k * 0.1
        sent += [
            Packet(t, "a", 2 * k, 1000 * k),
            Packet(t + 0.0002, "a", 2 * k + 1, 1000 * k + 500),
        ]
        got.add(("a", 2 * k, 1000 * k))
    for k in range(20):
        sent.append(Packet(k * 0.05, "b", k, 100 * k))
        got.add(("b", k, 100 * k))
    sent.append(Packet(1.2, "b", 99, 0))  # a resend of seq 0 (new IP ID), lost
    t = pcap_drops.drops(sent, got, burst_s=0.001)
    a, b = t["a"], t["b"]
    assert (a.sent["all"], a.dropped["all"]) == (20, 10)
    assert (a.sent["burst"], a.dropped["burst"], a.rate("burst")) == (10, 10, 1.0)
    assert (a.sent["spaced"], a.dropped["spaced"]) == (9, 0)  # the first has no gap
    assert (b.sent["all"], b.dropped["all"]) == (21, 1)
    assert (b.sent["resend"], b.dropped["resend"], b.sent["first"]) == (1, 1, 20)
    assert b.rate("burst") is None and b.dropped["first"] == 0


def test_reads_pcaps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("tshark") is None:
        pytest.skip("tshark not found (Debian: apt install tshark)")
    from scapy.all import IP, TCP, Ether, Raw, wrpcap

    tx, rx = [], []
    for k in range(300):
        ip = IP(src="10.0.1.1", dst="10.0.3.1", id=k)
        f = Ether() / ip / TCP(sport=40000, dport=5001, seq=1448 * k, flags="A") / Raw(b"x" * 100)
        f.time = 1000 + k * 0.01
        tx.append(f)
        if k % 10:  # every tenth lost
            g = f.copy()
            g.time = f.time + 0.2
            rx.append(g)
    wrpcap(str(tmp_path / "h1.pcap"), tx)
    wrpcap(str(tmp_path / "r1.pcap"), rx)
    argv = ["--sent", str(tmp_path / "h1.pcap"), "--received", str(tmp_path / "r1.pcap")]
    assert pcap_drops.main([*argv, "--tail", "0.5"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "flow,all,burst,spaced,first,resend"
    # sends judged: from the first arrival (1000.21, k = 21) to the last less the tail
    # (1003.19 - 0.5, k = 269): 249 sent, k = 30, 40, ..., 260 lost
    flow = "10.0.1.1:40000->10.0.3.1:5001"
    assert out[1] == f"{flow},24/249 (9.64 %),-,24/248 (9.68 %),24/249 (9.64 %),-"
    (tmp_path / "bad.pcap").write_bytes(b"not a pcap")
    assert pcap_drops.main(["--sent", str(tmp_path / "bad.pcap"), "--received", argv[3]]) == 2
    assert "bad.pcap" in capsys.readouterr().err
