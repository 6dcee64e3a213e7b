"""The simulator's TCP model, deterministically: slow start doubles per RTT, a loss
halves the window and congestion avoidance adds one segment per RTT, timeouts back off
exponentially, SYN retries follow Linux's schedule, flows complete over lossy links,
SYNs/FINs meet the switch's gate and session counters, and SACK (on by default, as on
Linux) repairs a window's holes in one round without resending SACKed data."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from fairgate_hosts.rtt import RttEstimator
from fairgate_p4 import generated as g
from fairgate_sim.engine import Clock
from fairgate_sim.network import Network
from fairgate_sim.packet import TCP, Packet
from fairgate_sim.tcp import SYN, TcpConfig, TcpFlow, TcpServer, timer_wheel_expiry
from fairgate_sim.tcp_cm import CmTcpFlow
from fairgate_sim.topo import NetBuilder

RTT = 0.1
FAST = 125e6  # 1 Gbit/s: no queueing in these tests


def _net(rate_Bps: float = FAST, one_way_s: float = RTT / 2, depth: int = 64) -> Network:
    """Client c and server s on one switch; each access link has half the one-way delay."""
    b = NetBuilder()
    s1 = b.add_switch("s1")
    b.add_host("c", s1, rate_Bps, delay_s=one_way_s / 2, depth=depth)
    b.add_host("s", s1, rate_Bps, delay_s=one_way_s / 2, depth=depth)
    return Network(b.build())


def _filter(net: Network, host: str, port: int, drop: Callable[[Packet], bool]) -> None:
    """Packets for ``host:port`` pass ``drop`` first (True: lost)."""
    inner = net.hosts[host].handlers[port]

    def handler(pkt: Packet) -> None:
        if not drop(pkt):
            inner(pkt)

    net.hosts[host].handlers[port] = handler


def _blackhole_data(net: Network) -> list[float]:
    """Lose every data segment to ``s:5001``; the returned list gets the time of each
    (re)transmission of the first one, so its gaps are the RTOs."""
    tries: list[float] = []

    def blackhole(pkt: Packet) -> bool:
        if pkt.length and pkt.seq == 0:
            tries.append(net.clock.now)
        return bool(pkt.length)

    _filter(net, "s", 5001, blackhole)
    return tries


def _flow(net: Network, size: int, cfg: TcpConfig | None = None) -> tuple[TcpFlow, TcpServer]:
    server = TcpServer(net.clock, net.hosts["s"])
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), size, cfg or TcpConfig())
    flow.start()
    return flow, server


def _data_arrivals(net: Network, log: list[tuple[float, int]]) -> Callable[[Packet], bool]:
    def seen(pkt: Packet) -> bool:
        if pkt.length:
            log.append((net.clock.now, pkt.seq))
        return False

    return seen


def test_slow_start_doubles_per_rtt() -> None:
    net = _net()
    cfg = TcpConfig()
    flow, server = _flow(net, 1000 * cfg.mss, cfg)
    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    net.run(3.0)
    assert flow.outcome == "completed"
    assert server.stats.bytes == 1000 * cfg.mss
    first = log[0][0]  # handshake (1 RTT) + one way, then a flight per RTT
    assert first == pytest.approx(1.5 * RTT, abs=0.002)
    rounds = [0] * 6
    for t, _seq in log:
        k = int((t - first + RTT / 2) // RTT)
        if k < len(rounds):
            rounds[k] += 1
    assert rounds == [10, 20, 40, 80, 160, 320]
    assert flow.retransmits == 0 and flow.timeouts == 0
    # Handshake, then 10+20+...+320 = 630 segments in 6 RTTs; the other 370 and the FIN
    # go in the 7th flight, whose acks bring the server's FIN: 8 RTTs.
    assert flow.fct_s == pytest.approx(RTT * 8, abs=0.01)


def _on_recovery_exit(flow: TcpFlow) -> list[tuple[float, float, int, int]]:
    """(cwnd, flight, una, recover) right after each ack that ends a recovery."""
    exits: list[tuple[float, float, int, int]] = []
    inner = flow._on_ack

    def on_ack(a: int, dup_ok: bool) -> None:
        was = flow.in_recovery
        recover = flow.recover
        inner(a, dup_ok)
        if was and not flow.in_recovery:
            exits.append((flow.cwnd, flow.high - flow.una, flow.una, recover))

    flow._on_ack = on_ack  # type: ignore[method-assign]
    return exits


@pytest.mark.parametrize("sack", [False, True])
def test_one_loss_halves_the_window_then_one_segment_per_rtt(sack: bool) -> None:
    """The same Reno response with and without SACK: ssthresh = half the window at the
    third duplicate ack (with SACK the segments limited transmit sent past cwnd do not
    count), cwnd = ssthresh when the ack of the recovery point ends recovery, then +1
    segment per RTT. With SACK, PRR has brought the flight to ssthresh by then."""
    net = _net()
    cfg = TcpConfig(init_cwnd=2, sack=sack)
    flow, server = _flow(net, 400 * cfg.mss, cfg)
    exits = _on_recovery_exit(flow)
    lost = {100 * cfg.mss}

    def drop_once(pkt: Packet) -> bool:
        if pkt.length and pkt.seq in lost:
            lost.discard(pkt.seq)
            return True
        return False

    _filter(net, "s", 5001, drop_once)
    trace: list[tuple[float, float, bool, int]] = []

    def sample() -> None:
        trace.append((net.clock.now, flow.cwnd, flow.in_recovery, flow.nxt - flow.una))
        net.clock.after(0.001, sample)

    net.clock.at(0.0, sample)
    net.run(8.0)
    assert flow.outcome == "completed" and flow.sack_on == sack
    assert server.stats.bytes == 400 * cfg.mss
    assert flow.fast_retransmits == 1 and flow.timeouts == 0 and flow.retransmits == 1
    # Slow start from 2: flights of 2, 4, ..., 32, then 64 (segments 62-125). The acks
    # of 62-99 grow the window (and the flight) to 64 + 38 = 102 before the third
    # duplicate ack: ssthresh = 102 / 2.
    assert flow.ssthresh == 51.0
    start = next(i for i, s in enumerate(trace) if s[2])
    assert trace[start - 1][1] >= 64  # in the 64-segment flight just before
    end = next(i for i in range(start, len(trace)) if not trace[i][2])
    ((cwnd, flight, una, recover),) = exits
    assert cwnd == 51.0 and una >= recover  # deflated to ssthresh at the recovery point
    if sack:
        assert flight == pytest.approx(51, abs=1)
    # Congestion avoidance: +1 segment per RTT (acks for ~cwnd segments per RTT).
    t0, w0 = trace[end][0], 51.0
    later = next(s for s in trace if s[0] >= t0 + 4 * RTT)
    assert later[1] - w0 == pytest.approx(4.0, abs=0.6)


def test_rto_backs_off_exponentially_and_gives_up() -> None:
    net = _net()
    cfg = TcpConfig(data_retries=4)
    flow, _server = _flow(net, 10 * cfg.mss, cfg)
    tries = _blackhole_data(net)
    net.run(60.0)
    # SYN-ACK sample R = 0.1 s: RTO = R + max(4 * R/2, 0.2) = 0.3 s, then 0.6, 1.2, ...
    gaps = [round(b - a, 6) for a, b in zip(tries, tries[1:], strict=False)]
    assert gaps == pytest.approx([0.3, 0.6, 1.2, 2.4], abs=1e-4)
    assert flow.outcome == "timeout" and flow.timeouts == 5
    # Sent one way earlier than seen; the fifth timeout (4.8 s) gives up.
    assert flow.end_s == pytest.approx(tries[-1] - RTT / 2 + 4.8, abs=1e-3)


def test_syn_retries_follow_linux_schedule() -> None:
    net = _net()
    cfg = TcpConfig(syn_retries=3)
    flow, server = _flow(net, 5000, cfg)
    syns: list[float] = []

    def drop_syns(pkt: Packet) -> bool:
        if pkt.tcp_flags & SYN:
            syns.append(net.clock.now)
            return True
        return False

    _filter(net, "s", 5001, drop_syns)
    net.run(30.0)
    d = RTT / 2
    assert syns == pytest.approx([d, 1 + d, 3 + d, 7 + d], abs=1e-4)
    assert flow.outcome == "timeout" and flow.phase == "done"
    assert flow.syn_attempts == 4 and flow.end_s == pytest.approx(15.0)
    assert server.stats.connections == 0


def test_syn_retry_then_connect_starts_at_one_segment() -> None:
    net = _net()
    flow, _server = _flow(net, 20 * 1448)
    dropped = [0]

    def drop_two(pkt: Packet) -> bool:
        if pkt.tcp_flags & SYN and dropped[0] < 2:
            dropped[0] += 1
            return True
        return False

    _filter(net, "s", 5001, drop_two)
    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    net.run(10.0)
    assert flow.syn_attempts == 3
    assert flow.connect_s == pytest.approx(3.0 + RTT, abs=1e-4)
    first = [t for t, _ in log if t < log[0][0] + RTT / 2]
    assert len(first) == 1  # IW = 1 after a lost SYN (RFC 5681)
    assert flow.outcome == "completed"


def test_one_syn_retry_keeps_the_initial_window_of_ten() -> None:
    # Linux (tcp_init_transfer) cuts IW to 1 only after more than one SYN retransmission
    net = _net()
    flow, _server = _flow(net, 20 * 1448)
    dropped = [0]

    def drop_one(pkt: Packet) -> bool:
        if pkt.tcp_flags & SYN and not dropped[0]:
            dropped[0] = 1
            return True
        return False

    _filter(net, "s", 5001, drop_one)
    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    net.run(10.0)
    assert flow.syn_attempts == 2
    first = [t for t, _ in log if t < log[0][0] + RTT / 2]
    assert len(first) == 10
    assert flow.outcome == "completed"


def test_timer_wheel_rounds_up_to_the_level_granularity() -> None:
    # HZ 250 (4 ms jiffies): level 0 below 63 jiffies (1 jiffy), level 1 below 504 (8),
    # level 2 below 4032 (64); always after the deadline, at the end of its bucket
    assert timer_wheel_expiry(0.0, 0.2, 250) == pytest.approx(0.204)  # 50 j -> 51
    assert timer_wheel_expiry(0.0, 1.0, 250) == pytest.approx(1.024)  # 250 j -> 256
    assert timer_wheel_expiry(0.0, 4.0, 250) == pytest.approx(4.096)  # 1000 j -> 1024
    # two timers armed 20 ms apart for 1 s share a bucket: they fire together
    assert timer_wheel_expiry(0.0, 1.0, 250) == timer_wheel_expiry(0.02, 1.02, 250)
    for now, delay in ((0.0, 0.3), (0.123, 0.61), (5.0, 3.0), (1.0, 17.0)):
        t = timer_wheel_expiry(now, now + delay, 250)
        assert now + delay < t <= now + delay * 1.13 + 0.004


def test_syn_retries_on_the_timer_wheel() -> None:
    net = _net()
    cfg = TcpConfig(syn_retries=3, kernel_hz=250)
    flow, server = _flow(net, 5000, cfg)
    syns: list[float] = []

    def drop_syns(pkt: Packet) -> bool:
        if pkt.tcp_flags & SYN:
            syns.append(net.clock.now)
            return True
        return False

    _filter(net, "s", 5001, drop_syns)
    net.run(30.0)
    d = RTT / 2
    # 1 s -> 256 jiffies; +2 s -> 760; +4 s -> 1792 (level 2); give up +8 s -> 3840
    assert syns == pytest.approx([d, 1.024 + d, 3.04 + d, 7.168 + d], abs=1e-4)
    assert flow.outcome == "timeout" and flow.end_s == pytest.approx(15.36)
    assert server.stats.connections == 0


def test_jitter_delays_each_packet_in_order() -> None:
    net = _net()
    cfg = TcpConfig(jitter_s=0.01)
    server = TcpServer(net.clock, net.hosts["s"])
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 50 * 1448, cfg, rng=random.Random(3))
    flow.start()
    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    net.run(5.0)
    assert flow.outcome == "completed" and server.stats.bytes == 50 * 1448
    seqs = [seq for _, seq in log]
    assert seqs == sorted(seqs) and flow.retransmits == 0  # in order, nothing lost
    # the first flight: 1.5 RTTs plus the SYN's and its own jitter (each <= 10 ms)
    first = [t for t, _ in log[:10]]
    assert min(first) > 1.5 * RTT and max(first) <= 1.5 * RTT + 0.02 + 1e-6
    assert max(first) - min(first) > 0.001  # spread, not one burst
    with pytest.raises(ValueError, match="rng"):
        TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 1000, cfg).start()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_flow_completes_over_a_lossy_path(seed: int) -> None:
    net = _net()
    rng = random.Random(seed)
    flow, server = _flow(net, 300 * 1448)
    lossy = lambda _pkt: rng.random() < 0.05  # noqa: E731
    _filter(net, "s", 5001, lossy)
    _filter(net, "c", flow.sport, lossy)  # acks, SYN-ACK and FIN+ACK too
    net.run(200.0)
    assert flow.outcome == "completed"
    assert server.stats.bytes == 300 * 1448
    assert flow.retransmits > 0
    assert flow.fct_s is not None and flow.fct_s > 0


def test_drop_tail_bottleneck_shares_and_completes() -> None:
    """Ten flows through a 1 Mbit/s port with 10 packets of buffer: every byte arrives."""
    b = NetBuilder()
    s1, s2 = b.add_switch("s1"), b.add_switch("s2")
    b.add_link(s1, s2, 125e3, depth=10, reverse_Bps=FAST, delay_s=0.02)
    b.add_host("c", s1, FAST)
    b.add_host("s", s2, FAST)
    net = Network(b.build())
    server = TcpServer(net.clock, net.hosts["s"])
    flows = [TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 50 * 1448) for _ in range(10)]
    for f in flows:
        f.start()
    net.run(60.0)
    assert all(f.outcome == "completed" for f in flows)
    assert server.stats.bytes == 10 * 50 * 1448
    assert net.switches["s1"].ports[1].stats.dropped > 0
    assert sum(f.retransmits for f in flows) > 0


def test_syns_and_fins_meet_the_gate_and_session_counters() -> None:
    b = NetBuilder()
    s1, s2 = b.add_switch("s1"), b.add_switch("s2")
    gated, _ = b.add_link(s1, s2, 1.25e6, reverse_Bps=FAST, admission=True)
    client_port = b.add_host("c", s1, FAST)
    b.add_host("s", s2, FAST)
    net = Network(b.build())
    sw = net.switches["s1"]
    sw.admission = {gated}
    sw.set_meter(gated, 1.0, 1)  # one SYN per second, burst 1
    TcpServer(net.clock, net.hosts["s"])
    cfg = TcpConfig(syn_retries=0)
    flows = [TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 3000, cfg) for _ in range(3)]
    for f in flows:
        f.start()
    net.run(5.0)
    done = [f for f in flows if f.outcome == "completed"]
    assert len(done) == 1 and sum(f.outcome == "timeout" for f in flows) == 2
    bits = g.FG_SESSION_EVENT_BITS

    def events(port: int, ev: int) -> int:
        return sw.events[port << bits | ev]

    assert events(gated, g.FG_EVENT_SYN_ADMITTED) == 1
    assert events(gated, g.FG_EVENT_SYN_DROPPED) == 2
    assert events(gated, g.FG_EVENT_FIN) == 1  # the client's FIN
    assert events(client_port, g.FG_EVENT_FIN) == 1  # the server's, on the reverse path
    # the one handshake the server accepted: its SYN-ACK, on the reverse path only
    assert events(client_port, g.FG_EVENT_SYNACK) == 1
    assert events(gated, g.FG_EVENT_SYNACK) == 0
    assert sw.stats.syn_red == 2


def _rounds(log: list[tuple[float, int]], n: int) -> list[int]:
    """Data segments arriving per RTT, from the first one."""
    first = log[0][0]
    rounds = [0] * n
    for t, _seq in log:
        k = int((t - first + RTT / 2) // RTT)
        if k < n:
            rounds[k] += 1
    return rounds


def test_receive_window_limits_the_flight() -> None:
    """A receiver advertising 8 segments' worth keeps slow start at 8 per RTT (IW10 is
    cut to 8); the window scale follows RFC 7323 (unscaled in the SYN-ACK)."""
    net = _net()
    cfg = TcpConfig()
    server = TcpServer(net.clock, net.hosts["s"], rwnd_bytes=8 * cfg.mss)
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 100 * cfg.mss, cfg)
    flow.start()
    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    net.run(3.0)
    assert flow.outcome == "completed" and server.stats.bytes == 100 * cfg.mss
    assert _rounds(log, 5) == [8, 8, 8, 8, 8]
    assert flow.snd_wscale == 0 and flow.snd_wnd == 8 * cfg.mss
    assert flow.window_limited > 0 and flow.cwnd > 8


def test_window_scale_is_negotiated() -> None:
    """1 MiB needs shift 5; the SYN-ACK's window is unscaled (65535), later ones are
    shifted; a SYN without the option gets no option back and unscaled windows."""
    net = _net()
    server = TcpServer(net.clock, net.hosts["s"], rwnd_bytes=1 << 20)
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 50 * 1448)
    seen: list[tuple[int, int, int | None]] = []

    def record(pkt: Packet) -> bool:
        seen.append((pkt.tcp_flags, pkt.window, pkt.wscale))
        return False

    flow.start()
    _filter(net, "c", flow.sport, record)
    net.run(2.0)
    assert flow.outcome == "completed"
    assert seen[0] == (SYN | g.TCP_FLAG_ACK, 65535, 5)
    assert all(w == (1 << 20) >> 5 and ws is None for _f, w, ws in seen[1:])
    assert flow.snd_wscale == 5 and flow.snd_wnd == 1 << 20
    # a bare SYN without the option, its answer caught at the client's port 1234 (not
    # by patching the host's send: a compiled SimHost's methods are read-only)
    syn = Packet(net.ip("c"), net.ip("s"), 1234, 5001, 66, TCP, tcp_flags=SYN)
    replies: list[Packet] = []
    net.hosts["c"].bind(replies.append, 1234)
    server.on_packet(syn)
    net.run(3.0)
    assert replies and replies[0].tcp_flags == SYN | g.TCP_FLAG_ACK
    assert replies[0].wscale is None and replies[0].window == 65535


def test_lowered_window_on_acks_limits_the_sender() -> None:
    """What FICCRD does: a window lowered on the ACKs (here to 3 segments' bytes, in
    units of the negotiated shift) holds the sender to it whatever its cwnd."""
    net = _net()
    cfg = TcpConfig()
    server = TcpServer(net.clock, net.hosts["s"])
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 60 * cfg.mss, cfg)
    shift = server.shift
    assert shift == 7  # 6 MiB, Linux's tcp_rmem maximum

    def lower(pkt: Packet) -> bool:
        if not pkt.tcp_flags & SYN:
            pkt.window = min(pkt.window, (3 * cfg.mss) >> shift)
        return False

    log: list[tuple[float, int]] = []
    _filter(net, "s", 5001, _data_arrivals(net, log))
    flow.start()
    _filter(net, "c", flow.sport, lower)
    net.run(5.0)
    assert flow.outcome == "completed"
    # IW10 leaves before the first lowered ack; then (3 x 1448) >> 7 << 7 = 4224 B, two
    # whole segments, per RTT
    assert _rounds(log, 6) == [10, 2, 2, 2, 2, 2]
    assert flow.snd_wnd == 4224


# ---- the Linux rules the model states (sim/fairgate_sim/tcp.py's module doc) ----------


def _nth_copies(net: Network, seq: int, drop: set[int], log: list[float]) -> Callable:
    """Data segment ``seq``: its n-th copy (0-based) is lost when n is in ``drop``; the
    arrival times of the copies that get through go to ``log``."""
    seen = [0]

    def f(pkt: Packet) -> bool:
        if not pkt.length or pkt.seq != seq:
            return False
        n = seen[0]
        seen[0] += 1
        if n in drop:
            return True
        log.append(net.clock.now)
        return False

    return f


@pytest.mark.parametrize("timestamps", [True, False])
def test_rto_back_off_ends_only_with_a_valid_rtt_sample(timestamps: bool) -> None:
    """Linux (tcp_ack_update_rtt) clears the RTO back-off only on a valid RTT sample.
    Segment 0 is lost twice (RTO 0.3 s, then 0.6 s: back-off 2); meanwhile the path's
    RTT grows by 0.5 s; its third copy (sent at 1.0 s) is acked at 1.6 s, an ack of
    retransmitted data only. With timestamps the echo gives a sample of 0.6 s (sRTT
    0.1625, RTTVAR 0.1625: RTO 0.8125 s, back-off 0); without them Karn's rule gives
    none and the RTO stays backed off (4 x 0.3 s). Segment 1, first sent on that ack and
    lost, is resent when that RTO fires. (Resetting the back-off on any new ack without a
    sample, as the model once did, resends it after 0.3 s in both cases.)"""
    net = _net()
    cfg = TcpConfig(init_cwnd=1, timestamps=timestamps)
    flow, server = _flow(net, 3 * cfg.mss, cfg)
    net.clock.at(0.5, setattr, server, "hold_s", 0.5)
    seg0: list[float] = []
    seg1: list[float] = []
    _filter(net, "s", 5001, _nth_copies(net, 0, {0, 1}, seg0))
    _filter(net, "s", 5001, _nth_copies(net, cfg.mss, {0}, seg1))
    net.run(10.0)
    assert flow.outcome == "completed" and flow.timeouts == 3
    d = RTT / 2
    assert seg0 == pytest.approx([1.0 + d], abs=1e-3)
    rto = 0.8125 if timestamps else 4 * 0.3
    assert seg1 == pytest.approx([1.6 + rto + d], abs=1e-3)


def test_timestamps_echo_the_last_in_sequence_segment() -> None:
    """RFC 7323 TS.Recent as Linux keeps it: the dup acks of segments after a hole echo
    the last in-sequence segment's TSval; the ack of the retransmission that fills the
    hole echoes the retransmission's own TSval (so its RTT is measured, not Karn-skipped)."""
    net = _net()
    cfg = TcpConfig()
    flow, _server = _flow(net, 10 * cfg.mss, cfg)
    sent: dict[int, list[float]] = {}

    def stamp(pkt: Packet) -> bool:
        if pkt.length:
            assert pkt.tsval is not None
            sent.setdefault(pkt.seq, []).append(pkt.tsval)
        return False

    lost = [5 * cfg.mss]

    def drop_once(pkt: Packet) -> bool:
        if pkt.length and pkt.seq in lost:
            lost.remove(pkt.seq)
            return True
        return False

    acks: list[tuple[int, float | None]] = []

    def ack_seen(pkt: Packet) -> bool:
        if not pkt.tcp_flags & SYN:
            acks.append((pkt.ack, pkt.tsecr))
        return False

    _filter(net, "s", 5001, drop_once)
    _filter(net, "s", 5001, stamp)  # outside: sees the lost copy too
    _filter(net, "c", flow.sport, ack_seen)
    net.run(5.0)
    assert flow.outcome == "completed" and flow.fast_retransmits == 1
    m = cfg.mss
    # the ack of segment 4, then the dup acks of 6-9 and of the FIN sent in recovery
    dups = [e for a, e in acks if a == 5 * m]
    assert len(dups) == 6 and all(e == sent[4 * m][0] for e in dups)
    assert len(sent[5 * m]) == 2
    filled = next(e for a, e in acks if a > 5 * m)
    assert filled == sent[5 * m][1]


