"""XCP sender and receiver: the header they write and echo, and the window rule."""

from __future__ import annotations

import pytest
from hosts_sim import Link

from fairgate_hosts.receiver import ReceiverCore
from fairgate_hosts.sender import Mode, SenderConfig, SenderCore, Transmit
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, XCP_HEADER_BYTES, RateHeader, XcpHeader
from fairgate_p4.xcp_math import sender_terms

FEEDBACK_MAX = g.FG_XCP_FEEDBACK_UNLIMITED
KIND_XCP_DATA, KIND_XCP_ACK = g.FG_KIND_XCP_DATA, g.FG_KIND_XCP_ACK

FRAME = 1200 + 42


def xcp_cfg(**kw: float) -> SenderConfig:
    base = {"mode": Mode.XCP, "flow_bytes": 1_000_000}
    base.update(kw)
    return SenderConfig(**base)  # type: ignore[arg-type]


def xcp_fields(data: bytes) -> tuple[int, int, int, int]:
    h = XcpHeader.unpack(data, HEADER_BYTES)
    return h.cwnd_bytes, h.feedback, h.lg_pos, h.lg_neg


def feedback_switch(fb: int):
    """A switch that min-stamps H_feedback with ``fb`` on XCP data."""

    def fwd(data: bytes, now: int) -> bytes:
        cwnd, feedback, lg_pos, lg_neg = xcp_fields(data)
        buf = bytearray(data)
        XcpHeader(cwnd, min(feedback, fb), lg_pos, lg_neg).pack_into(buf, HEADER_BYTES)
        return bytes(buf)

    return fwd


def test_data_carries_the_xcp_header_and_the_receiver_echoes_it() -> None:
    s = SenderCore(xcp_cfg())
    act = s.poll(1_000_000)
    assert isinstance(act, Transmit)
    hdr = RateHeader.unpack(act.data)
    assert hdr.kind == KIND_XCP_DATA and len(act.data) == 1200
    cwnd, feedback, _lp, _ln = xcp_fields(act.data)
    assert cwnd == 4 * FRAME  # init_cwnd packets of frame bytes
    assert feedback == FEEDBACK_MAX  # no demand limit
    stamped = feedback_switch(-300)(act.data, 0)
    r = ReceiverCore()
    (out,) = r.on_datagram(stamped, 1_010_000, ("h", 1))
    ack = RateHeader.unpack(out.data)
    assert ack.kind == KIND_XCP_ACK and (ack.seq, ack.ack) == (0, 1)
    assert len(out.data) == HEADER_BYTES + XCP_HEADER_BYTES
    assert xcp_fields(out.data) == xcp_fields(stamped)
    flow = next(iter(r.flows.values()))
    assert flow.unique_bytes == 1200 - HEADER_BYTES - XCP_HEADER_BYTES
    s.on_datagram(out.data, 1_020_000)
    assert s.cwnd_bytes == 4 * FRAME - 300  # cwnd + H_feedback


def test_after_an_rtt_the_sender_fills_the_log2_terms() -> None:
    s = SenderCore(xcp_cfg())
    r = ReceiverCore()
    first = s.poll(1_000_000)
    assert isinstance(first, Transmit)
    (ack,) = r.on_datagram(first.data, 1_010_000, ("h", 1))
    s.on_datagram(ack.data, 1_020_000)
    nxt = s.poll(1_020_000)
    assert isinstance(nxt, Transmit)
    hdr = RateHeader.unpack(nxt.data)
    cwnd, _fb, lg_pos, lg_neg = xcp_fields(nxt.data)
    assert hdr.rtt_us == 20_000
    assert (lg_pos, lg_neg) == sender_terms(0.02, FRAME, cwnd)


@pytest.mark.parametrize("floor", [1.0, 0.125])
def test_window_never_falls_below_its_floor(floor: float) -> None:
    s = SenderCore(xcp_cfg(xcp_min_window_pkts=floor))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=feedback_switch(-(10**6)))
    link.run(until_us=1_200_000)
    assert s.cwnd_bytes == floor * FRAME
    assert s.stats.acks > 0


def test_a_window_under_one_packet_sends_less_than_one_packet_per_rtt() -> None:
    """The paced sender's point of a floor below s: 1/8 packet per RTT is one packet every
    8 RTTs (10 ms here), where the paper's floor would send one per RTT."""
    s = SenderCore(xcp_cfg(xcp_min_window_pkts=0.125))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=feedback_switch(-(10**6)))
    link.run(until_us=1_000_000)
    sent = s.stats.sent_packets
    link.run(until_us=3_000_000)
    # 2 s at one packet per 80 ms (srtt 10 ms) = 25 packets; one per RTT would be 200
    assert 15 <= s.stats.sent_packets - sent <= 35


def test_window_floor_must_be_a_fraction_of_a_packet() -> None:
    for bad in (0.0, -1.0, 1.5):
        with pytest.raises(ValueError, match="xcp_min_window_pkts"):
            xcp_cfg(xcp_min_window_pkts=bad)


