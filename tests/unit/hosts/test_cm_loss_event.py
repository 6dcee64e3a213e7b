"""One halving per congestion event on probe feedback (``cm/aimd.py`` ``on_loss`` with the
covered bytes' send time, ``cm/probe.py`` ``ProbeResult.sent_from_us``).

A loss event's drops are reported over several responses: the first halves the rate; the
later ones cover bytes that left before that decrease. The old CM gated a second halving
only by time (one sRTT since the last decrease), and a full queue's RTT, plus a probe
interval, is longer than the sRTT, so the event's tail halved the rate again (to a quarter
of the offered rate): in ``cm-feedback`` 9 of 11 loss events of the flow probing every 4
RTTs, 4 of 20 at two probes per RTT. TCP NewReno reduces once per window of data (its
recovery point); so does the CM now.
"""

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
RTT = 100_000  # us


def response(this: int, last: int, nrecd: int) -> bytes:
    return RateHeader(kind=g.FG_KIND_PROBE_ACK, seq=this, ack=last).pack() + PROBE_COUNT.pack(nrecd)


def manager() -> tuple[CongestionManager, int]:
    """A CM at RATE in congestion avoidance, probes made by hand (its own probing and
    aging off), one probed flow; probe 1 at 0 answered after RTT."""
    cm = CongestionManager(CMConfig(mss=MSS, initial_rate_Bps=RATE, probing=False, aging="off"))
    fid = cm.open("h", DST)
    cm.macroflows[DST].aimd.ssthresh_Bps = RATE / 2
    cm.macroflows[DST].probes.make_probe(0)
    cm.on_probe_response(DST, response(1, 0, 0), RTT)
    return cm, fid


def interval(cm: CongestionManager, fid: int, seq_time_us: int, nbytes: int = 10_000) -> None:
    """``nbytes`` sent, then a probe at ``seq_time_us``."""
    cm.notify(fid, nbytes, seq_time_us)
    cm.macroflows[DST].probes.make_probe(seq_time_us)


def test_the_tail_of_a_loss_event_does_not_halve_again() -> None:
    """Probes 2 and 3 leave at 100 and 200 ms, both into a full queue. Probe 2's response
    (lossy) halves at 400 ms; probe 3's (lossy too, its bytes left before that decrease)
    comes 350 ms later, past any sRTT of these samples: the same event."""
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    interval(cm, fid, 100_000)
    interval(cm, fid, 200_000)
    cm.on_probe_response(DST, response(2, 1, 8_000), 400_000)
    assert a.losses == 1
    after_first = a.rate_Bps
    t = 750_000
    assert t - 400_000 > a.srtt_us  # the old sRTT gate is open
    cm.on_probe_response(DST, response(3, 2, 8_000), t)
    assert a.losses == 1  # the old CM: 2
    assert a.rate_Bps == pytest.approx(after_first)  # the old CM: half of it


def test_a_loss_of_bytes_sent_after_the_decrease_halves_again() -> None:
    """Bytes that left after the decrease and were lost too: congestion the decrease did
    not cure, a new event."""
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    interval(cm, fid, 100_000)
    cm.on_probe_response(DST, response(2, 1, 8_000), 400_000)
    assert a.losses == 1
    interval(cm, fid, 450_000, 3_500)  # bytes 100-450 ms: left partly before 400 ms
    interval(cm, fid, 550_000, 5_000)  # bytes 450-550 ms: all after the decrease
    cm.on_probe_response(DST, response(3, 2, 2_500), 800_000)
    assert a.losses == 1  # straddles the decrease: still the same event
    rate = a.rate_Bps
    cm.on_probe_response(DST, response(4, 3, 4_000), 900_000)
    assert a.losses == 2
    assert a.rate_Bps == pytest.approx(rate / 2)


def test_update_without_send_times_keeps_the_srtt_gate() -> None:
    """``update`` (TCP/CM: one loss per recovery, reported by the app) knows no send
    times: at most one halving per sRTT, as before."""
    cm, fid = manager()
    a = cm.macroflows[DST].aimd
    cm.update(fid, 0, True, RTT, 200_000)
    cm.update(fid, 0, True, RTT, 250_000)
    assert a.losses == 1
    cm.update(fid, 0, True, RTT, 200_000 + 2 * int(a.srtt_us))
    assert a.losses == 2


def test_probe_result_says_when_its_bytes_started_to_leave() -> None:
    book = ProbeBook()
    book.make_probe(10_000)
    r1 = book.on_response(1, 0, 0, 110_000)
    assert r1 is not None and r1.sent_from_us is None  # no probe before the first
    book.on_sent(5_000)
    book.make_probe(60_000)
    book.on_sent(5_000)
    book.make_probe(110_000)  # probe 2's response is lost
    r3 = book.on_response(3, 1, 10_000, 230_000)
    assert r3 is not None and r3.sent_from_us == 10_000  # from probe 1 on
    book.make_probe(160_000)
    r4 = book.on_response(4, 3, 0, 280_000)
    assert r4 is not None and r4.sent_from_us == 110_000