def test_min_rto_floors_the_variance_term() -> None:
    """Linux: RTO = SRTT + max(4 RTTVAR, tcp_rto_min = 200 ms) (tcp_set_rto with
    rttvar_us >= tcp_rto_min). A 10 ms path: 10 + max(20, 200) = 210 ms, not 200 ms (a
    floor on the sum), not 30 ms (RFC 6298's 1 s floor is Linux's initial RTO only)."""
    rtt = 0.01
    net = _net(one_way_s=rtt / 2)
    cfg = TcpConfig(data_retries=2)
    _flow(net, 10 * cfg.mss, cfg)
    tries = _blackhole_data(net)
    net.run(10.0)
    assert [round(b - a, 6) for a, b in zip(tries, tries[1:], strict=False)] == pytest.approx(
        [0.21, 0.42], abs=1e-4
    )


@pytest.mark.parametrize(("timestamps", "rto"), [(False, 3.0), (True, 0.3)])
def test_retransmitted_syn_without_timestamps_starts_the_data_rto_at_3_s(
    timestamps: bool, rto: float
) -> None:
    """Without timestamps a SYN-ACK answering a retransmitted SYN gives no RTT sample
    (Karn), and Linux's tcp_init_metrics (RFC 6298 5.7) sets the RTO to 3 s; with them
    the echo times the SYN that was answered: 0.1 s, RTO 0.3 s."""
    net = _net()
    cfg = TcpConfig(timestamps=timestamps)
    flow, _server = _flow(net, 1000, cfg)  # one segment and the FIN: no fast retransmit
    syns = [0]
    tries: list[float] = []

    def lossy(pkt: Packet) -> bool:
        if pkt.tcp_flags & SYN:
            syns[0] += 1
            return syns[0] == 1  # the first SYN is lost
        if pkt.length:
            tries.append(net.clock.now)
            return len(tries) == 1  # and the first copy of the data
        return False

    _filter(net, "s", 5001, lossy)
    net.run(10.0)
    assert flow.syn_attempts == 2 and flow.outcome == "completed"
    assert flow.connect_s == pytest.approx(1.0 + RTT, abs=1e-4)
    assert flow.timeouts == 1 and len(tries) == 2
    assert tries[1] - tries[0] == pytest.approx(rto, abs=1e-4)


