"""Congestion Manager core: AIMD, aging, probes, scheduler, API."""

from __future__ import annotations

import pytest

from fairgate_hosts.cm.aimd import AimdRate
from fairgate_hosts.cm.core import AppNotify, ChangeRate, CMConfig, CongestionManager, SendProbe
from fairgate_hosts.cm.probe import ProbeBook
from fairgate_hosts.cm.scheduler import HierarchicalRoundRobin
from fairgate_hosts.receiver import ReceiverCore
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader

MSS = 1000
RTT = 100_000  # us


def test_aimd_trajectory_slow_start_then_halving_then_linear() -> None:
    a = AimdRate(mss=MSS, initial_rate_Bps=2 * MSS / 0.1)
    now = 0
    rates = []
    for _ in range(4):  # slow start: a window of acks doubles the rate each RTT
        now += RTT
        a.on_ack(int(a.rate_Bps * 0.1), RTT, now)
        rates.append(a.rate_Bps)
    assert rates == pytest.approx([40_000, 80_000, 160_000, 320_000])
    assert a.on_loss(now + 1, RTT)
    assert a.rate_Bps == pytest.approx(160_000) and not a.slow_start
    assert not a.on_loss(now + 2, RTT)  # at most one halving per RTT
    now += RTT
    for _ in range(3):  # congestion avoidance: about one MSS per RTT per window acked
        cwnd = a.rate_Bps * 0.1
        a.on_ack(int(cwnd), RTT, now)
        # TCP's per-ack MSS x MSS / cwnd over the window's segments: a little under one MSS
        assert cwnd + 0.95 * MSS < a.rate_Bps * 0.1 <= cwnd + MSS
        now += RTT
    before = a.rate_Bps
    a.on_timeout(now)
    assert a.rate_Bps == pytest.approx(MSS / 0.1)
    assert a.ssthresh_Bps == pytest.approx(before / 2) and a.slow_start


def test_aimd_no_faster_than_tcp_in_avoidance() -> None:
    a = AimdRate(mss=MSS, initial_rate_Bps=100_000)
    a.ssthresh_Bps = 0.0
    a.on_ack(MSS, RTT, 0)
    assert a.rate_Bps * 0.1 <= 10_000 + MSS * MSS / 10_000 + 1e-6


def test_explicit_rate_bounds_the_cm() -> None:
    a = AimdRate(initial_rate_Bps=1e6)
    a.set_explicit(100_000)
    assert a.effective_Bps == 100_000 and a.rate_Bps <= 200_000
    a.set_explicit(None)
    assert a.effective_Bps == a.rate_Bps


def test_aging_counts_in_min_rtts_from_the_last_feedback() -> None:
    """The paper's aging: no response "within a round-trip time" starts it, and the rate
    halves "in each subsequent round-trip period"; with the minimum RTT as the round trip,
    both the first halving and the later ones come one minimum RTT apart, not the first
    after the sRTT (which a queue inflates: Fig. 6)."""
    # RTTs of 50-200 ms: well above the 10 ms aging floor.
    a = AimdRate(initial_rate_Bps=800_000)
    a.on_ack(0, 200_000, 0)  # srtt 200 ms
    a.on_ack(0, 50_000, 0)  # min rtt 50 ms, srtt grows towards it slowly
    assert a.srtt_us > 150_000
    assert a.age(50_000 - 1, active=True) == 0
    assert a.age(50_000, active=True) == 1
    assert a.rate_Bps == pytest.approx(400_000)
    assert a.age(50_000 * 4, active=True) == 3
    assert a.rate_Bps == pytest.approx(50_000)
    b = AimdRate(initial_rate_Bps=800_000)
    b.on_ack(0, 100_000, 0)
    assert b.age(10_000_000, active=False) == 0 and b.rate_Bps == 800_000


