"""Sender and receiver cores over a simulated link."""

from __future__ import annotations

import itertools
import statistics

import pytest
from hosts_sim import Link

from fairgate_hosts.receiver import PROBE_COUNT, ReceiverCore
from fairgate_hosts.sender import Feedback, Mode, SenderConfig, SenderCore, Transmit
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, RateHeader


def stamp(kbps: int, congested: bool = False):
    """A switch that min-stamps ``kbps`` (and maybe the congestion flag) on data."""

    def fwd(data: bytes, now: int) -> bytes:
        hdr = RateHeader.unpack(data)
        hdr.rate_kbps = min(hdr.rate_kbps, kbps)
        if congested:
            hdr.flags |= g.FG_FLAG_CONGESTED
        return hdr.pack() + data[HEADER_BYTES:]

    return fwd


def sent_rate_kbps(link: Link, frame: int, t0: int, t1: int) -> float:
    n = sum(1 for t, _s, _r in link.sent if t0 <= t < t1)
    return n * frame * 8000.0 / (t1 - t0)


def test_codec_round_trip_through_sender_and_receiver() -> None:
    s = SenderCore(SenderConfig(flow_bytes=10_000, desired_rate_kbps=5000))
    act = s.poll(1_000_000)
    assert isinstance(act, Transmit)
    hdr = RateHeader.unpack(act.data)
    assert (hdr.kind, hdr.seq, hdr.ts_us, hdr.rate_kbps) == (g.FG_KIND_DATA, 0, 1_000_000, 5000)
    assert len(act.data) == 1200
    r = ReceiverCore(ack_delay_us=7000)
    (out,) = r.on_datagram(act.data, 1_002_000, ("h", 1))
    assert out.at_us == 1_009_000
    ack = RateHeader.unpack(out.data)
    assert ack.kind == g.FG_KIND_ACK
    assert (ack.seq, ack.ack, ack.ts_echo_us, ack.rate_kbps) == (0, 1, 1_000_000, 5000)
    s.on_datagram(out.data, 1_010_000)
    assert s.rtt.last_us == 10_000
    assert s.snd_una == 1 and s.stats.acked_bytes == 1200 - HEADER_BYTES