def test_no_delayed_acks_one_ack_per_segment() -> None:
    """The server acks every data segment at once (Linux's quick-ack mode, which covers
    the first 16 segments; Linux then acks every second full segment or after 40 ms: not
    modelled). 100 segments, no loss: 100 pure acks, then the FIN+ACK."""
    net = _net()
    cfg = TcpConfig()
    flow, _server = _flow(net, 100 * cfg.mss, cfg)
    kinds: list[int] = []

    def seen(pkt: Packet) -> bool:
        kinds.append(pkt.tcp_flags)
        return False

    _filter(net, "c", flow.sport, seen)
    net.run(5.0)
    assert flow.outcome == "completed" and flow.retransmits == 0
    ack_only = g.TCP_FLAG_ACK
    assert kinds.count(ack_only) == 100
    assert kinds[-1] == g.TCP_FLAG_FIN | g.TCP_FLAG_ACK and len(kinds) == 102  # + SYN-ACK


def test_no_sack_newreno_repairs_one_hole_per_rtt() -> None:
    """No SACK (``sack=False``): acks are cumulative only, so two holes in one window are
    repaired one RTT apart (fast retransmit, then the NewReno partial ack names the
    second hole); with SACK see test_sack_repairs_two_holes_in_one_round."""
    net = _net()
    cfg = TcpConfig(sack=False)
    flow, _server = _flow(net, 40 * cfg.mss, cfg)
    m = cfg.mss
    resend: dict[int, list[float]] = {2 * m: [], 6 * m: []}
    lost = {2 * m, 6 * m}

    def f(pkt: Packet) -> bool:
        if pkt.length and pkt.seq in resend:
            if pkt.seq in lost:
                lost.discard(pkt.seq)
                return True
            resend[pkt.seq].append(net.clock.now)
        return False

    _filter(net, "s", 5001, f)
    net.run(5.0)
    assert flow.outcome == "completed"
    assert flow.fast_retransmits == 1 and flow.timeouts == 0 and flow.retransmits == 2
    (a,), (b,) = resend[2 * m], resend[6 * m]
    assert b - a == pytest.approx(RTT, abs=1e-3)


