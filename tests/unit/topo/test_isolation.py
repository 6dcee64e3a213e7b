"""The switch-port isolation rules (fairgate_topo.bmv2), without root: what
the Mininet suite applies and tests from a lab host (test_mgmt_exposure.py)."""

from __future__ import annotations

from fairgate_topo.bmv2 import isolation_ruleset, isolation_sysctls


def test_ruleset_drops_every_frame_of_every_port_at_ingress() -> None:
    text = isolation_ruleset("fairgate_s1", ["s1-eth1", "s1-eth2"])
    assert text.startswith("table netdev fairgate_s1 {")
    for intf in ("s1-eth1", "s1-eth2"):
        assert f'type filter hook ingress device "{intf}" priority 0; policy drop;' in text
    assert "chain in_s1_eth1" in text and "chain in_s1_eth2" in text


def test_sysctls_turn_off_ipv6_arp_answers_and_loose_reverse_paths() -> None:
    assert isolation_sysctls("s1-eth1") == [
        "net.ipv6.conf.s1-eth1.disable_ipv6=1",
        "net.ipv4.conf.s1-eth1.rp_filter=1",
        "net.ipv4.conf.s1-eth1.arp_ignore=8",
        "net.ipv4.conf.s1-eth1.accept_local=0",
        "net.ipv4.conf.s1-eth1.route_localnet=0",
    ]


def test_free_ports_are_distinct_even_when_asked_for_many() -> None:
    from fairgate_topo.bmv2 import free_tcp_ports

    for _ in range(50):  # one at a time, the kernel once handed out the same port twice
        ports = free_tcp_ports(16)
        assert len(set(ports)) == 16 and all(1024 <= p <= 65535 for p in ports)
