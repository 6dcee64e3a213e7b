"""Three BMv2 switches in a row, each with a different fair rate on the port
towards the receiver: a real Linux receiver (a UDP socket, so the kernel
checks the UDP checksum after every rewrite) gets the minimum (issue #3)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import finsy as fy

from fairgate_controller.sync_client import SyncSwitch
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g

SWITCH_MAC = "02:fa:00:00:00:01"
H1 = ("10.0.1.1", "00:00:00:00:01:01")
H2 = ("10.0.2.2", "00:00:00:00:02:02")
FAIR_RATES = (8_000, 3_000, 5_000)  # s1, s2, s3 towards h2 (kbit/s)

RECEIVER = """
import json, socket, sys
from fairgate_p4.header import RateHeader
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", {port}))
s.settimeout(10)
out = []
for _ in range({count}):
    data, _addr = s.recvfrom(2048)
    h = RateHeader.unpack(data)
    out.append({{"rate": h.rate_kbps, "flags": h.flags, "kind": h.kind, "seq": h.seq}})
print(json.dumps(out))
"""

SENDER = """
import socket, time
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for seq, (kind, rate) in enumerate({packets}):
    s.sendto(RateHeader(kind=kind, seq=seq, rate_kbps=rate).pack() + b"payload", ("{dst}", {port}))
    time.sleep(0.05)
"""


def test_receiver_gets_the_minimum_rate(tmp_path: Path) -> None:
    from mininet.net import Mininet

    from fairgate_topo.bmv2 import Bmv2Switch, free_tcp_ports

    net = Mininet(controller=None, build=False, autoSetMacs=False)
    sessions: list[SyncSwitch] = []
    ports = iter(free_tcp_ports(6))
    try:
        switches = [
            net.addSwitch(
                f"s{i}",
                cls=Bmv2Switch,
                device_id=0,
                grpc_port=next(ports),
                thrift_port=next(ports),
                log_dir=tmp_path,
            )
            for i in (1, 2, 3)
        ]
        h1 = net.addHost("h1", ip=f"{H1[0]}/24", mac=H1[1])
        h2 = net.addHost("h2", ip=f"{H2[0]}/24", mac=H2[1])
        net.addLink(h1, switches[0], port2=1)
        net.addLink(switches[0], switches[1], port1=2, port2=1)
        net.addLink(switches[1], switches[2], port1=2, port2=1)
        net.addLink(switches[2], h2, port1=2)
        net.build()
        net.start()
        for host, gw in ((h1, "10.0.1.254"), (h2, "10.0.2.254")):
            host.cmd(f"ip route add default via {gw}")
            host.setARP(gw, SWITCH_MAC)
            host.cmd(f"ethtool -K {host.defaultIntf()} tx off rx off tso off gso off gro off")

        for i, (sw, rate) in enumerate(zip(switches, FAIR_RATES, strict=True)):
            p4 = SyncSwitch(
                sw.grpc_address,
                artifacts.p4info_path("fairgate"),
                artifacts.bmv2_json_path("fairgate"),
                name=sw.name,
            )
            sessions.append(p4)
            last = i == len(switches) - 1
            p4.insert(
                fy.P4TableEntry(
                    "ipv4_routes",
                    match=fy.Match(dst_addr=f"{H2[0]}/32"),
                    action=fy.Action(
                        "forward", port=2, src_mac=SWITCH_MAC, dst_mac=H2[1] if last else SWITCH_MAC
                    ),
                ),
                fy.P4TableEntry(
                    "ipv4_routes",
                    match=fy.Match(dst_addr=f"{H1[0]}/32"),
                    action=fy.Action(
                        "forward",
                        port=1,
                        src_mac=SWITCH_MAC,
                        dst_mac=H1[1] if i == 0 else SWITCH_MAC,
                    ),
                ),
                fy.P4TableEntry(
                    "port_feedback",
                    match=fy.Match(egress_port=2),
                    action=fy.Action(
                        "set_port_feedback", fair_rate_kbps=rate, congested=int(i == 1)
                    ),
                ),
            )

        packets = [
            (g.FG_KIND_DATA, 50_000),
            (g.FG_KIND_DATA, 1_000),
            (g.FG_KIND_DATA, g.FG_RATE_UNLIMITED),
            (g.FG_KIND_ACK, 50_000),
        ]
        receiver = h2.popen(
            [sys.executable, "-c", RECEIVER.format(port=g.FG_UDP_PORT, count=len(packets))]
        )
        h1.cmd("sleep 0.5")
        sender = h1.popen(
            [sys.executable, "-c", SENDER.format(packets=packets, dst=H2[0], port=g.FG_UDP_PORT)]
        )
        assert sender.wait(timeout=15) == 0
        out, _err = receiver.communicate(timeout=15)
        got = json.loads(out)
        assert [p["rate"] for p in got] == [3_000, 1_000, 3_000, 50_000]
        # s2's port is congested: data packets carry the flag, the ack does not.
        assert [p["flags"] & g.FG_FLAG_CONGESTED for p in got] == [1, 1, 1, 0]
    finally:
        for p4 in sessions:
            p4.close()
        net.stop()
