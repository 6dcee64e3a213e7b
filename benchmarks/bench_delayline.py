"""The userspace delay line (fairgate_topo.delayline) between two namespaces.

Accuracy and jitter: 200 pings (10 ms apart) a -> b through the line at one-way
delays of 0, 1, 10 and 50 ms; the added RTT is the mean minus the mean at 0 ms
(ideal: 2 x delay), min - 2D must never be negative (never early); jitter is
ping's mdev and p99 - median of the replies (those have 3 significant digits).
The line's own lateness (send time - due time, per frame) is reported too.

The line runs at SCHED_FIFO 10, as in the labs.

Packet rate: 64 B and 1514 B frames blasted from a (AF_PACKET, as fast as one
Python process sends) through the line at 1 ms; forwarded frames/s and what the
line lost (socket receive-buffer drops, buffer full).

Run as root: ``.venv/bin/python benchmarks/bench_delayline.py``.
Writes results/bench/delayline.json.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "topologies"), str(ROOT / "hosts")]

from benchlib import Headline, missing_netns, skip, write  # noqa: E402

from fairgate_topo.delaychain import DelayChain, exit_counts, ping_rtts_ms  # noqa: E402

DELAYS_MS = (0.0, 1.0, 10.0, 50.0)
PINGS = 200
BLAST_S = 3.0
ETHERTYPE = b"\x88\xb5"  # IEEE local experimental: b's stack ignores it
RT = ["--rt-priority", "10"]  # as in the labs (fairgate_topo.delaynodes)


def quantile(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * (len(ys) - 1) + 0.5))]


def accuracy(chain: DelayChain, tmp: Path) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    base = None
    for delay in DELAYS_MS:
        log = tmp / f"acc{delay:g}.log"
        proc = chain.start_delay(delay, log, tmp / f"acc{delay:g}.pid", RT)
        ping = ["ip", "netns", "exec", chain.ns_a, "ping", "-n", "-W", "2"]
        subprocess.run([*ping, "-c", "1", chain.addr_b], capture_output=True, timeout=10)  # ARP
        out = subprocess.run(
            [*ping, "-c", str(PINGS), "-i", "0.01", chain.addr_b],
            capture_output=True, text=True, timeout=120,
        ).stdout  # fmt: skip
        chain.stop(proc)
        # ping's summary has us resolution (per-reply times only 3 digits).
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", out)
        assert m is not None, out
        rmin, avg, rmax, mdev = (float(x) for x in m.groups())
        rmax_minus_2d = round(rmax - 2 * delay, 3)
        rtts = ping_rtts_ms(out)
        base = avg if base is None else base
        lat = exit_counts(log)["lateness"]
        rows.append(
            {
                "delay_ms": delay,
                "rtt_avg_ms": avg,
                "added_ms": round(avg - base, 3),
                "error_ms": round(avg - base - 2 * delay, 3),
                "rtt_min_ms": rmin,
                "rtt_min_minus_2d_ms": round(rmin - 2 * delay, 3),
                "rtt_max_minus_2d_ms": rmax_minus_2d,
                "jitter_mdev_ms": mdev,
                "rtt_p99_minus_median_ms": round(quantile(rtts, 0.99) - statistics.median(rtts), 3),
                "line_lateness_us": lat,
            }
        )
    return rows


def blast(chain: DelayChain, tmp: Path, frame_bytes: int) -> dict[str, object]:
    log = tmp / f"blast{frame_bytes}.log"
    proc = chain.start_delay(1.0, log, tmp / f"blast{frame_bytes}.pid", RT)
    frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + ETHERTYPE
    frame += bytes(frame_bytes - len(frame))
    sender = chain.popen(
        chain.ns_a,
        ["python", str(ROOT / "benchmarks" / "blast.py"), "veth0", frame.hex(), str(BLAST_S)],
        tmp / f"blaster{frame_bytes}.out",
    )
    sender.wait(BLAST_S + 30)
    time.sleep(0.5)
    chain.stop(proc)
    sent = int((tmp / f"blaster{frame_bytes}.out").read_text().split()[0])
    c = exit_counts(log)
    ab = c["ab"]
    return {
        "frame_bytes": frame_bytes,
        "offered_pps": round(sent / BLAST_S),
        "forwarded_pps": round(ab["tx"] / BLAST_S),
        "forwarded_mbps": round(ab["tx"] * frame_bytes * 8 / BLAST_S / 1e6, 1),
        "socket_drops": c["socket_drops"]["a"],
        "dropped_full": ab["dropped_full"],
        "lateness_us": c["lateness"],
    }


def main() -> int:
    reason = missing_netns()
    if reason:
        return skip("delayline", reason)
    with tempfile.TemporaryDirectory() as d, DelayChain() as chain:
        tmp = Path(d)
        acc = accuracy(chain, tmp)
        rates = [blast(chain, tmp, n) for n in (64, 1514)]
    print(f"{'delay':>6} {'avg RTT':>9} {'added':>8} {'error':>7} {'min-2D':>7} {'mdev':>6}"
          f" {'p99-p50':>8} {'line late p50/p99/max us':>26}")  # fmt: skip
    for r in acc:
        lat = r["line_lateness_us"]
        assert isinstance(lat, dict)
        print(
            f"{r['delay_ms']:>6g} {r['rtt_avg_ms']:>9.3f} {r['added_ms']:>8.3f}"
            f" {r['error_ms']:>7.3f} {r['rtt_min_minus_2d_ms']:>7.3f} {r['jitter_mdev_ms']:>6.3f}"
            f" {r['rtt_p99_minus_median_ms']:>8.3f}"
            f" {lat['p50_us']!s:>8}/{lat['p99_us']!s}/{lat['max_us']!s}"
        )
    for r in rates:
        print(
            f"{r['frame_bytes']:>5} B frames: offered {r['offered_pps']} pkt/s, forwarded "
            f"{r['forwarded_pps']} pkt/s ({r['forwarded_mbps']} Mbit/s), lost: "
            f"{r['socket_drops']} socket drops, {r['dropped_full']} buffer full"
        )
    worst = max(abs(float(r["error_ms"])) for r in acc if r["delay_ms"])
    write(
        "delayline",
        {"accuracy": acc, "rate": rates},
        headlines=[Headline("delay line: worst |added RTT - 2D|", worst, "ms", 0.2, False)],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
