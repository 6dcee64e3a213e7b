"""Classify the TCP packets towards a server port in pcaps (tshark needed): first and
retried SYNs, new and retransmitted data, FINs, pure ACKs, per second.

``python scripts/tcp_pcap_classes.py client.pcap server.pcap [--port 5001]``

How the session-control traces were taken (docs/session-control.md): while a BMv2 run of
experiments/session-control.toml holds the lab lock, ``nsenter -t <pid> -n dumpcap -q
-i any -s 100 -w client.pcap`` with the PID of the lab's traffic client (and of the
server, for server.pcap).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections import Counter

from tshark_fields import rows

FIELDS = ("frame.time_relative", "tcp.srcport", "tcp.flags", "tcp.seq_raw", "tcp.len")


def classify(pcap: str, port: int) -> tuple[Counter[str], float]:
    counts: Counter[str] = Counter()
    syns: Counter[str] = Counter()
    seen: dict[str, set[str]] = {}
    t_end = 0.0
    for t, sport, flags_hex, seq, length in rows(pcap, FIELDS, f"tcp.dstport=={port}"):
        t_end = max(t_end, float(t))
        flags = int(flags_hex, 16)
        if flags & 0x02:
            syns[sport] += 1
            counts["syn_first" if syns[sport] == 1 else "syn_retry"] += 1
            continue
        s = seen.setdefault(sport, set())
        if int(length) > 0:
            counts["data_retx" if seq in s else "data_new"] += 1
            s.add(seq)
            if flags & 0x01:
                counts["fin_with_data"] += 1
        elif flags & 0x01:
            counts["fin_retx" if f"fin{seq}" in s else "fin"] += 1
            s.add(f"fin{seq}")
        else:
            counts["pure_ack"] += 1
    return counts, t_end


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("pcaps", nargs="+")
    p.add_argument("--port", type=int, default=5001)
    args = p.parse_args(argv)
    for pcap in args.pcaps:
        try:
            counts, t = classify(pcap, args.port)
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"tcp_pcap_classes: {pcap}: {exc}", file=sys.stderr)
            return 2
        total = sum(v for k, v in counts.items() if k != "fin_with_data")
        t = max(t, 1e-9)
        print(f"{pcap}: {total} packets over {t:.1f} s = {total / t:.0f}/s")
        for k, v in sorted(counts.items()):
            print(f"  {k:14s} {v:7d} {v / t:7.1f}/s {v / max(total, 1):6.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
