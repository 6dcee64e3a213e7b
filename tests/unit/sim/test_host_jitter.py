"""The simulator's host jitter (``SimHost.jitter_s``, an experiment's ``host_jitter``):
every packet a host sends reaches its NIC after a random delay within the bound, in
order, the same for the same seed; and it does what it is for, removing the drop-tail
phase effect that lets one of two equal CBR senders take every drop."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from fairgate_sim.engine import Clock
from fairgate_sim.network import Network, SimHost
from fairgate_sim.packet import UDP, Packet
from fairgate_sim.topo import NetBuilder

FAST = 125e6  # 1 Gbit/s access links


class _Nic:
    """An uplink stand-in: records when each packet reaches it."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.seen: list[tuple[float, int]] = []

    def send(self, pkt: Packet) -> bool:
        self.seen.append((self.clock.now, pkt.seq))
        return False  # as a full queue would answer


def _packet(seq: int) -> Packet:
    return Packet("10.0.0.1", "10.0.0.2", 9, 9, 100, UDP, None, seq=seq)


def _host(clock: Clock, jitter_s: float, seed: int = 1) -> tuple[SimHost, _Nic]:
    nic = _Nic(clock)
    nic_any: Any = nic
    return SimHost("h", "10.0.0.1", nic_any, jitter_s=jitter_s, rng=random.Random(seed)), nic


def _send_every(clock: Clock, host: SimHost, n: int, gap_s: float) -> list[float]:
    sent: list[float] = []

    def one(k: int) -> None:
        sent.append(clock.now)
        host.send(_packet(k))

    for k in range(n):
        clock.at(k * gap_s, one, k)
    clock.run(n * gap_s + 1.0)
    return sent


def test_each_packet_within_the_bound_and_in_order() -> None:
    clock = Clock()
    host, nic = _host(clock, jitter_s=0.01)
    sent = _send_every(clock, host, 400, 0.002)  # 2 ms apart: jitter reorders them if let
    assert [seq for _, seq in nic.seen] == list(range(400))  # in order
    delays = [t - s for (t, _), s in zip(nic.seen, sent, strict=True)]
    assert min(delays) >= 0 and max(delays) <= 0.01 + 1e-9
    assert max(delays) - min(delays) > 0.005  # spread over the bound, not a fixed delay
    # each is at least its own draw or the packet before it: later than sent when drawn > 0
    assert sum(d > 0 for d in delays) == 400


def test_same_seed_same_delays_other_seed_others() -> None:
    def times(seed: int) -> list[float]:
        clock = Clock()
        host, nic = _host(clock, 0.01, seed)
        _send_every(clock, host, 50, 0.02)
        return [t for t, _ in nic.seen]

    assert times(1) == times(1)
    assert times(1) != times(2)


def test_without_jitter_the_nic_answers_at_once() -> None:
    clock = Clock()
    host, nic = _host(clock, jitter_s=0.0)
    assert host.send(_packet(7)) is False  # the uplink's own answer (a drop)
    assert nic.seen == [(0.0, 7)]
    jittered, nic2 = _host(clock, jitter_s=0.01)
    assert jittered.send(_packet(8)) is True  # handed on; the NIC sees it later
    assert nic2.seen == []


def test_bad_jitter_is_a_clear_error() -> None:
    clock = Clock()
    nic_any: Any = _Nic(clock)
    with pytest.raises(ValueError, match="jitter_s must be >= 0"):
        SimHost("h", "10.0.0.1", nic_any, jitter_s=-0.001)
    with pytest.raises(ValueError, match="needs an rng"):
        SimHost("h", "10.0.0.1", nic_any, jitter_s=0.001)


def _two_cbr(jitter_s: float, seed: int = 1) -> Counter[str]:
    """Hosts a and b each send 1000-byte packets at 600 kbit/s, from the same instant,
    into one 1 Mbit/s port with 5 packets of buffer (8 ms per packet): 1.2x its rate.
    Returns the packets r received from each."""
    b = NetBuilder()
    s1, s2 = b.add_switch("s1"), b.add_switch("s2")
    b.add_link(s1, s2, 125e3, depth=5, reverse_Bps=FAST)
    for h in ("a", "b"):
        b.add_host(h, s1, FAST)
    b.add_host("r", s2, FAST)
    net = Network(b.build(), host_jitter_s=jitter_s, seed=seed)
    got: Counter[str] = Counter()
    names = {net.ip(h): h for h in ("a", "b")}
    net.hosts["r"].bind(lambda pkt: got.update([names[pkt.src]]), 9)
    period = 1000 * 8 / 600e3

    def tick(h: str) -> None:
        net.hosts[h].send(Packet(net.ip(h), net.ip("r"), 9, 9, 1000, UDP, None))
        net.clock.after(period, tick, h)

    for h in ("a", "b"):
        net.clock.at(0.0, tick, h)
    net.run(30.0)
    assert net.hosts["a"].jitter_s == jitter_s
    return got


def test_jitter_shares_a_drop_tail_queue_between_equal_senders() -> None:
    """Without jitter, a's packet always arrives first at the same instant as b's, so b
    takes every drop (the phase effect); with one service time of jitter, both lose
    about alike."""
    sent = 30.0 * 600e3 / (1000 * 8)  # packets each sender sends
    locked = _two_cbr(0.0)
    assert locked["a"] >= 0.99 * sent and locked["b"] <= 0.7 * sent
    for seed in (1, 2):
        mixed = _two_cbr(0.008, seed)
        lost = {h: sent - mixed[h] for h in ("a", "b")}
        assert min(lost.values()) > 0.35 * sum(lost.values()), (seed, lost)
        assert sum(mixed.values()) == pytest.approx(locked["a"] + locked["b"], rel=0.02)
