"""The switch model's XCP step against xcp.p4 (through fairgate_p4.xcp_math, which the PTF
tests pin to BMv2): min-stamped H_feedback, the counters the controller's sample uses."""

from __future__ import annotations

from fairgate_controller.telemetry import counter_deltas, queue_buckets, rtt_buckets, xcp_sample
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, RateHeader, XcpHeader
from fairgate_p4.xcp_math import LG_NONE, encode_factor, sender_terms, switch_feedback
from fairgate_sim.engine import Clock
from fairgate_sim.packet import Packet, udp_packet
from fairgate_sim.port import OutputPort, PortParams
from fairgate_sim.switch import SimSwitch

A, B = "10.0.1.1", "10.0.2.1"
PORT = 2


def _switch() -> tuple[Clock, SimSwitch, list[Packet]]:
    clock = Clock()
    sw = SimSwitch("s1", clock, queue_buckets(64), rtt_buckets())
    got: list[Packet] = []
    sw.add_port(OutputPort(clock, PortParams(rate_pps=1000.0, depth=64), PORT, deliver=got.append))
    sw.routes = {B: PORT}
    return clock, sw, got


def _xcp(
    rtt_s: float, cwnd: int, demand: int = g.FG_XCP_FEEDBACK_UNLIMITED, kind: int = 0
) -> Packet:
    size = 1200 + 42
    lg_pos, lg_neg = sender_terms(rtt_s, size, cwnd) if rtt_s > 0 else (LG_NONE, LG_NONE)
    hdr = RateHeader(kind=kind or g.FG_KIND_XCP_DATA, rtt_us=round(rtt_s * 1e6))
    xcp = XcpHeader(cwnd, demand, lg_pos, lg_neg)
    return udp_packet(A, B, 40000, g.FG_UDP_PORT, hdr.pack() + xcp.pack() + bytes(1200 - 40))


def _feedback(p: Packet) -> int:
    assert p.data is not None
    return XcpHeader.unpack(p.data, HEADER_BYTES).feedback


def test_feedback_is_min_stamped_with_the_model_of_the_p4() -> None:
    clock, sw, got = _switch()
    lg_p, lg_n = encode_factor(2.0e6), encode_factor(10.0)
    sw.set_xcp_factors(PORT, lg_p, lg_n)
    sent = [_xcp(0.05, 5_000), _xcp(0.2, 400_000), _xcp(0.05, 5_000, demand=-7)]
    want = []
    for p in sent:
        assert p.data is not None
        x = XcpHeader.unpack(p.data, HEADER_BYTES)
        want.append(min(x.feedback, switch_feedback(x.lg_pos, x.lg_neg, lg_p, lg_n)))
    for p in sent:
        sw.receive(p)
    clock.run(1.0)
    assert [_feedback(p) for p in got] == want
    # exact: 2e6 * 0.05^2 * 1242 / 5000 - 10 * 0.05 * 1242 = 621 bytes; the long-RTT, large
    # window flow: 248.4 - 2484 = -2235.6 bytes
    assert abs(want[0] - 621) <= 3 and abs(want[1] + 2235.6) <= 8
    assert want[2] == -7  # a lower H_feedback from upstream stays
    assert sw.xcp_stamped == 2


def test_no_factors_no_rtt_and_acks_are_left_alone() -> None:
    clock, sw, got = _switch()
    sw.receive(_xcp(0.05, 20_000))  # the port has no factors yet
    clock.run(0.5)
    sw.set_xcp_factors(PORT, encode_factor(5.0e6), encode_factor(2.0))
    sw.receive(_xcp(0.0, 20_000))  # no RTT known
    sw.receive(_xcp(0.05, 20_000, kind=g.FG_KIND_XCP_ACK))
    clock.run(1.0)
    assert [_feedback(p) for p in got] == [g.FG_XCP_FEEDBACK_UNLIMITED] * 3
    assert sw.xcp_stamped == 0


def test_counters_give_the_controller_its_sample() -> None:
    clock, sw, _got = _switch()
    sw.set_xcp_factors(PORT, encode_factor(1.0e6), encode_factor(1.0))
    before = sw.port_snapshot(PORT)
    for _ in range(10):
        sw.receive(_xcp(0.04, 24_840))  # rtt s / cwnd = 0.04 * 1242 / 24840 = 0.002 s
    sw.receive(_xcp(0.0, 24_840))  # no RTT: counted in y only
    clock.run(1.0)
    delta, reset = counter_deltas(before, sw.port_snapshot(PORT))
    assert not reset
    s = xcp_sample(delta, PORT, 1.0, sw.qbuckets, sw.rbuckets, sw.xbuckets)
    assert s.y_bytes == 11 * 1242
    assert s.sum_s_bytes == 10 * 1242
    exact = 10 * 0.002
    assert abs(s.sum_rtt_s_over_cwnd - exact) <= sw.xbuckets.relative_error_bound() * exact
    assert s.avg_rtt_s is not None and 0.03 < s.avg_rtt_s < 0.05  # the RTT histogram's mean