def test_server_ts_recent_follows_linux() -> None:
    """The server's echo, packet by packet: the SYN's TSval on the SYN-ACK; an in-order
    segment's; the last in-order one for a segment past a hole; a duplicate's that ends
    at the next expected byte (tcp_sequence accepts end_seq == rcv_wup); the hole's
    filler's; not an older duplicate's (dropped by tcp_sequence before
    tcp_replace_ts_recent)."""
    net = _net()
    server = TcpServer(net.clock, net.hosts["s"])
    c, s = net.ip("c"), net.ip("s")
    replies: list[Packet] = []
    net.hosts["c"].bind(replies.append, 1234)

    def send(flags: int, seq: int, length: int, tsval: float) -> tuple[int, float | None]:
        pkt = Packet(c, s, 1234, 5001, 66 + length, TCP, tcp_flags=flags, seq=seq, ack=1)
        pkt.length, pkt.tsval = length, tsval
        server.on_packet(pkt)
        net.run(net.clock.now + 1.0)
        return replies[-1].ack, replies[-1].tsecr

    assert send(SYN, 0, 0, 1.0) == (1, 1.0)
    assert send(g.TCP_FLAG_ACK, 0, 100, 2.0) == (100, 2.0)
    assert send(g.TCP_FLAG_ACK, 200, 100, 3.0) == (100, 2.0)  # out of order
    assert send(g.TCP_FLAG_ACK, 0, 100, 4.0) == (100, 4.0)  # duplicate, ends at rcv_nxt
    assert send(g.TCP_FLAG_ACK, 100, 100, 5.0) == (300, 5.0)  # fills the hole
    assert send(g.TCP_FLAG_ACK, 0, 100, 6.0) == (300, 5.0)  # older duplicate


