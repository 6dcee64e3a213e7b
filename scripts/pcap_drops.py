"""Which of a TCP flow's data packets a bottleneck dropped, by how they were sent (tshark needed).

``python scripts/pcap_drops.py --sent h1.pcap h2.pcap --received r1.pcap r2.pcap``

Captures at the senders (``--sent``) and at the receivers (``--received``) of the same
run; every host of a lab shares the machine's clock. A data segment (TCP payload > 0) is
one packet by (flow, IP ID, sequence number): Linux numbers the IP IDs of a connected
socket's packets in order, so a resend is a packet of its own. A packet sent and never
received was dropped on the way. Per flow the table gives packets sent, dropped and the
drop rate, split by the gap since the flow's previous data packet (a packet sent back to
back with the one before it, within ``--burst`` ms, is part of a burst) and by first
sends against resends. Flows are named by their ports (``--min-packets`` hides the rest).

How the Fig. 3 captures were taken (docs/labs/cm-droptail.md): while a BMv2 run holds the
lab lock, ``nsenter -t <pid> -n dumpcap -q -i <host>-eth0 -s 96 -a duration:<s> -w
<host>.pcap`` with the PID of each host's Mininet shell (``mininet:<host>``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field

from tshark_fields import rows, tshark_missing

FIELDS = ("frame.time_epoch", "ip.src", "tcp.srcport", "ip.dst", "tcp.dstport", "ip.id")
FIELDS += ("tcp.seq_raw", "tcp.len")


@dataclass(frozen=True, slots=True)
class Packet:
    """One TCP data packet as captured: its flow, identity and time."""

    t_s: float
    flow: str
    ip_id: int
    seq: int


@dataclass
class FlowDrops:
    """A flow's packets sent and dropped, in total and per class."""

    sent: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)

    def rate(self, cls: str) -> float | None:
        return self.dropped[cls] / self.sent[cls] if self.sent[cls] else None


CLASSES = ("all", "burst", "spaced", "first", "resend")


def drops(
    sent: list[Packet], received: set[tuple[str, int, int]], burst_s: float
) -> dict[str, FlowDrops]:
    """Per flow: each sent packet counted as ``all``, ``burst`` (sent within ``burst_s`` of
    the flow's previous data packet) or ``spaced``, and ``first`` or ``resend`` (its
    sequence number sent before); dropped when (flow, IP ID, seq) is not in ``received``."""
    out: dict[str, FlowDrops] = {}
    last: dict[str, float] = {}
    seqs: dict[str, set[int]] = {}
    for p in sorted(sent, key=lambda p: p.t_s):
        fd = out.setdefault(p.flow, FlowDrops())
        prev = last.get(p.flow)
        last[p.flow] = p.t_s
        seen = seqs.setdefault(p.flow, set())
        classes = ["all"]
        if prev is not None:
            classes.append("burst" if p.t_s - prev < burst_s else "spaced")
        classes.append("resend" if p.seq in seen else "first")
        seen.add(p.seq)
        lost = (p.flow, p.ip_id, p.seq) not in received
        for c in classes:
            fd.sent[c] += 1
            fd.dropped[c] += lost
    return out


def read(pcap: str) -> list[Packet]:
    pkts = []
    for t, src, sport, dst, dport, ip_id, seq, _ in rows(pcap, FIELDS, "tcp.len > 0"):
        flow = f"{src}:{sport}->{dst}:{dport}"
        pkts.append(Packet(float(t), flow, int(ip_id, 0), int(seq)))
    return pkts


def _fmt(fd: FlowDrops, cls: str) -> str:
    r = fd.rate(cls)
    return "-" if r is None else f"{fd.dropped[cls]}/{fd.sent[cls]} ({100 * r:.2f} %)"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pcap_drops.py", description=__doc__.splitlines()[0])
    p.add_argument("--sent", nargs="+", required=True, help="pcaps taken at the senders")
    p.add_argument("--received", nargs="+", required=True, help="pcaps taken at the receivers")
    p.add_argument("--burst", type=float, default=1.0, help="back-to-back within B ms (1)")
    p.add_argument("--tail", type=float, default=5.0, help="ignore the last T s sent (5)")
    p.add_argument("--min-packets", type=int, default=100, help="hide smaller flows (100)")
    args = p.parse_args(argv)
    if tshark_missing("pcap_drops.py"):
        return 2
    try:
        sent = [pkt for f in args.sent for pkt in read(f)]
        rx = [pkt for f in args.received for pkt in read(f)]
    except subprocess.CalledProcessError as e:
        print(f"pcap_drops.py: {e.cmd[2]}: {e.stderr.strip()}", file=sys.stderr)
        return 2
    if not sent or not rx:
        print("pcap_drops.py: no TCP data packets in the captures", file=sys.stderr)
        return 1
    received = {(pkt.flow, pkt.ip_id, pkt.seq) for pkt in rx}
    # the captures start and stop apart: judge only the sends whose arrival rx would see
    lo, hi = min(pkt.t_s for pkt in rx), max(pkt.t_s for pkt in rx) - args.tail
    table = drops([s for s in sent if lo <= s.t_s <= hi], received, args.burst / 1e3)
    print("flow," + ",".join(CLASSES))
    for flow, fd in sorted(table.items()):
        if fd.sent["all"] >= args.min_packets:
            print(flow + "," + ",".join(_fmt(fd, c) for c in CLASSES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