def test_positive_feedback_grows_the_window_by_its_sum() -> None:
    s = SenderCore(xcp_cfg(flow_bytes=12 * 1158))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=feedback_switch(100))
    link.run(until_us=3_000_000)
    assert s.outcome == "completed"
    assert s.cwnd_bytes == 4 * FRAME + 100 * s.stats.acks


def test_demand_is_the_window_the_desired_rate_needs() -> None:
    s = SenderCore(xcp_cfg(desired_rate_kbps=8000))
    r = ReceiverCore()
    first = s.poll(1_000_000)
    assert isinstance(first, Transmit)
    (ack,) = r.on_datagram(first.data, 1_010_000, ("h", 1))
    s.on_datagram(ack.data, 1_020_000)
    nxt = s.poll(1_020_000)
    assert isinstance(nxt, Transmit)
    _cwnd, demand, _lp, _ln = xcp_fields(nxt.data)
    # 1 MB/s x 20 ms = 20000 B wanted, minus the window held
    assert demand == int(1_000_000 * 0.02 - s.cwnd_bytes)


def test_timeout_takes_the_window_to_one_packet() -> None:
    s = SenderCore(xcp_cfg(flow_bytes=100_000))
    link = Link(s, ReceiverCore(), one_way_us=5000, forward=lambda d, now: None)
    link.run(until_us=2_000_000)
    assert s.stats.timeouts >= 1
    assert s.cwnd_bytes == FRAME


@pytest.mark.parametrize("cut", [b"", b"\x00" * 10])
def test_short_or_wrong_acks_are_counted_not_applied(cut: bytes) -> None:
    s = SenderCore(xcp_cfg())
    first = s.poll(1_000_000)
    assert isinstance(first, Transmit)
    (ack,) = ReceiverCore().on_datagram(first.data, 1_010_000, ("h", 1))
    s.on_datagram(ack.data[:HEADER_BYTES] + cut, 1_020_000)  # XCP header missing or short
    assert s.stats.malformed_acks == 1 and s.snd_una == 0
    plain = RateHeader.unpack(ack.data)
    plain.kind = g.FG_KIND_ACK
    s.on_datagram(plain.pack() + ack.data[HEADER_BYTES:], 1_020_000)  # not an XCP ack
    assert s.stats.ignored_packets == 1 and s.snd_una == 0


def test_receiver_refuses_truncated_xcp_data() -> None:
    s = SenderCore(xcp_cfg())
    first = s.poll(1_000_000)
    assert isinstance(first, Transmit)
    r = ReceiverCore()
    assert r.on_datagram(first.data[: HEADER_BYTES + 4], 1_010_000, ("h", 1)) == []
    assert r.stats.malformed == 1


def test_unstamped_feedback_waits_without_rtt_and_grows_one_packet_with_it() -> None:
    s = SenderCore(xcp_cfg())
    r = ReceiverCore()
    first: list[Transmit] = []
    now = 1_000_000
    while len(first) < 4:  # the initial window, paced; no RTT known yet
        act = s.poll(now)
        if isinstance(act, Transmit):
            first.append(act)
        else:
            now += 1000
    assert all(RateHeader.unpack(a.data).rtt_us == 0 for a in first)
    for a in first:  # no switch on the path: H_feedback comes back unstamped
        (ack,) = r.on_datagram(a.data, now + 10_000, ("h", 1))
        assert xcp_fields(ack.data)[1] == FEEDBACK_MAX
        s.on_datagram(ack.data, now + 20_000)
    assert s.cwnd_bytes == 4 * FRAME  # packets without an RTT: no change
    nxt = s.poll(now + 20_000)
    assert isinstance(nxt, Transmit) and RateHeader.unpack(nxt.data).rtt_us > 0
    (ack,) = r.on_datagram(nxt.data, now + 30_000, ("h", 1))
    s.on_datagram(ack.data, now + 40_000)
    assert s.cwnd_bytes == 5 * FRAME  # with an RTT and nobody stamping: one packet more


def test_a_loss_halves_the_window_once_per_rtt() -> None:
    s = SenderCore(xcp_cfg(init_cwnd=16, flow_bytes=40 * 1158))
    dropped: set[int] = set()

    def lossy(data: bytes, now: int) -> bytes | None:
        seq = RateHeader.unpack(data).seq
        if seq in (6, 7) and seq not in dropped:  # two losses in the same window
            dropped.add(seq)
            return None
        return feedback_switch(0)(data, now)  # no feedback: only the loss moves the window

    link = Link(s, ReceiverCore(), one_way_us=5000, forward=lossy)
    link.run(until_us=5_000_000)
    assert s.outcome == "completed" and s.stats.losses == 2
    assert s.cwnd_bytes == 8 * FRAME  # halved once, not twice
