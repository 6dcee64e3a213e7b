"""The max-min oracle on allocations worked out by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from fairgate_exp.load import validate
from fairgate_exp.oracle import ACK_FRAME, XCP_ACK_FRAME, ack_frame_of, maxmin_pps
from fairgate_exp.plan import build_plan

HOSTS = """
hosts = [
  { name = "h1", switch = "s1" }, { name = "h2", switch = "s1" }, { name = "h3", switch = "s2" },
  { name = "r1", switch = "s3" }, { name = "r2", switch = "s3" }, { name = "r3", switch = "s3" },
]
"""


def plan_of(text: str):
    import tomllib

    exp = validate(tomllib.loads(text), Path("t.toml"))
    return build_plan(exp, Path("t.toml"), None)


def test_two_bottleneck_is_10_10_30() -> None:
    """QFCP Fig. 4: link 1 (20) shared by flows 1-2, link 2 (50) by all three."""
    plan = plan_of(
        'switches = ["s1", "s2", "s3"]\n'
        + HOSTS
        + """
links = [
  { a = "s1", b = "s2", capacity = "400pkt/s" },
  { a = "s2", b = "s3", capacity = "1000pkt/s" },
]
flows = [{ name = "f1", src = "h1", dst = "r1" }, { name = "f2", src = "h2", dst = "r2" },
         { name = "f3", src = "h3", dst = "r3" }]
"""
    )
    r = maxmin_pps(plan)
    assert r["f1"] == pytest.approx(200) and r["f2"] == pytest.approx(200)
    assert r["f3"] == pytest.approx(600)


def test_max_rate_caps_a_flow_and_frees_the_rest() -> None:
    plan = plan_of(
        'switches = ["s1", "s2", "s3"]\n'
        + HOSTS
        + """
links = [
  { a = "s1", b = "s2", capacity = "400pkt/s" },
  { a = "s2", b = "s3", capacity = "1000pkt/s" },
]
flows = [{ name = "f1", src = "h1", dst = "r1", max_rate = "50pkt/s" },
         { name = "f2", src = "h2", dst = "r2" }]
"""
    )
    r = maxmin_pps(plan)
    assert r["f1"] == pytest.approx(50) and r["f2"] == pytest.approx(350)


def test_acks_on_a_packet_rate_port_cost_a_packet() -> None:
    """f2's acks cross s1 -> s2 (200 pkt/s), where f1 sends: f1 gets 200 - f2's 50 acks;
    f2 is capped by its own max_rate, not by the port its acks load."""
    plan = plan_of(
        """
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2" },
         { name = "h2", switch = "s2" }, { name = "r2", switch = "s1" }]
links = [{ a = "s1", b = "s2", capacity = "200pkt/s", reverse_capacity = "300pkt/s" }]
flows = [{ name = "f1", src = "h1", dst = "r1" },
         { name = "f2", src = "h2", dst = "r2", max_rate = "50pkt/s" }]
"""
    )
    r = maxmin_pps(plan)
    assert r["f2"] == pytest.approx(50, rel=1e-4)
    assert r["f1"] == pytest.approx(150, rel=1e-4)


def test_acks_on_a_bit_rate_port_cost_their_size() -> None:
    plan = plan_of(
        """
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2" },
         { name = "h2", switch = "s2" }, { name = "r2", switch = "s1" }]
links = [{ a = "s1", b = "s2", capacity = "2Mbit/s", reverse_capacity = "100Mbit/s" }]
flows = [
  { name = "f1", src = "h1", dst = "r1" },
  { name = "f2", src = "h2", dst = "r2", max_rate = "1Mbit/s" },
]
"""
    )
    frame = plan.frame
    for algo in ("qfcp", "xcp"):  # XCP's acks echo its 12-byte header too
        ack = ack_frame_of(algo)
        r = maxmin_pps(plan, ack_frame=ack)
        want = (2e6 / (8 * frame)) - r["f2"] * ack / frame
        assert r["f2"] == pytest.approx(1e6 / (8 * frame))
        assert r["f1"] == pytest.approx(want, rel=1e-4)
    assert ack_frame_of("qfcp") == ACK_FRAME == XCP_ACK_FRAME - 12
