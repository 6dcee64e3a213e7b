"""CM probes riding on data packets (``CMConfig.probe_on_data``): the host core, the
receiver and the probe book together, over a lossless or lossy loopback."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from fairgate_hosts.cm.core import CMConfig, CongestionManager, SendProbe
from fairgate_hosts.cm.host import CMFlow, CMHostCore
from fairgate_hosts.cm.probe import ProbeBook
from fairgate_hosts.receiver import PROBE_COUNT, ReceiverCore
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, RateHeader

DST = "10.0.0.2"
RTT_US = 100_000


@dataclass
class LoopHost(CMHostCore):
    """A CM host whose packets reach a ``ReceiverCore`` (every ``drop_every``-th data packet
    lost on the way); the receiver's answers come back one RTT later."""

    rx: ReceiverCore = field(default_factory=ReceiverCore)
    drop_every: int = 0
    data_sent: int = 0
    alone: int = 0  # probes sent as packets of their own
    inbox: list[tuple[int, CMFlow | None, bytes]] = field(default_factory=list)
    now_us: int = 0

    def _deliver(self, flow: CMFlow | None, data: bytes) -> None:
        for out in self.rx.on_datagram(data, self.now_us, ("10.0.0.1", 7)):
            self.inbox.append((self.now_us + RTT_US, flow, out.data))

    def _send_data(self, flow: CMFlow, data: bytes) -> bool:
        self.data_sent += 1
        if not (self.drop_every and self.data_sent % self.drop_every == 0):
            self._deliver(flow, data)
        return True

    def _send_probe(self, dst: str, data: bytes) -> bool:
        self.alone += 1
        self._deliver(None, data)
        return True


class Bulk:
    def on_grant(self, host: LoopHost, flow: CMFlow, nbytes: int, now_us: int) -> None:
        host.send(flow, nbytes, now_us)

    def on_rate(self, *a: object) -> None: ...

    def on_timer(self, *a: object) -> None: ...


def run(drop_every: int, probe_on_data: bool, seconds: float = 3.0) -> LoopHost:
    cfg = CMConfig(mss=1000, initial_rate_Bps=50_000, probe_on_data=probe_on_data, aging="off")
    host = LoopHost(DST, cfg=cfg, drop_every=drop_every, explicit=False)
    flow = CMFlow(host.cm.open("", DST, now_us=0), 1.0)
    host.flows[flow.fid] = flow
    app = Bulk()
    host.handle(host.cm.request(flow.fid, 1 << 40, 0), app, 0)
    for t in range(0, int(seconds * 1e6), 1000):  # 1 ms steps
        host.now_us = t
        due = [m for m in host.inbox if m[0] <= t]
        host.inbox = [m for m in host.inbox if m[0] > t]
        for _, f, data in due:
            if f is None:
                host.handle(host.cm.on_probe_response(DST, data, t), app, t)
            else:
                host.handle(host.on_ack(f, data, t), app, t)
        host.handle(host.cm.tick(t), app, t)
    return host


def test_probes_ride_on_data_and_count_exactly_without_loss() -> None:
    host = run(drop_every=0, probe_on_data=True)
    tot = host.cm.probe_totals[DST]
    assert host.probes_on_data > 20 and host.alone <= 1  # the first probe precedes data
    assert host.probes_sent == host.probes_on_data + host.alone
    assert tot.responses >= host.probes_sent - 3  # the last ones are still in flight
    assert tot.sent_bytes > 100_000 and tot.lost_bytes == 0  # bytes sent ahead counted
    # the probes' RTT reaches the CM: its sRTT is the loopback's RTT
    assert host.cm.macroflows[DST].aimd.srtt_us == pytest.approx(RTT_US, rel=0.05)


def test_probes_on_data_measure_the_loss() -> None:
    host = run(drop_every=10, probe_on_data=True)
    tot = host.cm.probe_totals[DST]
    # probes riding on a lost packet are lost with it: the next response covers both
    assert tot.lost_bytes / tot.sent_bytes == pytest.approx(0.1, abs=0.01)
    assert host.cm.macroflows[DST].aimd.losses > 0