def _drop_first_copies(net: Network, segs: set[int], mss: int) -> dict[int, list[float]]:
    """Lose the first copy of each segment index in ``segs``; the returned dict gets the
    arrival time of every later copy at the server."""
    copies: dict[int, list[float]] = {i: [] for i in segs}
    lost = set(segs)

    def f(pkt: Packet) -> bool:
        i = pkt.seq // mss
        if pkt.length and i in copies:
            if i in lost:
                lost.discard(i)
                return True
            copies[i].append(net.clock.now)
        return False

    _filter(net, "s", 5001, f)
    return copies


@pytest.mark.parametrize(("sack", "server_sack"), [(True, True), (False, True), (True, False)])
def test_sack_repairs_two_holes_in_one_round(sack: bool, server_sack: bool) -> None:
    """Two holes four segments apart in a 64-segment flight. With SACK (both ends) the
    second hole is lost by RFC 6675's IsLost (three SACKed segments above it) and resent
    within the same round as the first, the partial ack keeps recovery going and it ends
    at the recovery point; only the two holes are resent. Without SACK at either end
    (client option off, or a server that does not answer SACK-permitted), NewReno: one
    RTT apart."""
    net = _net()
    cfg = TcpConfig(init_cwnd=2, sack=sack)
    server = TcpServer(net.clock, net.hosts["s"], sack=server_sack)
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), 400 * cfg.mss, cfg)
    flow.start()
    exits = _on_recovery_exit(flow)
    copies = _drop_first_copies(net, {100, 104}, cfg.mss)
    net.run(8.0)
    assert flow.outcome == "completed" and server.stats.bytes == 400 * cfg.mss
    assert flow.sack_on == (sack and server_sack)
    assert flow.fast_retransmits == 1 and flow.timeouts == 0 and flow.retransmits == 2
    (a,), (b,) = copies[100], copies[104]
    if flow.sack_on:
        assert 0 < b - a < RTT / 10
    else:
        assert b - a == pytest.approx(RTT, abs=1e-3)
    ((_cwnd, _flight, una, recover),) = exits  # one recovery, across the partial ack
    assert una >= recover


def _sent_server(net: Network, server: TcpServer) -> list[Packet]:
    """Every packet the server sends (its acks), as sent."""
    acks: list[Packet] = []
    inner = net.hosts["s"].send

    def send(pkt: Packet) -> None:
        acks.append(pkt)
        inner(pkt)

    net.hosts["s"].send = send  # type: ignore[method-assign]
    return acks