def test_flow_completes_and_reports_fct() -> None:
    s = SenderCore(SenderConfig(flow_bytes=200_000, initial_rate_kbps=8000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=stamp(8000))
    link.run(until_us=30_000_000)
    assert s.outcome == "completed"
    assert s.stats.acked_bytes == 200_000
    flow = next(iter(link.receiver.flows.values()))
    assert flow.unique_bytes == 200_000
    # 200 kB at 8 Mbit/s is ~0.21 s of frames plus one RTT
    assert 200_000 < s.completion_time_us < 400_000
    recs = s.drain_log()
    assert recs[0]["type"] == "start" and recs[-1]["type"] == "done"
    assert recs[-1]["fct_us"] == s.completion_time_us


@pytest.mark.parametrize("mode", [Mode.QFCP, Mode.LESTAS])
def test_feedback_changes_sending_rate(mode: Mode) -> None:
    frame = 1242
    cfg = SenderConfig(mode=mode, duration_us=6_000_000, initial_rate_kbps=1000)
    s = SenderCore(cfg)
    rate = {"kbps": 4000}

    def fwd(data: bytes, now: int) -> bytes:
        return stamp(rate["kbps"])(data, now)

    link = Link(s, ReceiverCore(), one_way_us=10_000, forward=fwd)
    link.run(until_us=4_000_000)
    r1 = sent_rate_kbps(link, frame, 2_500_000, 4_000_000)
    rate["kbps"] = 12_000
    link.run(until_us=7_000_000, start_us=4_000_000)
    r2 = sent_rate_kbps(link, frame, 5_500_000, 7_000_000)
    assert r1 == pytest.approx(4000, rel=0.03)
    assert r2 == pytest.approx(12_000, rel=0.03)
    assert s.granted_kbps == 12_000


def test_qfcp_window_is_rate_times_rtt() -> None:
    s = SenderCore(SenderConfig(duration_us=3_000_000))
    link = Link(s, ReceiverCore(ack_delay_us=30_000), one_way_us=10_000, forward=stamp(10_000))
    link.run(until_us=3_000_000)
    # 10 Mbit/s x 50 ms / 1242 B
    assert s.cwnd == pytest.approx(1_250_000 * 0.05 / 1242, rel=0.05)
    assert s.rtt.min_us == 50_000


def test_lestas_gain_is_small_when_congested_and_growing() -> None:
    def run(congested: bool) -> float:
        s = SenderCore(SenderConfig(mode=Mode.LESTAS, duration_us=120_000))
        link = Link(s, ReceiverCore(), one_way_us=10_000, forward=stamp(20_000, congested))
        link.run(until_us=1_120_000)
        return s.cwnd

    free, congested = run(False), run(True)
    target = 2_500_000 * 0.02 / 1242
    assert free == pytest.approx(target, rel=0.1)
    assert congested < 0.5 * free


def test_lestas_window_never_below_one() -> None:
    s = SenderCore(SenderConfig(mode=Mode.LESTAS, duration_us=2_000_000, min_rate_kbps=1))
    link = Link(s, ReceiverCore(), one_way_us=10_000, forward=stamp(1))
    link.run(until_us=3_000_000)
    assert s.cwnd >= 1.0
    assert s.stats.acked_bytes > 0


def test_fixed_mode_ignores_feedback() -> None:
    s = SenderCore(SenderConfig(mode=Mode.FIXED, fixed_rate_kbps=3000, duration_us=2_000_000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=stamp(100))
    link.run(until_us=3_000_000)
    assert sent_rate_kbps(link, 1242, 1_000_000, 3_000_000) == pytest.approx(3000, rel=0.01)


def test_cm_mode_uses_callback() -> None:
    seen: list[Feedback] = []

    def cb(fb: Feedback) -> float:
        seen.append(fb)
        return 2000 * 125.0

    s = SenderCore(SenderConfig(mode=Mode.CM, duration_us=2_000_000), rate_callback=cb)
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=stamp(7000))
    link.run(until_us=3_000_000)
    assert seen and seen[-1].explicit_rate_kbps == 7000 and seen[-1].acked_bytes > 0
    assert sent_rate_kbps(link, 1242, 2_000_000, 3_000_000) == pytest.approx(2000, rel=0.03)
    with pytest.raises(ValueError):
        SenderCore(SenderConfig(mode=Mode.CM, duration_us=1))


@pytest.mark.parametrize("every", [7, 3])
def test_losses_are_recovered(every: int) -> None:
    count = {"n": 0}

    def lossy(data: bytes, now: int) -> bytes | None:
        count["n"] += 1
        return None if count["n"] % every == 0 else stamp(8000)(data, now)

    s = SenderCore(SenderConfig(flow_bytes=300_000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=lossy)
    link.run(until_us=60_000_000)
    assert s.outcome == "completed"
    assert s.stats.retransmissions > 0 and s.stats.losses >= s.stats.retransmissions - 1
    flow = next(iter(link.receiver.flows.values()))
    assert flow.unique_bytes == 300_000


def test_tail_loss_recovered_by_timeout() -> None:
    s = SenderCore(SenderConfig(flow_bytes=5 * 1172, min_rto_us=50_000))
    dropped: set[int] = set()

    def drop_last_once(data: bytes, now: int) -> bytes | None:
        seq = RateHeader.unpack(data).seq
        if seq == 4 and seq not in dropped:
            dropped.add(seq)
            return None
        return data

    link = Link(s, ReceiverCore(), one_way_us=5000, forward=drop_last_once)
    link.run(until_us=10_000_000)
    assert s.outcome == "completed" and s.stats.timeouts >= 1
    assert [r for _t, seq, r in link.sent if r] == [True]


def test_lost_acks_covered_by_cumulative_ack() -> None:
    n = {"k": 0}

    def drop_half(data: bytes, now: int) -> bytes | None:
        n["k"] += 1
        return None if n["k"] % 2 else data

    s = SenderCore(SenderConfig(flow_bytes=100_000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=stamp(8000), backward=drop_half)
    link.run(until_us=20_000_000)
    assert s.outcome == "completed"
    assert s.stats.retransmissions <= 2


def test_malformed_duplicate_and_late_acks_are_harmless() -> None:
    s = SenderCore(SenderConfig(flow_bytes=50_000))
    r = ReceiverCore()
    pkts = []
    now = 1_000_000
    while len(pkts) < 4:
        act = s.poll(now)
        if isinstance(act, Transmit):
            pkts.append(act.data)
        else:
            now = act.until_us
    peer = ("h", 1)
    # the receiver sees 0, 2, 3 and later 1 (reordered)
    acks = {
        i: r.on_datagram(pkts[i], now + 1000 * k, peer)[0].data for k, i in enumerate([0, 2, 3, 1])
    }
    for junk in (b"", b"\x00" * 10, b"\xff" * 28, bytes(28), acks[0][:27]):
        s.on_datagram(junk, now + 9000)
    bogus = RateHeader.unpack(acks[0])
    bogus.ack, bogus.seq = 1000, 999  # acks data never sent
    s.on_datagram(bogus.pack(), now + 9000)
    s.on_datagram(pkts[0], now + 9000)  # a data packet is not an ack
    assert s.stats.acked_bytes == 0 and s.snd_una == 0
    assert s.stats.malformed_acks == 6 and s.stats.ignored_packets == 1
    s.on_datagram(acks[3], now + 10_000)  # acks 3 (and 0 cumulatively)
    assert s.snd_una == 1 and s.stats.acked_bytes == 2 * 1172
    s.on_datagram(acks[3], now + 10_100)  # duplicate
    assert s.stats.duplicate_acks == 1 and s.stats.acked_bytes == 2 * 1172
    srtt = s.rtt.srtt_us
    s.on_datagram(acks[1], now + 11_000)  # newest cumulative ack, oldest echo: late feedback
    assert s.snd_una == 4 and s.stats.acked_bytes == 4 * 1172
    assert s.stats.late_feedback == 1
    assert s.rtt.srtt_us != srtt  # its RTT sample still counts
    s.on_datagram(acks[0], now + 12_000)  # stale cumulative ack
    assert s.stats.duplicate_acks == 2 and s.snd_una == 4


@pytest.mark.parametrize("raw", [0, 1, g.FG_RATE_UNLIMITED, g.FG_RATE_UNLIMITED - 1])
def test_absurd_feedback_is_clamped(raw: int) -> None:
    cfg = SenderConfig(duration_us=1_000_000, min_rate_kbps=64, max_rate_kbps=50_000)
    s = SenderCore(cfg)

    def fwd(data: bytes, now: int) -> bytes:
        hdr = RateHeader.unpack(data)
        hdr.rate_kbps = raw
        return hdr.pack() + data[HEADER_BYTES:]

    link = Link(s, ReceiverCore(), one_way_us=5000, forward=fwd)
    link.run(until_us=2_000_000)
    assert 64 <= s.granted_kbps <= 50_000
    assert 64 * 125 <= s.rate_Bps <= 50_000 * 125
    assert s.stats.acked_bytes > 0  # never stalls
    if raw in (0, 1, g.FG_RATE_UNLIMITED - 1):
        assert s.stats.absurd_rates > 0


def test_unlimited_feedback_uses_desired_rate() -> None:
    s = SenderCore(SenderConfig(duration_us=2_000_000, desired_rate_kbps=3000))
    link = Link(s, ReceiverCore(), one_way_us=5000)
    link.run(until_us=3_000_000)
    assert s.granted_kbps == 3000
    assert sent_rate_kbps(link, 1242, 2_000_000, 3_000_000) == pytest.approx(3000, rel=0.02)


def test_wrapping_sequence_and_timestamps() -> None:
    s = SenderCore(SenderConfig(flow_bytes=100_000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=stamp(8000))
    start = (1 << 32) - 50_000  # the 32-bit wire clock wraps during the flow
    link.run(until_us=start + 5_000_000, start_us=start)
    assert s.outcome == "completed" and s.stats.rtt_rejected == 0
    assert s.rtt.min_us == 10_000


def test_receiver_goodput_reorder_and_duplicates() -> None:
    r = ReceiverCore()
    peer = ("10.0.0.1", 4000)
    for seq, t in [(0, 0), (2, 1000), (1, 2000), (1, 3000), (3, 4000)]:
        pkt = RateHeader(seq=seq, ts_us=t).pack() + bytes(972)
        (a,) = r.on_datagram(pkt, 1_000_000 + t, peer)
    f = r.flows[peer]
    assert RateHeader.unpack(a.data).ack == 4
    assert (f.unique_bytes, f.duplicates, f.out_of_order) == (4 * 972, 1, 1)
    assert f.goodput_kbps() == pytest.approx(4 * 972 * 8000 / 4000)
    assert r.on_datagram(b"junk", 0, peer) == [] and r.stats.malformed == 1
    assert r.expire(1_000_000 + 10_000_000)[0]["unique_bytes"] == 4 * 972


def test_receiver_probe_accounting() -> None:
    r = ReceiverCore()
    peer = ("10.0.0.9", 1)
    r.on_datagram(RateHeader(kind=g.FG_KIND_PROBE, seq=5, ts_us=77).pack(), 10, peer)
    for i in range(3):
        r.on_datagram(RateHeader(seq=i).pack() + bytes(100), 20, ("10.0.0.9", 2))
    (a,) = r.on_datagram(RateHeader(kind=g.FG_KIND_PROBE, seq=7).pack(), 30, peer)
    hdr = RateHeader.unpack(a.data)
    assert (hdr.kind, hdr.seq, hdr.ack) == (g.FG_KIND_PROBE_ACK, 7, 5)
    assert PROBE_COUNT.unpack_from(a.data, HEADER_BYTES)[0] == 300


def test_pacing_gaps_are_even() -> None:
    s = SenderCore(SenderConfig(mode=Mode.FIXED, fixed_rate_kbps=10_000, duration_us=500_000))
    link = Link(s, ReceiverCore(), one_way_us=1000)
    link.run(until_us=2_000_000)
    times = [t for t, _s, _r in link.sent]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert statistics.pstdev(gaps) <= 1.0
    assert statistics.mean(gaps) == pytest.approx(1242 * 8 / 10, abs=1)


def test_receiver_drop_every_and_stamp() -> None:
    r = ReceiverCore(drop_every=3, stamp_kbps=700, stamp_congested=True)
    outs = [r.on_datagram(RateHeader(seq=i).pack(), i, ("h", 1)) for i in range(6)]
    assert [len(o) for o in outs] == [1, 1, 0, 1, 1, 0] and r.stats.dropped == 2
    ack = RateHeader.unpack(outs[0][0].data)
    assert ack.rate_kbps == 700 and ack.congested


def test_rto_leaves_room_above_a_steady_long_rtt() -> None:
    """A steady 300 ms RTT (variance -> 0) must not give an RTO just above it."""
    from fairgate_hosts.rtt import RttEstimator

    est = RttEstimator(min_rto_us=200_000)
    for _ in range(200):
        est.sample(300_000)
    assert est.rto_us >= 300_000 + 200_000
    short = RttEstimator(min_rto_us=200_000)
    for _ in range(50):
        short.sample(1_000)
    assert 200_000 <= short.rto_us <= 205_000
