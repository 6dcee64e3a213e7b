"""Two hosts, one BMv2 switch, the pipeline pushed over P4Runtime: ping works
through it, and stops working when the routes are removed (issue #2)."""

from __future__ import annotations

import re
from pathlib import Path

import finsy as fy
import pytest

from fairgate_controller.sync_client import SyncSwitch
from fairgate_p4 import artifacts

SWITCH_MAC = "02:fa:00:00:00:01"
HOSTS = {  # name: (ip, mac, switch port, gateway)
    "h1": ("10.0.1.1", "00:00:00:00:01:01", 1, "10.0.1.254"),
    "h2": ("10.0.2.2", "00:00:00:00:02:02", 2, "10.0.2.254"),
}


def received(ping_output: str) -> int:
    match = re.search(r"(\d+) received", ping_output)
    return int(match.group(1)) if match else 0


@pytest.mark.parametrize("program", ["forward", "fairgate"])
def test_ping_through_one_bmv2_switch(program: str, tmp_path: Path) -> None:
    from mininet.net import Mininet

    from fairgate_topo.bmv2 import Bmv2Switch, free_tcp_ports

    net = Mininet(controller=None, build=False, autoSetMacs=False)
    session = None
    grpc_port, thrift_port = free_tcp_ports(2)
    try:
        s1 = net.addSwitch(
            "s1",
            cls=Bmv2Switch,
            device_id=0,
            grpc_port=grpc_port,
            thrift_port=thrift_port,
            log_dir=tmp_path,
        )
        for name, (ip, mac, port, _gw) in HOSTS.items():
            host = net.addHost(name, ip=f"{ip}/24", mac=mac)
            net.addLink(host, s1, port2=port)
        net.build()
        net.start()
        for name, (_ip, _mac, _port, gw) in HOSTS.items():
            host = net.get(name)
            host.cmd(f"ip route add default via {gw}")
            host.setARP(gw, SWITCH_MAC)
            host.cmd(f"ethtool -K {host.defaultIntf()} tx off rx off tso off gso off gro off")

        session = SyncSwitch(
            s1.grpc_address,
            artifacts.p4info_path(program),
            artifacts.bmv2_json_path(program),
            device_id=0,
        )
        routes = [
            fy.P4TableEntry(
                "ipv4_routes",
                match=fy.Match(dst_addr=f"{ip}/32"),
                action=fy.Action("forward", port=port, src_mac=SWITCH_MAC, dst_mac=mac),
            )
            for ip, mac, port, _gw in HOSTS.values()
        ]
        h1, h2 = net.get("h1"), net.get("h2")
        assert received(h1.cmd("ping -c 2 -W 1 10.0.2.2")) == 0, "ping passed with no routes"
        session.insert(*routes)
        out = h1.cmd("ping -c 3 -i 0.2 -W 2 10.0.2.2")
        assert received(out) == 3, out
        assert received(h2.cmd("ping -c 2 -i 0.2 -W 2 10.0.1.1")) == 2
        session.delete(*routes)
        assert received(h1.cmd("ping -c 2 -W 1 10.0.2.2")) == 0, "ping passed after delete"
    finally:
        if session is not None:
            session.close()
        net.stop()
