"""scripts/pcap_jitter.py: a paced flow's gaps against its period, and the uniform
per-packet delay that spreads them as much (the bound j of uniform [0, j])."""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import pcap_jitter  # noqa: E402


@pytest.mark.parametrize("j_ms", [0.5, 2.0])
def test_a_uniform_delay_is_found_again(j_ms: float) -> None:
    rng = random.Random(7)
    times = [k * 0.01 + rng.uniform(0, j_ms / 1e3) for k in range(20000)]
    n = pcap_jitter.noise(times)
    assert n.packets == 20000
    assert n.period_ms == pytest.approx(10.0, abs=0.05 * j_ms)
    assert n.uniform_equivalent_ms == pytest.approx(j_ms, rel=0.05)
    assert n.p1_ms < 0 < n.p99_ms and n.p99_ms < j_ms


def test_a_perfect_pacer_has_no_noise() -> None:
    n = pcap_jitter.noise([k * 0.016 for k in range(100)])
    assert n.sd_ms == pytest.approx(0.0, abs=1e-9) and n.period_ms == pytest.approx(16.0)


def test_too_few_or_unordered_times_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="at least 3"):
        pcap_jitter.noise([0.0, 0.01])
    with pytest.raises(ValueError, match="not in order"):
        pcap_jitter.noise([0.0, 0.02, 0.01])


def test_reads_a_pcap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A pcap written by scapy: 200 UDP frames of 1242 B every 16.5 ms, and 70 B acks
    between them that the size filter leaves out."""
    if shutil.which("tshark") is None:
        pytest.skip("tshark not found (Debian: apt install tshark)")
    from scapy.all import IP, UDP, Ether, Raw, wrpcap

    frames = []
    for k in range(200):
        data = Ether() / IP(src="10.0.1.1", dst="10.0.3.1") / UDP(dport=7471) / Raw(b"x" * 1200)
        data.time = 1000 + k * 0.0165
        ack = Ether() / IP(src="10.0.3.1", dst="10.0.1.1") / UDP(sport=7471) / Raw(b"a" * 28)
        ack.time = data.time + 0.005
        frames += [data, ack]
    pcap = tmp_path / "r1.pcap"
    wrpcap(str(pcap), frames)
    assert pcap_jitter.main([str(pcap)]) == 0
    out = capsys.readouterr().out
    assert "200 packets, period 16.500 ms" in out and "j = 0.00 ms" in out
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a pcap")
    assert pcap_jitter.main([str(bad)]) == 2
    assert "bad.pcap" in capsys.readouterr().err
