"""Layered audio, TCP pacing option and the seeded workload."""

from __future__ import annotations

import itertools
import socket

import pytest
from scipy import stats

from fairgate_hosts.apps.audio import LayeredAudio, choose_layer
from fairgate_hosts.apps.tcp_cm import TcpOverCM, get_pacing_rate, set_pacing_rate
from fairgate_hosts.cm.core import CMConfig, CongestionManager
from fairgate_hosts.traffic.workload import Workload


@pytest.mark.parametrize(
    ("kbps", "layer"),
    [(5, 10), (10, 10), (39.9, 20), (40, 40), (159, 80), (321, 320), (10_000, 320)],
)
def test_audio_picks_the_right_layer(kbps: float, layer: int) -> None:
    assert choose_layer(kbps * 1000 / 8) == layer


def test_audio_follows_cm_change_rate() -> None:
    cm = CongestionManager(CMConfig(initial_rate_Bps=25_000, probing=False))
    audio = LayeredAudio()
    f = cm.open("a", "b", change_rate=audio.change_rate)
    assert audio.layer_kbps == 160
    cm.update(f, 0, True, 50_000, 0)  # loss halves: 100 kbit/s
    assert audio.layer_kbps == 80
    cm.open("a", "b")  # a second flow takes half of the macroflow
    assert audio.layer_kbps == 40 and audio.frame_bytes(20) == 100


def test_audio_full_packets_follow_the_layer_rate() -> None:
    """Frames: one per frame interval, sized by the layer; full packets (the paper's 1 KB
    transmissions): one size, spaced so the layer's rate is kept."""
    frames = LayeredAudio(layer_kbps=80)
    assert (frames.frame_bytes(40), frames.gap_us(40)) == (400, 40_000)
    full = LayeredAudio(layer_kbps=80, packet_bytes=1000)
    assert (full.frame_bytes(40), full.gap_us(40)) == (1000, 100_000)
    full.change_rate(20_000)  # 160 kbit/s
    assert (full.frame_bytes(40), full.gap_us(40)) == (1000, 50_000)
    full.change_rate(1_000)  # below every layer: the lowest, 10 kbit/s
    assert full.gap_us(40) == 800_000


def test_tcp_pacing_option() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        assert set_pacing_rate(s, 125_000.7) == 125_000
        assert get_pacing_rate(s) == 125_000


def _free_port_pair() -> int:
    """A port p such that p and p + 1 are both free on loopback right now."""
    while True:
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", 0))
            try:
                b.bind(("127.0.0.1", a.getsockname()[1] + 1))
            except OSError:
                continue
            return int(a.getsockname()[1])


def test_tcp_cm_connects_from_the_given_source_ports() -> None:
    """--sport fixes the 5-tuples (flow i from sport + i), also right after a run that
    used them (its connections still closing); without it the kernel picks."""
    sport = _free_port_pair()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        for _ in range(2):
            app = TcpOverCM("127.0.0.1", srv.getsockname()[1], 2, rate_Bps=0, sport=sport)
            app.connect()
            accepted = [srv.accept()[0] for _ in range(2)]
            assert sorted(c.getpeername()[1] for c in accepted) == [sport, sport + 1]
            for sock in [f.sock for f in app.flows] + accepted:
                sock.close()
        app = TcpOverCM("127.0.0.1", srv.getsockname()[1], 1, rate_Bps=0)
        app.connect()
        srv.accept()[0].close()
        assert app.flows[0].sock.getsockname()[1] not in (sport, sport + 1)
        app.flows[0].sock.close()


def test_workload_is_seeded_and_pareto() -> None:
    a = [f.size_bytes for f in Workload(100, 1.5, 10_000, seed=7).flows(50)]
    b = [f.size_bytes for f in Workload(100, 1.5, 10_000, seed=7).flows(50)]
    assert a == b and 4000 < len(a) < 6000
    w = Workload(100, 1.5, 10_000, seed=3)
    sizes = [w.size() for _ in range(5000)]
    # ceil() shifts by < 1 byte: test against the continuous law with scale x_m
    ks = stats.kstest(sizes, stats.pareto(b=1.5, scale=w.scale_bytes).cdf)
    assert ks.pvalue > 0.01
    bad = stats.kstest(sizes, stats.pareto(b=2.0, scale=w.scale_bytes).cdf)
    assert bad.pvalue < 1e-6


def test_workload_arrivals_are_poisson() -> None:
    starts = [f.start_s for f in Workload(50, seed=11).flows(100)]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert stats.kstest(gaps, stats.expon(scale=1 / 50).cdf).pvalue > 0.01


def test_tcp_cm_sends_segments_of_the_given_mss() -> None:
    """--mss: segments of that many data bytes (kernel TCP's frames then match a file's
    data frame); without it the kernel's own (loopback's MTU: far larger)."""
    from fairgate_hosts.kernel_tcp import kernel_info

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(4)
        for mss, want in ((976, 976), (None, None)):
            app = TcpOverCM("127.0.0.1", srv.getsockname()[1], 1, rate_Bps=0, mss=mss)
            app.connect()
            srv.accept()[0].close()
            info = kernel_info(app.flows[0].sock)
            assert info is not None
            if want is None:
                assert info.snd_mss > 10_000
            else:
                assert info.snd_mss == want
            app.flows[0].sock.close()