def test_aging_half_life_srtt_or_off() -> None:
    """Fig. 6's alternatives: halving every smoothed RTT, or never."""
    s = AimdRate(initial_rate_Bps=800_000, aging_basis="srtt")
    s.on_ack(0, 200_000, 0)
    s.on_ack(0, 50_000, 0)
    srtt = s.srtt_us
    assert s.min_rtt_us == 50_000 and srtt > 150_000
    # the first halving waits one srtt too: the same clock
    assert s.age(int(srtt) - 1, active=True) == 0
    assert s.age(int(srtt), active=True) == 1
    # the next halvings come one srtt apart, not one min RTT (three of those would be 3)
    assert s.age(int(srtt) + 3 * 50_000, active=True) == 0
    assert s.age(2 * int(srtt), active=True) == 1
    off = AimdRate(initial_rate_Bps=800_000, aging_basis="off")
    off.on_ack(0, 100_000, 0)
    assert off.age(10_000_000, active=True) == 0 and off.rate_Bps == 800_000
    with pytest.raises(ValueError, match="aging must be one of"):
        AimdRate(aging_basis="mean")
    cm = CongestionManager(CMConfig(aging="srtt"))
    cm.open("a", "b")
    assert cm.macroflows["b"].aimd.aging_basis == "srtt"


def test_probe_bookkeeping_with_lost_probes_and_responses() -> None:
    book = ProbeBook()
    rx = ReceiverCore()
    host = ("10.0.0.2", 1)
    t = 0

    def send(nbytes: int) -> None:
        book.on_sent(nbytes)
        rx.on_datagram(RateHeader(seq=send.seq).pack() + bytes(nbytes), t, host)
        send.seq += 1

    send.seq = 0  # type: ignore[attr-defined]

    def probe(lost: bool = False) -> bytes | None:
        seq = book.make_probe(t)
        if lost:
            return None
        (a,) = rx.on_datagram(RateHeader(kind=g.FG_KIND_PROBE, seq=seq).pack(), t, host)
        return a.data

    def respond(data: bytes):
        from fairgate_hosts.receiver import PROBE_COUNT

        hdr = RateHeader.unpack(data)
        return book.on_response(hdr.seq, hdr.ack, PROBE_COUNT.unpack_from(data, 28)[0], t + 10)

    assert respond(probe()).nsent == 0  # probe 1 starts the count
    send(1000)
    send(1000)
    r2 = respond(probe())
    assert (r2.nsent, r2.nrecd, r2.loss, r2.probes_covered) == (2000, 2000, 0.0, 1)
    send(1000)
    probe(lost=True)  # probe 3 lost
    send(1000)
    r4 = respond(probe())
    assert (r4.nsent, r4.nrecd, r4.probes_covered) == (2000, 2000, 2)
    send(1000)
    lost_resp = probe()  # probe 5 answered, response lost
    assert lost_resp is not None
    send(500)
    r6 = respond(probe())
    assert (r6.nsent, r6.nrecd) == (500, 500)  # counted since 5, not misattributed
    book.on_sent(1000)  # a data packet lost in the network
    send(1000)
    r7 = respond(probe())
    assert r7.loss == pytest.approx(0.5)
    assert respond(lost_resp) is None  # late response for an old probe: ignored
    assert all(k >= 7 for k in book.probes)


def test_scheduler_shares_by_weight() -> None:
    s = HierarchicalRoundRobin()
    for fid, w in ((1, 1.0), (2, 2.0), (3, 5.0)):
        s.add(fid, w)
        s.request(fid, 10_000_000)
    got = {1: 0, 2: 0, 3: 0}
    for _ in range(8000):
        fid, n = s.next_grant(MSS)
        got[fid] += n
    assert got[2] / got[1] == pytest.approx(2, rel=0.01)
    assert got[3] / got[1] == pytest.approx(5, rel=0.01)


def test_cm_grants_pace_at_rate_and_share() -> None:
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=100_000, probing=False))
    got: dict[int, int] = {}
    a = cm.open("h1", "h2", weight=1.0, app_notify=lambda n: got.__setitem__(1, got.get(1, 0) + n))
    b = cm.open("h1", "h2", weight=3.0)
    cm.request(a, 10_000_000, 0)
    cm.request(b, 10_000_000, 0)
    bytes_b = 0
    now = 0
    while now < 2_000_000:
        nxt = cm.next_deadline(now)
        now = nxt
        for ev in cm.tick(now):
            if isinstance(ev, AppNotify) and ev.flow == b:
                bytes_b += ev.nbytes
    total = got[1] + bytes_b
    assert total == pytest.approx(200_000, rel=0.03)
    assert bytes_b / got[1] == pytest.approx(3, rel=0.05)
    q = cm.query(b)
    assert q["rate_Bps"] == pytest.approx(75_000) and q["macroflow_rate_Bps"] == 100_000