def test_receiver_sack_blocks_most_recent_first() -> None:
    """RFC 2018 as Linux's tcp_sack_new_ofo_skb keeps them: the block holding the segment
    that triggered the ack first, then the most recently reported; blocks that touch
    merge; four kept, three sent beside timestamps (the option's 40 bytes), each 8
    bytes more on the frame; blocks below the next expected byte go; none without
    SACK-permitted in the SYN."""
    net = _net()
    server = TcpServer(net.clock, net.hosts["s"])
    c, s = net.ip("c"), net.ip("s")
    replies: list[Packet] = []
    net.hosts["c"].bind(replies.append, 1234)
    net.hosts["c"].bind(replies.append, 1235)

    def send(sport: int, flags: int, seq: int, length: int, sack_ok: bool = True) -> Packet:
        pkt = Packet(c, s, sport, 5001, 66 + length, TCP, tcp_flags=flags, seq=seq, ack=1)
        pkt.length, pkt.tsval, pkt.sack_ok = length, net.clock.now, sack_ok
        server.on_packet(pkt)
        net.run(net.clock.now + 1.0)
        return replies[-1]

    ack = g.TCP_FLAG_ACK
    assert send(1234, SYN, 0, 0).sack_ok
    assert send(1234, ack, 0, 100).sack is None
    r = send(1234, ack, 200, 100)
    assert (r.ack, r.sack, r.size) == (100, ((200, 300),), 66 + 4 + 8)
    assert send(1234, ack, 400, 100).sack == ((400, 500), (200, 300))
    assert send(1234, ack, 300, 100).sack == ((200, 500),)  # fills between: one block
    for seq in (600, 800, 1000):
        r = send(1234, ack, seq, 100)
    assert r.sack == ((1000, 1100), (800, 900), (600, 700))  # (200, 500) kept, not sent
    assert r.size == 66 + 4 + 3 * 8
    assert send(1234, ack, 1200, 100).sack == ((1200, 1300), (1000, 1100), (800, 900))
    # a fifth block pushed (200, 500) out of the four kept: its duplicate is new again
    assert send(1234, ack, 200, 100).sack == ((200, 300), (1200, 1300), (1000, 1100))
    assert send(1234, ack, 800, 100).sack == ((800, 900), (200, 300), (1200, 1300))
    r = send(1234, ack, 100, 100)  # in order up to 500: the blocks below it go
    assert (r.ack, r.sack) == (500, ((800, 900), (1200, 1300), (1000, 1100)))
    # a SYN without SACK-permitted: no option back, cumulative acks only
    assert not send(1235, SYN, 0, 0, sack_ok=False).sack_ok
    send(1235, ack, 0, 100, sack_ok=False)
    r = send(1235, ack, 200, 100, sack_ok=False)
    assert (r.ack, r.sack, r.size) == (100, None, 66)


@pytest.mark.parametrize("sack", [True, False])
def test_rto_keeps_sacked_data_and_resends_only_holes(sack: bool) -> None:
    """Three holes, then the path loses every data segment for 0.3 s from the arrival
    of the first resend: nothing sent later is delivered, so recovery stalls into an
    RTO. As Linux's tcp_enter_loss, the scoreboard keeps what was SACKed and marks every
    other outstanding segment lost: after the timeout only the holes are resent, so the
    server never gets data twice. Without SACK, go-back-N resends what had arrived."""
    net = _net()
    cfg = TcpConfig(init_cwnd=2, sack=sack)
    flow, server = _flow(net, 400 * cfg.mss, cfg)
    mss = cfg.mss
    holes = {100, 104, 110}
    outage: list[float] = []
    seen: set[int] = set()
    dups: list[int] = []

    def f(pkt: Packet) -> bool:
        i = pkt.seq // mss
        if not pkt.length:
            return False
        if i in holes:
            holes.discard(i)
            return True
        if i == 100 and not outage:
            outage.append(net.clock.now)
        if outage and net.clock.now < outage[0] + 0.3:
            return True
        if i in seen:
            dups.append(i)
        seen.add(i)
        return False

    _filter(net, "s", 5001, f)
    at_rto: list[int] = []
    inner = flow.timer.fire

    def on_timer() -> None:
        inner()
        at_rto.append(len(flow._sacked))

    flow.timer.fire = on_timer
    net.run(10.0)
    assert flow.outcome == "completed" and server.stats.bytes == 400 * mss
    assert flow.timeouts >= 1  # the RTO of 0.3 s may fire twice in the outage
    if sack:
        assert at_rto[0] >= 5  # SACKed segments above the holes, kept
        assert dups == []
    else:
        assert len(dups) >= 5


@pytest.mark.parametrize("sack", [True, False])
def test_sack_finds_a_lost_resend_without_a_timeout(sack: bool) -> None:
    """The first resend of a hole is lost too. With SACK, once a segment sent after that
    resend is SACKed the resend is lost (Linux's RACK in recovery; the path keeps order)
    and goes again: no RTO, three resends, the third one RTT after the second hole's.
    Without SACK only the RTO finds it."""
    net = _net()
    cfg = TcpConfig(init_cwnd=2, sack=sack)
    flow, server = _flow(net, 400 * cfg.mss, cfg)
    copies = _drop_first_copies(net, {100, 104}, cfg.mss)
    inner = net.hosts["s"].handlers[5001]
    resend_lost = [True]

    def lose_first_resend(pkt: Packet) -> None:
        if pkt.length and pkt.seq == 100 * cfg.mss and resend_lost[0] and copies[100] == []:
            resend_lost[0] = False
            return
        inner(pkt)

    net.hosts["s"].handlers[5001] = lose_first_resend
    net.run(10.0)
    assert flow.outcome == "completed" and server.stats.bytes == 400 * cfg.mss
    assert not resend_lost[0]
    if sack:
        assert flow.timeouts == 0 and flow.retransmits == 3 and flow.fast_retransmits == 1
        # found lost when the ack of 104's resend, sent after it, comes back: one RTT
        assert copies[100][0] - copies[104][0] == pytest.approx(RTT, abs=2e-3)
    else:
        assert flow.timeouts == 1


class _Grants:
    """A CM stand-in: after the request, one MSS granted every ``every_s``."""

    def __init__(self, clock: Clock, every_s: float) -> None:
        self.clock, self.every_s = clock, every_s
        self.losses = 0
        self.sent = 0
        self.rtts: list[tuple[float, int]] = []  # (when, the RTT sample given to the CM)

    def tcp_request(self, flow: CmTcpFlow, nbytes: int) -> None:
        self._tick(flow)

    def _tick(self, flow: CmTcpFlow) -> None:
        if flow.state != "done":
            flow.on_grant(flow.cfg.mss)
            self.clock.after(self.every_s, self._tick, flow)

    def tcp_sent(self, flow: CmTcpFlow, nbytes: int) -> None:
        self.sent += 1 if nbytes else 0

    def tcp_feedback(
        self, flow: CmTcpFlow, nrecd: int, loss: bool, rtt_us: int | None, persistent: bool
    ) -> None:
        self.losses += loss
        if rtt_us is not None:
            self.rtts.append((self.clock.now, rtt_us))


