"""The CM's rate on probe feedback follows TCP's ack clock (``cm/aimd.py``, ``on_ack`` and
``on_loss`` with the rates a response's bytes left and arrived at): no increase while the
queue grows faster than TCP's window would make it grow, and a loss halves the delivered
rate when the CM sent faster than the path delivered. The old AIMD raised its rate through
a filling queue (to 1.35x the port in congestion avoidance, 4.7x in slow start in
``cm-feedback``) and halved a rate still above the port."""

from __future__ import annotations

import pytest

from fairgate_hosts.cm.core import CMConfig, CongestionManager
from fairgate_hosts.cm.probe import ProbeBook
from fairgate_hosts.receiver import PROBE_COUNT
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader

MSS = 1000
RATE = 100_000.0  # B/s
DST = "10.0.0.2"


def response(this: int, last: int, nrecd: int) -> bytes:
    return RateHeader(kind=g.FG_KIND_PROBE_ACK, seq=this, ack=last).pack() + PROBE_COUNT.pack(nrecd)


def manager(probed: bool = True) -> tuple[CongestionManager, int]:
    """A CM at RATE in congestion avoidance (or slow start), probes made by hand (its own
    probing and aging off), one probed flow (and one unprobed one with ``probed=False``)."""
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=RATE, probing=False, aging="off"))
    fid = cm.open("h", DST)
    if not probed:
        cm.open("h", DST, probed=False)
    return cm, fid


def first_interval(cm: CongestionManager, fid: int, rtt_us: int) -> int:
    """Probe 1 at 0 (answered after ``rtt_us``: the reference RTT), then 100 ms at RATE
    (10 kB) and probe 2 at 100 ms; returns the time probe 2 left."""
    mf = cm.macroflows[DST]
    mf.probes.make_probe(0)
    cm.on_probe_response(DST, response(1, 0, 0), rtt_us)
    cm.notify(fid, int(RATE * 0.1), 100_000)
    mf.probes.make_probe(100_000)
    return 100_000


@pytest.mark.parametrize("slow_start", [False, True])
def test_no_increase_while_the_queue_grows_faster_than_tcp_would_grow_it(
    slow_start: bool,
) -> None:
    rates = {}
    for growth_us in (0, 60_000):  # the second probe's RTT: as the first's, or 60 ms more
        cm, fid = manager()
        a = cm.macroflows[DST].aimd
        a.ssthresh_Bps = float("inf") if slow_start else RATE / 2
        sent_at = first_interval(cm, fid, 100_000)
        before = a.rate_Bps
        cm.on_probe_response(DST, response(2, 1, int(RATE * 0.1)), sent_at + 100_000 + growth_us)
        rates[growth_us] = a.rate_Bps / before
    # no queue: the increase as before (slow start: the 10 kB over the sRTT; avoidance:
    # MSS x acked / cwnd)
    assert rates[0] > (1.5 if slow_start else 1.05)
    # 10 kB sent in 100 ms arrived over 160 ms: sent 100 kB/s, delivered 62.5 kB/s. TCP
    # sends at most twice its delivery rate in slow start and one MSS per sRTT above it
    # in congestion avoidance (the old CM: as with no queue, 2x and 1.09x)
    if slow_start:  # 2 x 62.5 kB/s
        assert rates[60_000] * RATE == pytest.approx(125_000, rel=0.01)
    else:  # pulled back to the delivered rate plus one MSS per sRTT (about 72 kB/s)
        assert rates[60_000] < 0.75


def test_a_slow_start_ahead_of_its_feedback_comes_back_to_twice_the_delivery_rate() -> None:
    """The rate doubled since the bytes left (150 kB/s against 100): the queue they met
    delivered them at 62.5 kB/s, so TCP's slow start would send 125 kB/s, not more."""
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    sent_at = first_interval(cm, fid, 100_000)
    a.rate_Bps = 1.5 * RATE
    cm.on_probe_response(DST, response(2, 1, int(RATE * 0.1)), sent_at + 160_000)
    assert a.rate_Bps == pytest.approx(125_000, rel=0.01)  # the old CM: 250 kB/s


def test_a_loss_halves_the_delivered_rate_when_the_cm_sent_faster() -> None:
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    a.ssthresh_Bps = RATE / 2
    sent_at = first_interval(cm, fid, 300_000)  # a full queue: 300 ms both times
    # 10 kB sent in 100 ms, 6 kB arrived over the same 100 ms: delivered 60 kB/s
    cm.on_probe_response(DST, response(2, 1, 6_000), sent_at + 300_000)
    assert a.losses == 1
    assert a.rate_Bps == pytest.approx(30_000, rel=0.02)  # the old CM: RATE / 2


def test_a_macroflow_with_unprobed_flows_halves_its_rate() -> None:
    """TCP/CM's bytes are not in the probes' counts: the spans say nothing of its share."""
    cm, fid = manager(probed=False)
    a = cm.macroflows[DST].aimd
    a.ssthresh_Bps = RATE / 2
    sent_at = first_interval(cm, fid, 300_000)
    cm.on_probe_response(DST, response(2, 1, 6_000), sent_at + 300_000)
    assert a.rate_Bps == pytest.approx(RATE / 2)


def test_an_aged_rate_is_not_judged_by_bytes_sent_before_aging() -> None:
    """Bytes that left at four times the current rate say nothing of it: plain halving."""
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    a.ssthresh_Bps = RATE / 2
    sent_at = first_interval(cm, fid, 300_000)
    a.rate_Bps = RATE / 4  # as aging would have cut it
    cm.on_probe_response(DST, response(2, 1, 6_000), sent_at + 300_000)
    assert a.rate_Bps == pytest.approx(RATE / 8)


def test_probe_book_spans_of_consecutive_responses() -> None:
    book = ProbeBook()
    book.make_probe(0)
    r1 = book.on_response(1, 0, 0, 100_000)
    assert r1 is not None and r1.send_span_us is None  # nothing before probe 1
    book.on_sent(5_000)
    book.make_probe(50_000)
    r2 = book.on_response(2, 1, 5_000, 180_000)  # RTT 130 ms after 100 ms: 30 ms more
    assert r2 is not None and (r2.send_span_us, r2.recv_span_us) == (50_000, 80_000)
    book.on_sent(5_000)
    book.make_probe(100_000)  # its response is lost
    book.on_sent(5_000)
    book.make_probe(150_000)
    r4 = book.on_response(4, 2, 10_000, 280_000)  # lastprobe 2: the spans cover 3 and 4
    assert r4 is not None and (r4.send_span_us, r4.recv_span_us) == (100_000, 100_000)
    book.make_probe(200_000)
    book.make_probe(250_000)
    r6 = book.on_response(6, 5, 0, 380_000)  # probe 5's response lost, the receiver's
    assert r6 is not None and r6.send_span_us is None  # count restarted: no span