def test_charged_bytes_are_paid_from_the_rate() -> None:
    """TCP/CM's kernel retransmissions leave without a grant; charged to the CM they count
    as sent and the grants that follow wait until the rate has paid for them."""

    def granted(charge_at_1s: int) -> tuple[int, int]:
        # no feedback in this test: aging off, or the sent bytes would age the rate
        cfg = CMConfig(mss=MSS, initial_rate_Bps=100_000, probing=False, aging="off")
        cm = CongestionManager(cfg)
        f = cm.open("h1", "h2")
        cm.request(f, 10_000_000, 0)
        total, now, charged = 0, 0, False
        while now < 2_000_000:
            now = cm.next_deadline(now) or now + 1000
            events = cm.tick(now)
            if now >= 1_000_000 and not charged:
                events += cm.charge(f, charge_at_1s, now)
                charged = True
            total += sum(e.nbytes for e in events if isinstance(e, AppNotify) and e.flow == f)
        return total, cm.flows[f].sent

    plain, _ = granted(0)
    assert plain == pytest.approx(200_000, rel=0.03)
    # within one window (100 kB/s x the initial 100 ms sRTT = 10 kB) all of it is paid
    after, sent = granted(8_000)
    assert after == pytest.approx(plain - 8_000, abs=2 * MSS)
    assert sent == 8_000
    # beyond one window, one window is: bytes sent outside the window hold it one round trip
    after, sent = granted(50_000)
    assert after == pytest.approx(plain - 10_000, abs=2 * MSS)
    assert sent == 50_000
    with pytest.raises(ValueError):
        CongestionManager(CMConfig()).charge(0, -1, 0)


def test_a_burst_charged_after_a_timeout_does_not_stall_the_macroflow() -> None:
    """BMv2 cm-tcp-trace (20261128T022801Z-bmv2-file-40bae8a, 1 Mbit/s pair): after an RTO
    the kernel (whose window never binds) resent its whole flight at once, TCP/CM charged
    ~340 kB to the CM, whose timeout had restarted it at one MSS per sRTT. With the pipe
    empty no ack could raise that rate, and paying the debt at it took 50 s without a grant.
    The debt is one window at most, so the next grant waits about one round trip."""
    mss, srtt = 1448, 250_000
    cfg = CMConfig(mss=mss, initial_rate_Bps=250_000, probing=False)
    cm = CongestionManager(cfg)
    f = cm.open("h1", "h2", now_us=0, probed=False)
    cm.update(f, 0, False, srtt, 0)
    cm.request(f, 10_000_000, 0)
    now = 1_000_000
    cm.update(f, 0, False, None, now, persistent=True)  # RTO: one MSS per sRTT
    assert cm.macroflows["h2"].aimd.rate_Bps == pytest.approx(mss / 0.25, rel=0.01)
    cm.tick(now)
    cm.charge(f, 340_000, now)  # the kernel's go-back-N burst
    now += srtt
    cm.update(f, 0, False, srtt, now)  # its acks: feedback, no growth (recovery)
    granted_at = None
    while granted_at is None and now < 60_000_000:
        now = cm.next_deadline(now) or now + 1000
        if any(isinstance(e, AppNotify) and e.flow == f for e in cm.tick(now)):
            granted_at = now
    assert granted_at is not None
    # one window at this rate (one MSS) plus the grant itself: two sRTTs, not 235
    assert granted_at - 1_000_000 <= 2 * srtt + 10_000


