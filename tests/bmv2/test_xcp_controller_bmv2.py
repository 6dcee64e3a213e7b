"""XCP's control plane against simple_switch_grpc (issue #14): the controller
(--algo xcp) installs the histogram bounds and factors, reads xcp_ratio_hist
and writes each port's factors every average RTT; an overloaded port gets a
negative part, and an XCP data packet leaves stamped with exactly what
fairgate_p4.xcp_math computes from the factors on the switch."""

from __future__ import annotations

import json
from pathlib import Path

import finsy as fy
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from fairgate_controller.sync_client import SyncSwitch
from fairgate_p4 import generated as g
from fairgate_p4 import xcp_math as xm
from fairgate_p4.header import XcpHeader
from fairgate_p4.scapy_layer import FgRate, FgXcp
from fairgate_topo.netns_switch import NetnsSwitch

from .nsio import send_and_capture, send_paced
from .test_controller_bmv2 import (
    QUEUE_PPS,
    SWITCH_MAC,
    Controller,
    reader_for,
    switch,  # noqa: F401 (fixture)
    wait_for,
    write_topology,
)

RTT_S = 0.05
CWND = 15_000
FRAME = 1000
HEADERS = 14 + 20 + 8 + g.FG_HEADER_BYTES + g.FG_XCP_HEADER_BYTES


def xcp_frame(rtt_s: float = RTT_S) -> bytes:
    lg_pos, lg_neg = xm.sender_terms(rtt_s, FRAME, CWND)
    return bytes(
        Ether(src="00:00:00:00:00:01", dst=SWITCH_MAC)
        / IP(src="10.0.1.1", dst="10.0.2.2")
        / UDP(sport=40000, dport=g.FG_UDP_PORT)
        / FgRate(kind=g.FG_KIND_XCP_DATA, rtt_us=int(rtt_s * 1e6))
        / FgXcp(cwnd_bytes=CWND, feedback=g.FG_XCP_FEEDBACK_UNLIMITED, lg_pos=lg_pos, lg_neg=lg_neg)
        / Raw(b"x" * (FRAME - HEADERS))
    )


def factors(reader: SyncSwitch) -> dict[int, tuple[int, int]]:
    return {
        int(e.match["egress_port"]): (
            xm.from_u16(int(e.action.args["lg_xi_p"])),
            xm.from_u16(int(e.action.args["lg_xi_n"])),
        )
        for e in reader.read(fy.P4TableEntry(g.TABLE_XCP_FACTORS))
    }


def test_xcp_factors_from_real_counters_and_stamped(switch: NetnsSwitch, tmp_path: Path) -> None:  # noqa: F811
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    records = tmp_path / "records.jsonl"
    ctl = Controller(
        topo,
        tmp_path / "controller.log",
        "--algo",
        "xcp",
        "--election-id",
        "20",
        "--records",
        str(records),
    )
    try:
        wait_for(lambda: "s1: installed" in ctl.text(), 20, "the controller to install")
        switch.switch_cli([f"set_queue_rate {QUEUE_PPS} 2"])
        with reader_for(switch) as reader:
            idle = factors(reader)
            buckets = reader.read(fy.P4TableEntry(g.TABLE_XCP_RATIO_BUCKETS))
        assert sorted(idle) == [1, 2]
        assert idle[2][1] == xm.LG_NONE  # idle: positive part only
        assert len(buckets) == g.FG_XCP_HIST_BUCKETS - 1
        # 2.5x the port's capacity for 3 s
        send_paced(switch, 1, xcp_frame(), pps=2.5 * QUEUE_PPS, count=int(7.5 * QUEUE_PPS))
        recs = [json.loads(line) for line in records.read_text().splitlines()]
        updates = [r for r in recs if r["port"] == 2 and "xcp_lg_xi_n" in r]
        loaded = [r for r in updates if r["xcp_sum_s_bytes"] > 0]
        assert loaded, "no XCP update saw the XCP packets"
        # the histogram's bytes are the frames (exact), its RTT the carried one
        assert all(r["xcp_sum_s_bytes"] % FRAME == 0 for r in loaded)
        assert any(0.04 < r["xcp_d_s"] < 0.065 for r in loaded)
        # each update came one port RTT after the last (the loop ticks at d/2)
        gaps = [r["xcp_interval_s"] for r in loaded[1:]]
        assert gaps and sorted(gaps)[len(gaps) // 2] < 3 * RTT_S
        # overloaded: phi < 0 and a negative part was written
        assert any(r["xcp_phi_bytes"] < 0 and r["xcp_lg_xi_n"] != xm.LG_NONE for r in loaded)
        # sum(rtt s / cwnd) from the histogram, within its bucket error
        per_pkt = RTT_S * FRAME / CWND
        ratio = [
            r["xcp_sum_rtt_s_over_cwnd"] / (r["xcp_sum_s_bytes"] / FRAME * per_pkt) for r in loaded
        ]
        bound = xm.RatioBuckets().relative_error_bound()
        assert all(abs(x - 1) <= bound for x in ratio), ratio

        assert ctl.proc.poll() is None, "the controller died"
        # one packet, the controller stopped (its factors change every d): stamped
        # with the model's value for the factors it left on the switch
        ctl.stop()
        assert ctl.proc.returncode == 0, ctl.text()[-2000:]
        with reader_for(switch) as reader:
            lg_xi_p, lg_xi_n = factors(reader)[2]
        out = send_and_capture(switch, 1, 2, xcp_frame())
        assert out, "no packet came out of port 2"
        got = XcpHeader.unpack(out, HEADERS - g.FG_XCP_HEADER_BYTES).feedback
        lg_pos, lg_neg = xm.sender_terms(RTT_S, FRAME, CWND)
        fb = xm.switch_feedback(lg_pos, lg_neg, lg_xi_p, lg_xi_n)
        assert got == xm.stamp(g.FG_XCP_FEEDBACK_UNLIMITED, fb)
    finally:
        ctl.stop()
    assert ctl.proc.returncode == 0, ctl.text()[-2000:]