@pytest.mark.parametrize("sack", [True, False])
def test_tcp_cm_resends_sack_holes_on_the_next_grants(sack: bool) -> None:
    """TCP/CM uses the same scoreboard: each hole goes out on the first grant after it is
    found lost, ahead of new data (the second when three segments above it are SACKed,
    four acks at the grants' pace after the first), one loss reported to the CM, nothing
    SACKed resent; without SACK the second hole waits for the partial ack, one RTT
    later."""
    net = _net()
    cfg = TcpConfig(sack=sack)
    server = TcpServer(net.clock, net.hosts["s"])
    flow = CmTcpFlow(net.clock, net.hosts["c"], net.ip("s"), 300 * cfg.mss, cfg)
    cm = _Grants(net.clock, 0.002)  # 500 segments/s: 50 per 100 ms RTT
    flow.cm = cm
    flow.start()
    copies = _drop_first_copies(net, {100, 104}, cfg.mss)
    net.run(10.0)
    assert flow.outcome == "completed" and server.stats.bytes == 300 * cfg.mss
    assert flow.fast_retransmits == 1 and flow.timeouts == 0 and flow.retransmits == 2
    assert cm.losses == 1 and cm.sent == 302
    (a,), (b,) = copies[100], copies[104]
    if sack:
        assert b - a == pytest.approx(4 * 0.002, abs=1e-4)
    else:
        assert b - a == pytest.approx(RTT, abs=0.003)


class _RecordedRtt:
    """An RTT estimator that logs every sample it takes (a proxy, not a subclass: the
    estimator is a compiled class in the mypyc build)."""

    def __init__(self, inner: RttEstimator, clock: Clock, log: list[tuple[float, int]]):
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_clock", clock)
        object.__setattr__(self, "_log", log)

    def sample(self, rtt_us: int) -> None:
        self._log.append((self._clock.now, rtt_us))
        self._inner.sample(rtt_us)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: object) -> None:
        setattr(self._inner, name, value)


@pytest.mark.parametrize("sack", [True, False])
def test_tcp_cm_gives_the_cm_every_rtt_sample_tcp_takes(sack: bool) -> None:
    """TCP/CM's ``cm_update`` carries the RTT sample its TCP took from the ack: the timed
    segment's (one per flight, Karn's rule) and, with timestamps (Linux's default), the
    echo's on an ack of retransmitted data (tcp_ack_update_rtt). The resend of a loss
    episode waited in the queue that overflowed, so those echoes are the episode's long
    RTTs; the CM got only the timed segments' samples before, and its sRTT ran below
    TCP's (its increase, MSS per sRTT per sRTT, steeper). The hosts' TCP/CM reports the
    kernel's sRTT, which has every sample."""
    net = _net()
    cfg = TcpConfig(sack=sack)
    TcpServer(net.clock, net.hosts["s"])
    flow = CmTcpFlow(net.clock, net.hosts["c"], net.ip("s"), 300 * cfg.mss, cfg)
    cm = _Grants(net.clock, 0.002)
    flow.cm = cm
    taken: list[tuple[float, int]] = []
    flow.rtt = _RecordedRtt(flow.rtt, net.clock, taken)  # type: ignore[assignment]
    flow.start()
    copies = _drop_first_copies(net, {100}, cfg.mss)
    net.run(10.0)
    assert flow.outcome == "completed" and flow.retransmits == 1
    ((resent,),) = copies.values()
    after = [r for t, r in taken if t > resent]
    assert after and after[0] > RTT * 1e6  # the echo of the first copy: RTT + the wait
    assert taken[0][0] == pytest.approx(flow.connect_s)  # the SYN-ACK's, before any data
    assert cm.rtts == taken[1:]


@pytest.mark.parametrize("sack", [True, False])
def test_out_of_order_fin_counts_towards_fast_retransmit(sack: bool) -> None:
    """Five segments and the FIN, the third segment lost: two data segments and the FIN
    arrive above the hole. Linux's out-of-order queue holds the FIN, so it is SACKed like
    data (three SACKed: fast retransmit); without SACK its ack is the third duplicate.
    Either way the hole is repaired without an RTO."""
    net = _net()
    cfg = TcpConfig(sack=sack)
    flow, server = _flow(net, 5 * cfg.mss, cfg)
    blocks: list[tuple[tuple[int, int], ...]] = []

    def seen(pkt: Packet) -> bool:
        if pkt.sack:
            blocks.append(pkt.sack)
        return False

    _drop_first_copies(net, {2}, cfg.mss)
    net.run(0.01)
    _filter(net, "c", flow.sport, seen)
    net.run(5.0)
    assert flow.outcome == "completed" and server.stats.bytes == 5 * cfg.mss
    assert flow.fast_retransmits == 1 and flow.timeouts == 0 and flow.retransmits == 1
    size = 5 * cfg.mss
    assert blocks == (
        [((3 * cfg.mss, 4 * cfg.mss),), ((3 * cfg.mss, size),), ((3 * cfg.mss, size + 1),)]
        if sack
        else []
    )


def _acks_of(net: Network, flow: TcpFlow) -> list[tuple[float, int]]:
    """(time, ack number) of every pure ack the client receives."""
    acks: list[tuple[float, int]] = []

    def seen(pkt: Packet) -> bool:
        if pkt.tcp_flags == g.TCP_FLAG_ACK:
            acks.append((net.clock.now, pkt.ack))
        return False

    _filter(net, "c", flow.sport, seen)
    return acks


def _delack_flow(net: Network, segs: int, cfg: TcpConfig) -> tuple[TcpFlow, TcpServer]:
    server = TcpServer(net.clock, net.hosts["s"], delayed_ack=True)
    flow = TcpFlow(net.clock, net.hosts["c"], net.ip("s"), segs * cfg.mss, cfg)
    flow.start()
    return flow, server


