"""The switch model's per-packet rules against p4src (docs/data-plane.md)."""

from __future__ import annotations

import pytest

from fairgate_controller.telemetry import (
    counter_deltas,
    measure_port,
    queue_buckets,
    rtt_buckets,
)
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
from fairgate_sim.engine import Clock
from fairgate_sim.meter import PacketMeter
from fairgate_sim.packet import TCP, Packet, udp_packet
from fairgate_sim.port import OutputPort, PortParams
from fairgate_sim.switch import SimSwitch, bucket_of

A, B = "10.0.1.1", "10.0.2.1"


def _switch(rate_pps: float = 100.0, depth: int = 8) -> tuple[Clock, SimSwitch, list[Packet]]:
    clock = Clock()
    sw = SimSwitch("s1", clock, queue_buckets(64), rtt_buckets())
    got: list[Packet] = []
    sw.add_port(
        OutputPort(clock, PortParams(rate_pps=rate_pps, depth=depth), 2, deliver=got.append)
    )
    sw.routes = {B: 2}
    return clock, sw, got


def _data(rate_kbps: int = 5000, rtt_us: int = 40_000, kind: int = g.FG_KIND_DATA) -> Packet:
    hdr = RateHeader(kind=kind, rtt_us=rtt_us, rate_kbps=rate_kbps)
    return udp_packet(A, B, 40000, g.FG_UDP_PORT, hdr.pack() + bytes(100))


def test_min_stamp_and_congestion_flag() -> None:
    clock, sw, got = _switch()
    sw.set_feedback(2, 1000, True)
    for rate in (5000, 800):
        sw.receive(_data(rate))
    sw.receive(_data(5000, kind=g.FG_KIND_ACK))  # acks are never stamped
    clock.run(1.0)
    hdrs = [RateHeader.unpack(p.data) for p in got]  # type: ignore[arg-type]
    assert [h.rate_kbps for h in hdrs] == [1000, 800, 5000]
    assert [h.congested for h in hdrs] == [True, True, False]


def test_no_entry_or_zero_rate_stamps_nothing() -> None:
    clock, sw, got = _switch()
    sw.receive(_data(5000))
    clock.run(0.5)
    sw.set_feedback(2, 0, False)
    sw.receive(_data(5000))
    clock.run(1.0)
    assert [RateHeader.unpack(p.data).rate_kbps for p in got] == [5000, 5000]  # type: ignore[arg-type]


def test_egress_uses_the_table_in_force_when_the_packet_leaves() -> None:
    clock, sw, got = _switch(rate_pps=10.0)
    sw.set_feedback(2, 3000, False)
    for _ in range(3):  # leave the queue at 0, 0.1, 0.2 s
        sw.receive(_data(5000))
    clock.run(0.15)
    sw.set_feedback(2, 2000, False)
    clock.run(1.0)
    assert [RateHeader.unpack(p.data).rate_kbps for p in got] == [3000, 3000, 2000]  # type: ignore[arg-type]


def test_drop_tail_counters_and_histograms_feed_measure_port() -> None:
    clock, sw, _got = _switch(rate_pps=100.0, depth=8)
    before = sw.snapshot()
    for _ in range(20):
        sw.receive(_data(5000, rtt_us=40_000))
    clock.run(1.0)
    delta, reset = counter_deltas(before, sw.snapshot())
    assert not reset
    frame = 28 + 100 + 42
    m = measure_port(delta, 2, 1.0, 100.0 * frame, sw.qbuckets, sw.rbuckets)
    # 1 leaves at once, 8 wait (enq_qdepth 0, 0, 1 .. 7), 11 dropped:
    # drops = arrivals - departures, as on BMv2
    assert (m.arrival_pkts, m.departure_pkts, m.drop_pkts) == (20, 9, 11)
    assert m.queue_min_bytes == 0.0
    assert m.queue_mean_bytes == pytest.approx(sum(range(8)) / 9 * frame)
    assert m.rtt_mean_s == pytest.approx(0.04, rel=0.15)


def test_bucket_lookup_is_the_range_table() -> None:
    qb = queue_buckets(64)
    assert [bucket_of(qb.bounds, v) for v in (0, 5, 15, 16, 19, 20)] == [0, 5, 15, 16, 16, 17]
    assert bucket_of(qb.bounds, 10_000) == g.FG_HIST_BUCKETS - 1


def _syn(flags: int = g.TCP_FLAG_SYN) -> Packet:
    return Packet(A, B, 40000, 5001, 54, TCP, None, flags)


def test_syn_gating_meter_and_session_events() -> None:
    clock, sw, got = _switch(rate_pps=10_000.0, depth=1000)
    sw.admission = {2}
    sw.set_meter(2, 100.0, 5)
    t = 0.0
    for _ in range(1000):  # 1000 SYNs/s for 1 s against a 100/s meter
        clock.at(t, sw.receive, _syn())
        t += 0.001
    clock.at(0.5, sw.receive, _syn(g.TCP_FLAG_SYN | g.TCP_FLAG_ACK))  # SYN-ACK: never gated
    clock.at(0.5, sw.receive, _syn(g.TCP_FLAG_FIN | g.TCP_FLAG_ACK))
    clock.at(0.5, sw.receive, _syn(g.TCP_FLAG_SYN | g.TCP_FLAG_FIN))  # refused
    clock.run(1.0)
    ev = sw.events
    base = 2 << g.FG_SESSION_EVENT_BITS
    admitted = ev[base | g.FG_EVENT_SYN_ADMITTED]
    assert 100 <= admitted <= 106  # 100/s plus the burst of 5
    assert admitted + ev[base | g.FG_EVENT_SYN_DROPPED] == 1000
    assert ev[base | g.FG_EVENT_FIN] == 1
    assert ev[base | g.FG_EVENT_SYNACK] == 1  # counted (strategy 2's admissions), not gated
    assert len(got) == admitted + 2


def test_fin_filter_counts_a_retransmitted_fin_as_a_repeat() -> None:
    """admission.p4's FIN filter, as the simulator keeps it: a FIN whose flow's slot
    holds its sequence number is a repeat; another flow's FIN, or the same flow's FIN at
    another sequence number, is a first copy. (The simulator's ports are connection
    numbers, beyond 16 bits.)"""
    clock, sw, got = _switch(rate_pps=10_000.0, depth=100)

    def fin(sport: int, seq: int) -> Packet:
        pkt = Packet(A, B, sport, 5001, 54, TCP, None, g.TCP_FLAG_FIN | g.TCP_FLAG_ACK)
        pkt.seq = seq
        return pkt

    for i, (sport, seq) in enumerate([(70000, 900), (70000, 900), (70001, 900), (70000, 901)]):
        clock.at(0.01 * i, sw.receive, fin(sport, seq))
    clock.run(1.0)
    base = 2 << g.FG_SESSION_EVENT_BITS
    assert sw.events[base | g.FG_EVENT_FIN] == 3
    assert sw.events[base | g.FG_EVENT_FIN_REPEAT] == 1
    assert len(got) == 4  # counted, never dropped


def test_unconfigured_meter_is_green() -> None:
    m = PacketMeter()
    assert all(m.execute(i * 1e-6) == g.FG_METER_GREEN for i in range(100))
