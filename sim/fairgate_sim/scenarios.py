"""Small networks the tests and experiments share (byte-rate links)."""

from __future__ import annotations

from fairgate_sim.topo import FAST_BPS, NetBuilder, NetSpec

MAX_HOSTS_PER_SWITCH = 7  # 15 counted ports per switch: hosts share them beyond that


def dumbbell(
    n_hosts: int, rate_Bps: float, depth: int = 64, delay_s: float = 0.0
) -> tuple[NetSpec, list[str], list[str]]:
    """Senders h1..hn on s1, receivers r1..rn on s2, bottleneck s1 -> s2 (one-way
    ``delay_s`` on the bottleneck both ways)."""
    if not 1 <= n_hosts <= MAX_HOSTS_PER_SWITCH:
        raise ValueError(f"1..{MAX_HOSTS_PER_SWITCH} host pairs (flows may share a host)")
    b = NetBuilder()
    s1, s2 = b.add_switch("s1"), b.add_switch("s2")
    b.add_link(s1, s2, rate_Bps, delay_s=delay_s, depth=depth, reverse_Bps=max(FAST_BPS, rate_Bps))
    fast = max(FAST_BPS, 2 * rate_Bps)
    senders = [f"h{i}" for i in range(1, n_hosts + 1)]
    receivers = [f"r{i}" for i in range(1, n_hosts + 1)]
    for h in senders:
        b.add_host(h, s1, fast)
    for r in receivers:
        b.add_host(r, s2, fast)
    return b.build(), senders, receivers


def two_bottleneck(
    link1_Bps: float, link2_Bps: float, depth: int = 64, delay_s: float = 0.0
) -> NetSpec:
    """QFCP Fig. 4: h1, h2 on s1 cross s1 -> s2 and s2 -> s3; h3 on s2 crosses s2 -> s3."""
    b = NetBuilder()
    s1, s2, s3 = (b.add_switch(f"s{i}") for i in (1, 2, 3))
    fast = max(FAST_BPS, 2 * link2_Bps)
    b.add_link(s1, s2, link1_Bps, delay_s=delay_s, depth=depth, reverse_Bps=fast)
    b.add_link(s2, s3, link2_Bps, delay_s=delay_s, depth=depth, reverse_Bps=fast)
    for h, sw in (("h1", s1), ("h2", s1), ("h3", s2), ("r1", s3), ("r2", s3), ("r3", s3)):
        b.add_host(h, sw, fast)
    return b.build()