def test_charge_delivers_the_grants_it_makes() -> None:
    """``charge`` first grants what the credit up to now pays for; those grants are events
    like any other. Dropped, an app's requested bytes left the scheduler without reaching
    it: the BMv2 audio app (sharing its CM with TCP/CM, whose kernel retransmissions are
    charged) kept two frames it thought were pending and skipped most frames after that."""
    cfg = CMConfig(mss=MSS, initial_rate_Bps=100_000, probing=False, aging="off")
    cm = CongestionManager(cfg)
    audio, tcp = cm.open("h1", "h2"), cm.open("h1", "h2")
    cm.tick(0)
    cm.request(audio, 800, 0)  # two 400 B frames; the credit is spent, nothing granted yet
    cm.request(tcp, 10_000_000, 0)
    events = cm.charge(tcp, 1448, 20_000)  # 20 ms later: 2000 B of credit before the debt
    granted = [e for e in events if isinstance(e, AppNotify)]
    assert AppNotify(audio, 800) in granted
    # every byte the scheduler gave out was handed to someone
    assert cm.macroflows["h2"].sched.flows[audio].pending == 0
    assert sum(e.nbytes for e in granted) == cm.flows[audio].granted + cm.flows[tcp].granted


def test_cm_change_rate_and_update_with_explicit_rate() -> None:
    cm = CongestionManager(CMConfig(initial_rate_Bps=50_000, probing=False))
    seen: list[float] = []
    f = cm.open("a", "b", change_rate=seen.append)
    assert seen == [50_000]
    evs = cm.update(f, 0, False, 20_000, 0, explicit_rate_kbps=200)  # 25 kB/s
    assert ChangeRate(f, 25_000.0) in evs and seen[-1] == 25_000
    cm.update(f, 0, True, 20_000, 1)  # loss: AIMD 50k -> 25k
    assert cm.query(f)["aimd_rate_Bps"] == pytest.approx(25_000)
    g2 = cm.open("a", "b")
    assert seen[-1] == pytest.approx(12_500)  # the share halves when a second flow opens
    cm.close(g2)
    assert seen[-1] == pytest.approx(25_000)
    cm.close(f)
    assert cm.macroflows == {}
    with pytest.raises(KeyError):
        cm.query(f)


def test_cm_probes_twice_per_rtt_and_ages_without_responses() -> None:
    cfg = CMConfig(initial_rate_Bps=1_000_000, init_rtt_us=100_000, probe_spread=0.0)
    cm = CongestionManager(cfg)
    f = cm.open("a", "b")
    cm.update(f, 0, False, 100_000, 0)
    probes = []
    now = 0
    while now <= 1_000_000:
        for ev in cm.notify(f, 1000, now):
            if isinstance(ev, SendProbe):
                probes.append((now, ev))
        now += 10_000
    assert len(probes) in (20, 21)
    assert probes[0][1].dst == "b" and RateHeader.unpack(probes[0][1].data).kind == 3
    # no feedback for 1 s with data in flight: one halving after srtt, then every min RTT
    assert cm.query(f)["macroflow_rate_Bps"] == pytest.approx(1_000_000 / 2**10, rel=0.01)


def test_cm_probe_response_feeds_aimd() -> None:
    cm = CongestionManager(CMConfig(initial_rate_Bps=100_000, probe_spread=0.0))
    rx = ReceiverCore()
    f = cm.open("a", "10.0.0.2")
    evs = cm.notify(f, 972, 0)  # the receiver counts the payload after the header
    probe = next(e for e in evs if isinstance(e, SendProbe))
    rx.on_datagram(RateHeader(seq=0).pack() + bytes(972), 5, ("10.0.0.2", 2))
    (resp,) = rx.on_datagram(probe.data, 10, ("10.0.0.2", 1))  # all arrived: no loss
    cm.notify(f, 1000, 30_000)  # lost
    evs = cm.tick(60_000)
    probe2 = next(e for e in evs if isinstance(e, SendProbe))
    cm.on_probe_response("10.0.0.2", resp.data, 30_000)
    assert cm.query(f)["srtt_us"] == 30_000
    (resp2,) = rx.on_datagram(probe2.data, 70_000, ("10.0.0.2", 1))
    before = cm.query(f)["aimd_rate_Bps"]
    cm.on_probe_response("10.0.0.2", resp2.data, 90_000)  # 1000 sent, none received: loss
    assert cm.query(f)["aimd_rate_Bps"] == pytest.approx(before / 2)
    assert cm.on_probe_response("10.0.0.2", b"garbage", 0) == []