def test_delayed_acks_quick_ack_then_every_second_segment() -> None:
    """``delayed_ack``, Linux's receiver: the first TCP_MAX_QUICKACKS (16) data segments
    are acked at once (quick-ack mode from the first data, tcp_event_data_recv), then an
    ack leaves when more than one full segment is unacked (__tcp_ack_snd_check): every
    second segment. 100 segments, no loss: 16 + 42 acks, each of the later ones two
    segments apart."""
    net = _net()
    cfg = TcpConfig()
    flow, _server = _delack_flow(net, 100, cfg)
    acks = _acks_of(net, flow)
    net.run(5.0)
    assert flow.outcome == "completed" and flow.retransmits == 0
    m = cfg.mss
    nums = [a for _, a in acks]
    assert nums[:16] == [m * (i + 1) for i in range(16)]
    later = nums[16:]
    assert later[:-1] == [m * (16 + 2 * (i + 1)) for i in range(len(later) - 1)]
    # the last segment (a sub-MSS remainder or PSH) is acked at once
    assert later[-1] == 100 * m and len(acks) == 16 + 42


def test_delayed_ack_timer_acks_a_lone_segment_after_40_ms() -> None:
    """A lone full-sized segment without PSH waits for the delayed-ack timer:
    TCP_ATO_MIN, 40 ms (tcp_send_delayed_ack). On a 30 kB/s link the segments arrive
    50 ms apart; on a 10 ms path the receiver's sRTT caps the timeout at 40 ms however
    often it fires (on a longer path it grows: the next test), so after the 16 quick acks
    each is acked alone, 40 ms later than a quick ack is."""
    net = _net(rate_Bps=30_000.0, one_way_s=0.01)
    cfg = TcpConfig()
    flow, _server = _delack_flow(net, 30, cfg)
    acks = _acks_of(net, flow)
    arrived: dict[int, float] = {}

    def seen(pkt: Packet) -> bool:
        if pkt.length:
            arrived.setdefault(pkt.seq + pkt.length, net.clock.now)
        return False

    _filter(net, "s", 5001, seen)
    net.run(20.0)
    assert flow.outcome == "completed" and flow.retransmits == 0
    lag = [t - arrived[a] for t, a in acks]
    assert len(acks) == 30
    quick = lag[:16]
    assert max(quick) - min(quick) < 1e-6
    assert lag[16:-1] == pytest.approx([quick[0] + 0.040] * 13, abs=1e-6)
    assert lag[-1] == pytest.approx(quick[0], abs=1e-6)  # the last segment has PSH


def test_a_missed_delayed_ack_doubles_the_timeout_so_slow_segments_are_acked_in_pairs() -> None:
    """Linux's delayed-ack timer inflates the timeout when it fires (tcp_delack_timer_handler:
    "Delayed ACK missed: inflate ATO", ato = min(2 ato, rto)), bounded when armed by the
    receiver's sRTT (tcp_send_delayed_ack). Segments 50 ms apart on a 200 ms path: the
    first lone segment waits 40 ms and is acked alone, the timeout becomes 80 ms, and from
    then on the second segment arrives before the timer: one ack per two segments, as the
    lab's Linux receivers ack NewReno at 250 kbit/s (0.74 acks per segment). With a 40 ms
    timeout that never grew (the rule above on a 10 ms path, or the simulator before
    2026-11-29) every one of them is acked alone."""
    m = TcpConfig().mss

    def acks_after_quick(one_way_s: float) -> list[int]:
        net = _net(rate_Bps=30_000.0, one_way_s=one_way_s)
        flow, _server = _delack_flow(net, 40, TcpConfig())
        acks = _acks_of(net, flow)
        net.run(30.0)
        assert flow.outcome == "completed" and flow.retransmits == 0
        return [a for _, a in acks][16:]

    slow = acks_after_quick(0.2)
    assert slow[0] == 17 * m  # the first lone segment: the 40 ms timer
    steps = {b - a for a, b in zip(slow, slow[1:-1], strict=False)}
    assert steps == {2 * m} and slow[-1] == 40 * m
    fast = acks_after_quick(0.01)  # sRTT under 40 ms caps the timeout at 40 ms
    assert fast == [m * (17 + i) for i in range(24)]


def test_delayed_ack_psh_segment_and_out_of_order_acked_at_once() -> None:
    """A full-sized segment with PSH is acked at once (Linux 6.6, "tcp: fix delayed ACKs
    for MSS boundary condition": ICSK_ACK_PUSHED, then tcp_cleanup_rbuf acks when the
    sink has read it all), as is every segment while the out-of-order queue is not empty
    and the one that fills the hole (RFC 5681 4.2). TCP/CM writes one MSS per grant, so
    every segment it sends has PSH: one ack per segment; a bulk TcpFlow only on its last."""
    net = _net()
    cfg = TcpConfig()
    TcpServer(net.clock, net.hosts["s"], delayed_ack=True)
    flow = CmTcpFlow(net.clock, net.hosts["c"], net.ip("s"), 60 * cfg.mss, cfg)
    flow.cm = _Grants(net.clock, 0.002)
    flow.start()
    acks = _acks_of(net, flow)
    net.run(5.0)
    assert flow.outcome == "completed"
    assert [a for _, a in acks] == [cfg.mss * (i + 1) for i in range(60)]
    # a bulk flow with one hole: the segments above it and the resend are acked at once
    net = _net()
    flow2, _server = _delack_flow(net, 100, cfg)
    _drop_first_copies(net, {40}, cfg.mss)
    acks2 = _acks_of(net, flow2)
    net.run(5.0)
    assert flow2.outcome == "completed" and flow2.retransmits == 1
    dup = [a for _, a in acks2 if a == 40 * cfg.mss]
    assert len(dup) >= 3  # one per out-of-order segment: fast retransmit without an RTO
    assert flow2.timeouts == 0


def test_delayed_acks_echo_the_first_unacked_segments_tsval() -> None:
    """With delayed acks TS.Recent is taken only from a segment at or below rcv_wup (the
    ack point of the last ack sent, tcp_replace_ts_recent), so an ack covering two
    segments echoes the first one's TSval (RFC 7323 4.3): the sender's RTT sample includes
    the wait for the second."""
    net = _net()
    cfg = TcpConfig(init_cwnd=40)
    flow, _server = _delack_flow(net, 60, cfg)
    sent_at: dict[int, float] = {}
    echoes: list[tuple[int, float | None]] = []

    def out(pkt: Packet) -> bool:
        if pkt.length:
            sent_at.setdefault(pkt.seq + pkt.length, pkt.tsval or 0.0)
        return False

    def back(pkt: Packet) -> bool:
        if pkt.tcp_flags == g.TCP_FLAG_ACK:
            echoes.append((pkt.ack, pkt.tsecr))
        return False

    _filter(net, "s", 5001, out)
    _filter(net, "c", flow.sport, back)
    net.run(5.0)
    assert flow.outcome == "completed"
    m = cfg.mss
    paired = [(a, e) for a, e in echoes[16:-1]]
    assert paired and all(e == sent_at[a - m] for a, e in paired)