def test_without_probe_on_data_every_probe_is_a_packet() -> None:
    host = run(drop_every=0, probe_on_data=False)
    assert host.probes_on_data == 0 and host.alone == host.probes_sent > 20
    assert host.cm.probe_totals[DST].lost_bytes == 0


def test_a_due_probe_goes_alone_when_no_data_follows() -> None:
    cm = CongestionManager(CMConfig(mss=1000, initial_rate_Bps=10_000, aging="off"))
    f = cm.open("", DST, now_us=0)
    cm.request(f, 1000, 0)  # one grant, then nothing more to send
    cm.notify(f, 1000, 0)
    t, alone = 0, []
    while t < 300_000 and not alone:
        t = cm.next_deadline(t) or t + 1000
        alone = [e for e in cm.tick(t) if isinstance(e, SendProbe)]
    assert alone and cm.take_probe(DST, t) is None


def test_a_due_probe_waits_for_the_next_grant() -> None:
    cfg = CMConfig(mss=1000, initial_rate_Bps=50_000, aging="off", probe_spread=0.0)
    cm = CongestionManager(cfg)
    f = cm.open("", DST, now_us=0)
    alone = [e for e in cm.notify(f, 1000, 0) if isinstance(e, SendProbe)]
    assert len(alone) == 1  # nothing else to send yet: probe 1 goes on its own
    cm.request(f, 1 << 30, 0)  # backlogged now: a grant every 20 ms, probes every 50
    t = 0
    while t < 50_000:
        t = cm.next_deadline(t) or t + 1000
        assert not any(isinstance(e, SendProbe) for e in cm.tick(t))
    assert cm.macroflows[DST].probe_due_us == 50_000  # waits for the grant due at 60 ms
    seq = cm.take_probe(DST, 60_000, pending=1000)
    assert seq == 2 and cm.take_probe(DST, 60_001) is None  # taken once
    assert cm.macroflows[DST].next_probe_us == 110_000


def test_pending_bytes_belong_to_the_probe_they_precede() -> None:
    book = ProbeBook()
    book.on_sent(500)
    seq = book.make_probe(0, pending=1000)  # 1000 B sent before it, not yet reported
    assert book.probes[seq] == (0, 1500)
    book.on_sent(1000)  # now reported: already counted
    book.on_sent(200)
    seq2 = book.make_probe(10)
    assert book.probes[seq2] == (10, 200)


def test_receiver_answers_a_probe_on_data_before_counting_it() -> None:
    rx = ReceiverCore()
    peer = ("10.0.0.1", 5)
    probe1 = RateHeader(kind=g.FG_KIND_PROBE, seq=1).pack()
    rx.on_datagram(probe1, 0, peer)
    rx.on_datagram(RateHeader(seq=0).pack() + bytes(1000), 1, peer)
    on_data = RateHeader(seq=1, flags=g.FG_FLAG_PROBE, ack=2, ts_us=7).pack() + bytes(400)
    resp, ack = rx.on_datagram(on_data, 2, peer)
    r = RateHeader.unpack(resp.data)
    assert (r.kind, r.seq, r.ack, r.ts_echo_us) == (g.FG_KIND_PROBE_ACK, 2, 1, 7)
    assert not r.flags & g.FG_FLAG_PROBE
    assert PROBE_COUNT.unpack_from(resp.data, HEADER_BYTES)[0] == 1000  # not its own 400
    assert RateHeader.unpack(ack.data).kind == g.FG_KIND_ACK
    (resp3,) = rx.on_datagram(RateHeader(kind=g.FG_KIND_PROBE, seq=3).pack(), 3, peer)
    assert PROBE_COUNT.unpack_from(resp3.data, HEADER_BYTES)[0] == 400
