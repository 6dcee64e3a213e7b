"""Issue #16, management plane: from a lab host, no TCP connection to any switch
management port (Thrift, P4Runtime) succeeds, even when the host routes the
root namespace's addresses straight onto its link (static route and neighbour
entry for the switch port's MAC) or uses the port's IPv6 link-local address.

BMv2 1.15.5 binds Thrift to every address; the lab keeps the root namespace's
IP stack off the switch ports (an nftables netdev ingress drop per port, and
sysctls: fairgate_topo.bmv2). The worst case is tested: the root namespace is
also given a route back to h1 through the switch port, so replies would reach
it. The test then undoes the isolation on that port and shows the same probe
does connect, so a failure to connect above is the isolation's doing, not a
broken probe.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fairgate_topo.labnet import LabNet, LabTopology

PROBE = """
import json, socket, sys, concurrent.futures as cf
targets = json.loads(sys.argv[1])
def probe(t):
    host, port = t
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(1.5)
    try:
        scope = socket.if_nametoindex(sys.argv[2])
        addr = (host, port) if fam == socket.AF_INET else (host, port, 0, scope)
        s.connect(addr)
        return [host, port, "connected"]
    except OSError as e:
        return [host, port, type(e).__name__]
    finally:
        s.close()
with cf.ThreadPoolExecutor(32) as ex:
    print(json.dumps(list(ex.map(probe, targets))))
"""


def root_ipv4_addresses() -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True)
    addrs = [line.split()[3].split("/")[0] for line in out.stdout.splitlines()]
    return sorted(set(addrs))


def link_local(mac: str) -> str:
    b = [int(x, 16) for x in mac.split(":")]
    b[0] ^= 0x02
    eui = [*b[:3], 0xFF, 0xFE, *b[3:]]
    groups = [f"{eui[i] << 8 | eui[i + 1]:x}" for i in range(0, 8, 2)]
    return "fe80::" + ":".join(groups)


def probe_from(host: Any, targets: list[tuple[str, int]], script: Path) -> list[list[Any]]:
    """TCP connects from `host`'s namespace: [address, port, outcome] each."""
    script.write_text(PROBE)
    proc = host.popen(
        [sys.executable, str(script), json.dumps(targets), str(host.defaultIntf())],
        stdout=subprocess.PIPE,
    )
    out, _ = proc.communicate(timeout=60)
    return json.loads(out.decode().strip().splitlines()[-1])


def test_no_management_port_reachable_from_a_lab_host(tmp_path: Path) -> None:
    topo = LabTopology()
    topo.add_switch("s1")
    topo.add_switch("s2")
    topo.add_host("h1", "s1")
    topo.add_host("h2", "s2")
    topo.add_link("s1", "s2", rate_pps=500, depth=64)
    with LabNet(topo, tmp_path) as lab:
        switches = [lab.net.get(name) for name in topo.switches]
        ports = sorted({p for sw in switches for p in (sw.grpc_port, sw.thrift_port)} | {9559})
        addrs = root_ipv4_addresses()
        assert addrs, "the root namespace has no IPv4 address at all"
        h1 = lab.host("h1")
        h1_intf = str(h1.defaultIntf())
        s1_port_intf = lab.net.get("s1").intfs[topo.hosts["h1"].port]
        s1_mac = s1_port_intf.MAC()
        # An attacker on h1: route every root address onto the link, with the
        # switch port's MAC as the neighbour (no ARP needed), and IPv6 on.
        h1.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=0")
        h1.cmd(f"sysctl -qw net.ipv6.conf.{h1_intf}.disable_ipv6=0")
        for addr in addrs:
            h1.cmd(f"ip route replace {addr}/32 dev {h1_intf}")
            h1.cmd(f"ip neigh replace {addr} lladdr {s1_mac} dev {h1_intf}")
        # Worst case: the root namespace routes h1's address out of the switch
        # port (the route goes away with the interface at net.stop()).
        s1_port = s1_port_intf.name
        h1_ip = topo.hosts["h1"].ip
        subprocess.run(["ip", "route", "add", f"{h1_ip}/32", "dev", s1_port], check=True)
        lladdr = link_local(s1_mac)
        h1.cmd(f"ip -6 neigh replace {lladdr} lladdr {s1_mac} dev {h1_intf}")
        targets = [(a, p) for a in [*addrs, lladdr] for p in ports]

        # The ports do listen (from the root namespace) ...
        listening = [
            subprocess.run(
                [sys.executable, "-c", f"import socket; socket.create_connection(('{a}', {p}), 2)"],
                capture_output=True,
            ).returncode
            == 0
            for a in addrs
            for p in (sw.thrift_port for sw in switches)
        ]
        assert any(listening), "no switch Thrift port answers even from the root namespace"

        # ... but not from a lab host.
        results = probe_from(h1, targets, tmp_path / "probe.py")
        assert len(results) == len(targets)
        connected = [r for r in results if r[2] == "connected"]
        assert not connected, f"management ports reachable from h1: {connected}"
        print(f"{len(results)} connects from h1 to management ports, none succeeded: {results}")

        # Control: without the isolation on s1's port the same probe connects
        # to Thrift on a non-loopback root address (when the machine has one).
        outside = [a for a in addrs if not a.startswith("127.")]
        if outside:
            s1 = lab.net.get("s1")
            subprocess.run(["nft", "delete", "table", "netdev", s1.nft_table], check=True)
            for key in ("rp_filter", "arp_ignore"):
                subprocess.run(["sysctl", "-qw", f"net.ipv4.conf.{s1_port}.{key}=0"], check=True)
            control = probe_from(h1, [(outside[0], s1.thrift_port)], tmp_path / "probe.py")
            assert control[0][2] == "connected", (
                f"the probe cannot connect even without isolation: {control}; "
                "it proves nothing about the isolation"
            )