def test_aging_never_faster_than_the_floor() -> None:
    """Sub-millisecond RTTs (LAN, loopback) must not halve the rate between two
    probe responses of a busy event loop: aging waits at least aging_floor_us."""
    a = AimdRate(initial_rate_Bps=800_000)
    a.on_ack(0, 100, 0)  # 100 us RTT
    a.mark_feedback(0)
    assert a.age(9_999, active=True) == 0
    assert a.age(10_000, active=True) == 1
    assert a.age(19_999, active=True) == 0
    assert a.age(30_000, active=True) == 2


def test_the_papers_api_names_drive_the_same_core() -> None:
    """Fig. 8: cm_open / cm_request / cm_notify / cm_update / cm_query / cm_close, with the
    app_notify and change_rate callbacks."""
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=100_000, probing=False))
    allowed: list[int] = []
    rates: list[float] = []
    cid = cm.cm_open("h1", "h2", app_notify=allowed.append, change_rate=rates.append)
    assert rates == [pytest.approx(100_000)]
    cm.cm_request(cid, 3 * MSS, minbytes=MSS, latency=0.1, now_us=0)
    now = 0
    while sum(allowed) < 3 * MSS:
        now = cm.next_deadline(now)
        cm.tick(now)
    assert allowed == [MSS, MSS, MSS]
    cm.cm_notify(cid, 3 * MSS, now_us=now)
    cm.cm_update(cid, 3 * MSS, False, 0.05, now_us=now)
    entry = cm.cm_query("h2")
    assert (entry.dst, entry.mean_rtt) == ("h2", pytest.approx(0.05))
    assert entry.rate == pytest.approx(cm.query(cid)["macroflow_rate_Bps"])
    cm.cm_update(cid, 0, True, 0.05, now_us=now + 100_000)  # a loss halves the rate
    assert cm.cm_query("h2").rate == pytest.approx(entry.rate / 2, rel=0.01)
    with pytest.raises(ValueError):
        cm.cm_request(cid, 100, minbytes=0)
    cm.cm_close(cid)
    with pytest.raises(KeyError):
        cm.cm_query("h2")


def test_aging_half_life_srtt_and_off() -> None:
    """Fig. 6's alternative half-life (the smoothed RTT) and no aging (Fig. 4's runs)."""
    a = AimdRate(initial_rate_Bps=800_000, aging_basis="srtt")
    a.on_ack(0, 200_000, 0)
    a.on_ack(0, 50_000, 0)  # min 50 ms, srtt ~181 ms
    srtt = int(a.srtt_us)
    assert a.age(srtt, active=True) == 1  # the first halving: after one sRTT, as min_rtt
    assert a.age(srtt + 3 * 50_000, active=True) == 0  # not every min RTT ...
    assert a.age(srtt + srtt, active=True) == 1  # ... every sRTT
    assert a.rate_Bps == pytest.approx(200_000)
    off = AimdRate(initial_rate_Bps=800_000, aging_basis="off")
    off.on_ack(0, 100_000, 0)
    assert off.age(10_000_000, active=True) == 0 and off.rate_Bps == 800_000
    cm = CongestionManager(CMConfig(aging="srtt"))
    cm.open("a", "b")
    assert cm.macroflows["b"].aimd.aging_basis == "srtt"


def test_unprobed_flows_stay_out_of_probe_counts() -> None:
    """A TCP/CM flow (probed=False) reports through update: its bytes are not counted
    against the probes (the receiver agent never sees them) and start no probing."""
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=1e6))
    tcp = cm.open("a", "b", probed=False)
    events = cm.notify(tcp, 5 * MSS, 1_000)
    mf = cm.macroflows["b"]
    assert mf.probes.nsent == 0 and mf.last_sent_us is None
    assert not any(isinstance(e, SendProbe) for e in events)
    udp = cm.open("a", "b")
    events = cm.notify(udp, 2 * MSS, 2_000)
    assert [e for e in events if isinstance(e, SendProbe)]  # a probed flow starts probing
    assert mf.probes.probes[1] == (2_000, 2 * MSS)  # the probe counts the UDP bytes only


