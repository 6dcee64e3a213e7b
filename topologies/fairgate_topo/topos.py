"""The labs' topologies (pure descriptions; ``LabNet`` builds them).

Senders are ``h<i>``, receivers ``r<i>``: flow i goes from h<i> to r<i>.
Rates are BMv2 egress queue rates in packets/s (the bottleneck C).
"""

from __future__ import annotations

from fairgate_topo.labnet import DEFAULT_DEPTH, LabTopology


def dumbbell(n: int, rate_pps: int, depth: int = DEFAULT_DEPTH) -> LabTopology:
    """N senders on s1, N receivers on s2, one bottleneck s1 -> s2."""
    topo = LabTopology()
    s1, s2 = topo.add_switch("s1"), topo.add_switch("s2")
    topo.add_link(s1, s2, rate_pps, depth)
    for i in range(1, n + 1):
        topo.add_host(f"h{i}", s1)
    for i in range(1, n + 1):
        topo.add_host(f"r{i}", s2)
    return topo


def two_bottleneck(link1_pps: int, link2_pps: int, depth: int = DEFAULT_DEPTH) -> LabTopology:
    """QFCP Fig. 4: flows 1 and 2 cross link 1 (s1 -> s2) and link 2 (s2 -> s3);
    flow 3 enters at s2 and crosses link 2 only."""
    topo = LabTopology()
    s1, s2, s3 = (topo.add_switch(f"s{i}") for i in (1, 2, 3))
    topo.add_link(s1, s2, link1_pps, depth)
    topo.add_link(s2, s3, link2_pps, depth)
    topo.add_host("h1", s1)
    topo.add_host("h2", s1)
    topo.add_host("h3", s2)
    for i in (1, 2, 3):
        topo.add_host(f"r{i}", s3)
    return topo


def parking_lot(links: list[int], depth: int = DEFAULT_DEPTH) -> LabTopology:
    """Lestas Fig. 8: k links in a row s1 -> s2 -> ... -> s(k+1) with rates
    `links`; the long flow h0 -> r0 crosses all of them, cross flow i
    (h<i> -> r<i>) crosses link i only (enters at s<i>, leaves at s<i+1>)."""
    topo = LabTopology()
    switches = [topo.add_switch(f"s{i}") for i in range(1, len(links) + 2)]
    for i, rate in enumerate(links):
        topo.add_link(switches[i], switches[i + 1], rate, depth)
    topo.add_host("h0", switches[0])
    topo.add_host("r0", switches[-1])
    for i in range(1, len(links) + 1):
        topo.add_host(f"h{i}", switches[i - 1])
        topo.add_host(f"r{i}", switches[i])
    return topo


def single_bottleneck(
    rate_pps: int, depth: int = DEFAULT_DEPTH, admission: bool = True
) -> LabTopology:
    """Session control (paper Fig. 1): clients on s1 upload to a server behind
    one gated bottleneck port s1 -> s2."""
    topo = LabTopology()
    s1, s2 = topo.add_switch("s1"), topo.add_switch("s2")
    topo.add_link(s1, s2, rate_pps, depth, admission=admission)
    topo.add_host("client", s1)
    topo.add_host("server", s2)
    return topo


def fan_in(n: int, rate_pps: int, depth: int = DEFAULT_DEPTH) -> LabTopology:
    """N senders h1..hN on s1, one receiver r1 on s2 behind the bottleneck
    s1 -> s2 (one receiver agent serves every flow: fewer processes)."""
    topo = LabTopology()
    s1, s2 = topo.add_switch("s1"), topo.add_switch("s2")
    topo.add_link(s1, s2, rate_pps, depth)
    for i in range(1, n + 1):
        topo.add_host(f"h{i}", s1)
    topo.add_host("r1", s2)
    return topo
