"""The timing noise of a paced flow, from a pcap: how far its packets' gaps stray from the
flow's period. For the lab's noise (docs/labs/cm-droptail.md, "How much the CM verdicts
rest on timing noise"): capture a paced CBR at its sender, at its receiver behind an idle
port and behind a saturated one (there the gaps are the port's service).

``python scripts/pcap_jitter.py x1.pcap r1.pcap [--min-len 1000]`` (tshark needed)

How the lab's captures were taken: while a BMv2 run holds the lab lock, ``nsenter -t <pid>
-n dumpcap -q -i <host>-eth0 -s 128 -a duration:20 -w <host>.pcap`` with the PID of the
host's Mininet shell (``mininet:<host>``).
"""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
from dataclasses import dataclass

from tshark_fields import rows, tshark_missing


@dataclass(frozen=True)
class Noise:
    """Per flow: packets, the period (median gap) and the gaps' deviation from it, ms."""

    packets: int
    period_ms: float
    sd_ms: float
    p1_ms: float
    p99_ms: float

    @property
    def uniform_equivalent_ms(self) -> float:
        """The bound of a uniform [0, j] delay per packet with these gaps' spread: each gap
        is the difference of two independent delays, whose sd is j / sqrt(6)."""
        return self.sd_ms * math.sqrt(6)


def noise(times_s: list[float]) -> Noise:
    """The gaps' deviation from their median, for arrival times in order."""
    if len(times_s) < 3:
        raise ValueError(f"{len(times_s)} packets: need at least 3 to measure gaps")
    gaps = [b - a for a, b in zip(times_s, times_s[1:], strict=False)]
    if min(gaps) < 0:
        raise ValueError("the times are not in order")
    period = statistics.median(gaps)
    dev = [(g - period) * 1e3 for g in gaps]
    q = statistics.quantiles(dev, n=100) if len(dev) >= 2 else [dev[0]] * 99
    return Noise(len(times_s), period * 1e3, statistics.pstdev(dev), q[0], q[98])


def pcap_times(pcap: str, min_len: int) -> list[float]:
    """Arrival times of the UDP frames of at least ``min_len`` bytes (the data, not acks)."""
    return [float(t) for (t,) in rows(pcap, ["frame.time_epoch"], f"udp && frame.len >= {min_len}")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pcaps", nargs="+")
    ap.add_argument("--min-len", type=int, default=1000, help="data frames' least size (B)")
    args = ap.parse_args(argv)
    if tshark_missing("pcap_jitter"):
        return 2
    for pcap in args.pcaps:
        try:
            n = noise(pcap_times(pcap, args.min_len))
        except (ValueError, subprocess.CalledProcessError) as e:
            print(f"pcap_jitter: {pcap}: {e}", file=sys.stderr)
            return 2
        print(
            f"{pcap}: {n.packets} packets, period {n.period_ms:.3f} ms, gap - period: "
            f"sd {n.sd_ms:.3f} ms, p1 {n.p1_ms:.3f}, p99 {n.p99_ms:.3f} ms; "
            f"as uniform [0, j] per packet: j = {n.uniform_equivalent_ms:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