def test_timeout_is_a_loss_while_another_flow_hears_acks() -> None:
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=100_000))
    f1, f2 = cm.open("a", "b"), cm.open("a", "b")
    aimd = cm.macroflows["b"].aimd
    cm.update(f1, MSS, False, RTT, 0)
    cm.update(f2, MSS, False, RTT, 10_000)
    rate = aimd.rate_Bps
    cm.update(f1, 0, True, None, 50_000, persistent=True)  # f2 had feedback 40 ms ago
    assert aimd.timeouts == 0 and aimd.losses == 1
    assert aimd.rate_Bps == pytest.approx(rate / 2)
    cm.update(f1, 0, True, None, 500_000, persistent=True)  # f2 silent for 490 ms
    assert aimd.timeouts == 1 and aimd.rate_Bps == pytest.approx(MSS / (aimd.srtt_us / 1e6))
    solo = CongestionManager(CMConfig(mss=MSS))
    f = solo.open("a", "b")
    solo.update(f, MSS, False, RTT, 0)
    solo.update(f, 0, True, None, 1_000, persistent=True)  # its own acks do not count
    assert solo.macroflows["b"].aimd.timeouts == 1


def test_acks_wait_one_srtt_before_aging_and_probes_one_min_rtt() -> None:
    """An ack-fed macroflow (TCP/CM) ages only after one sRTT without acks: its acks come
    RTT / window apart, above a minimum RTT at a small window behind a queue. A macroflow
    fed by its probes starts aging one minimum RTT after the last response; one that
    holds a TCP/CM flow beside probed ones is ack-fed, and goes back when it leaves."""
    cm = CongestionManager(CMConfig(probing=False))
    tcp = cm.open("a", "b", probed=False)
    mf = cm.macroflows["b"]
    cm.update(tcp, 0, False, 300_000, 0)  # sRTT 300 ms
    cm.update(tcp, 0, False, 100_000, 0)  # minimum RTT 100 ms, sRTT still well above
    srtt = int(mf.aimd.srtt_us)
    assert srtt > 200_000 and mf.aimd.min_rtt_us == 100_000
    cm.request(tcp, 1_000_000, 0)
    cm.notify(tcp, 1448, 0)  # sent, no ack yet
    assert mf.aimd.age(srtt - 1, active=True) == 0
    assert mf.aimd.age(srtt, active=True) == 1
    voice = cm.open("a", "b")  # probed: the macroflow is still fed by TCP/CM's acks
    assert not mf.aimd.probe_feedback
    cm.close(tcp)
    assert mf.aimd.probe_feedback
    cm.update(voice, 0, False, None, 1_000_000)
    assert mf.aimd.age(1_100_000 - 1, active=True) == 0
    assert mf.aimd.age(1_100_000, active=True) == 1


def _probe_times(spread: float, seed: int | str | None = 1) -> list[int]:
    cfg = CMConfig(initial_rate_Bps=1_000_000, init_rtt_us=100_000, probe_spread=spread, seed=seed)
    cm = CongestionManager(cfg)
    f = cm.open("a", "b")
    cm.update(f, 0, False, 100_000, 0)
    out = []
    for now in range(0, 3_000_000, 1_000):
        out += [now for ev in cm.notify(f, 1000, now) if isinstance(ev, SendProbe)]
    return out


def test_probe_intervals_fixed_or_spread_as_rtcp_spreads_its_reports() -> None:
    """sRTT 100 ms, two probes per RTT: 50 ms apart, or with probe_spread 0.5 each gap
    drawn from [25, 75] ms (1 ms steps), the same draws for the same seed."""
    fixed = [b - a for a, b in zip(_probe_times(0.0), _probe_times(0.0)[1:], strict=False)]
    assert set(fixed) <= {50_000, 51_000}
    times = _probe_times(0.5)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert len(gaps) > 30
    assert min(gaps) >= 25_000 and max(gaps) <= 76_000
    assert max(gaps) - min(gaps) > 25_000  # spread over the range, not one value
    assert sum(gaps) / len(gaps) == pytest.approx(50_000, rel=0.15)
    assert _probe_times(0.5, seed=1) == times
    assert _probe_times(0.5, seed=2) != times
    assert CMConfig().probe_spread == 0.5  # spread by default, as RTCP does
    with pytest.raises(ValueError, match="probe_spread"):
        CMConfig(probe_spread=1.0)
