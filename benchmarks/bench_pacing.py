"""Pacing accuracy of the UDP sender agent over a veth pair between two namespaces.

For 1, 10 and 50 Mbit/s the sender agent (fixed mode) paces to a small sink in the other
namespace that timestamps arrivals (kernel receive + Python wake-up jitter included, so gap
errors are an upper bound on the sender's) and acks every packet like the receiver agent.
Reports the mean rate error (frames over the run) and the p50/p99 inter-packet gap error
relative to the ideal gap.

TCP over CM: a kernel TCP upload (``fairgate_hosts.apps.tcp_cm --rate``) paced with
SO_MAX_PACING_RATE at 1/5/20/50 Mbit/s to ``fairgate_hosts.traffic.server``; goodput =
tcpi_bytes_acked over the run after a 1 s warm-up (payload bytes, which is what the kernel's
pacing counts). Writes results/bench/pacing.json (key ``tcp_over_cm`` for the TCP table).

Run as root: ``PYTHONPATH=hosts:p4src python3 benchmarks/bench_pacing.py``.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "hosts"), str(ROOT / "p4src")]

from benchlib import Headline, missing_netns, skip, write  # noqa: E402

from fairgate_hosts.netns import VethPair  # noqa: E402

RATES_MBPS = (1, 10, 50)
PACKET_BYTES = 1200
FRAME = PACKET_BYTES + 42
SINK = r"""
import socket, struct, sys, time
from fairgate_hosts.receiver import ReceiverCore
core = ReceiverCore()
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
sock.bind(("0.0.0.0", int(sys.argv[1])))
sock.settimeout(float(sys.argv[2]))
out = open(sys.argv[3], "wb")
try:
    while True:
        data, peer = sock.recvfrom(65535)
        now = time.monotonic_ns()
        out.write(struct.pack("!QI", now, len(data)))
        for act in core.on_datagram(data, now // 1000, peer):
            sock.sendto(act.data, act.peer)
except socket.timeout:
    pass
out.close()
"""


def percentile(xs: list[float], q: float) -> float:
    ys = sorted(xs)
    return ys[min(len(ys) - 1, int(q * (len(ys) - 1) + 0.5))]


def measure(lab: VethPair, mbps: int, seconds: float, work: Path) -> dict[str, float]:
    import struct

    port = 17000 + mbps
    arrivals = work / f"arr{mbps}.bin"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")
    sink = lab.popen(lab.ns_b, ["-c", SINK, str(port), "2.0", str(arrivals)], env=env)
    time.sleep(0.5)
    sender = lab.popen(
        lab.ns_a,
        [
            "-m",
            "fairgate_hosts.sender",
            "--dst",
            lab.addr_b,
            "--port",
            str(port),
            "--mode",
            "fixed",
            "--rate",
            str(mbps * 1000),
            "--duration",
            str(seconds),
            "--packet-bytes",
            str(PACKET_BYTES),
            "--give-up",
            "1000",
            "--log",
            os.devnull,
        ],
        env=env,
    )
    sender.wait(seconds + 30)
    sink.wait(30)
    raw = arrivals.read_bytes()
    recs = [struct.unpack_from("!QI", raw, i) for i in range(0, len(raw), 12)]
    times = [t / 1000.0 for t, _n in recs]  # us
    nbytes = sum(n + 42 for _t, n in recs[:-1])
    span = times[-1] - times[0]
    rate = nbytes * 8 / span  # Mbit/s (bytes*8/us)
    ideal_gap = FRAME * 8 / mbps  # us
    gaps = [b - a for a, b in itertools.pairwise(times)]
    gap_err = [abs(g - ideal_gap) / ideal_gap for g in gaps]
    return {
        "rate_mbps": mbps,
        "packets": len(recs),
        "measured_mbps": round(rate, 4),
        "mean_rate_error_pct": round(100 * abs(rate - mbps) / mbps, 3),
        "ideal_gap_us": round(ideal_gap, 2),
        "p50_gap_error_pct": round(100 * percentile(gap_err, 0.50), 2),
        "p99_gap_error_pct": round(100 * percentile(gap_err, 0.99), 2),
        "p99_gap_error_us": round(percentile(gap_err, 0.99) * ideal_gap, 1),
    }


TCP_RATES_MBPS = (1, 5, 20, 50)


def measure_tcp(lab: VethPair, mbps: int, seconds: float, work: Path) -> dict[str, float]:
    port = 5300 + mbps
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")
    server = lab.popen(
        lab.ns_b,
        ["-m", "fairgate_hosts.traffic.server", "--port", str(port), "--summary", os.devnull],
        env=env,
    )
    log = work / f"tcp{mbps}.jsonl"
    try:
        time.sleep(0.5)
        client = lab.popen(
            lab.ns_a,
            [
                "-m",
                "fairgate_hosts.apps.tcp_cm",
                "--dst",
                lab.addr_b,
                "--port",
                str(port),
                "--rate",
                str(mbps * 1000),
                "--duration",
                str(seconds + 1),
                "--skip",
                "1",
                "--log",
                str(log),
            ],
            env=env,
        )
        client.wait(seconds + 30)
    finally:
        lab.stop(server)
    done = json.loads(log.read_text().splitlines()[-1])
    flow = done["flows"][0]
    goodput = flow["steady_goodput_kbps"] / 1000
    return {
        "set_mbps": mbps,
        "goodput_mbps": round(goodput, 3),
        "error_pct": round(100 * (goodput - mbps) / mbps, 2),
        "retrans": flow["retrans"],
        "seconds": done["steady_s"],
    }


def print_table(rows: list[dict[str, float]], cols: tuple[str, ...]) -> None:
    print(" ".join(f"{c:>20}" for c in cols))
    for r in rows:
        print(" ".join(f"{r[c]!s:>20}" for c in cols))


def main() -> int:
    reason = missing_netns()
    if reason:
        return skip("pacing", reason)
    seconds = float(os.environ.get("FG_BENCH_SECONDS", "5"))
    results = []
    with VethPair(prefix=f"fgb-{os.getpid()}") as lab, tempfile.TemporaryDirectory() as tmp:
        for mbps in RATES_MBPS:
            results.append(measure(lab, mbps, seconds, Path(tmp)))
        tcp = [measure_tcp(lab, mbps, seconds, Path(tmp)) for mbps in TCP_RATES_MBPS]
    cols = (
        "rate_mbps",
        "measured_mbps",
        "mean_rate_error_pct",
        "ideal_gap_us",
        "p50_gap_error_pct",
        "p99_gap_error_pct",
        "p99_gap_error_us",
        "packets",
    )
    print("UDP sender agent pacing")
    print_table(results, cols)
    print("TCP over CM: SO_MAX_PACING_RATE, goodput vs set rate")
    print_table(tcp, ("set_mbps", "goodput_mbps", "error_pct", "retrans", "seconds"))
    worst = max(abs(float(r["mean_rate_error_pct"])) for r in results)
    worst_tcp = max(abs(float(r["error_pct"])) for r in tcp)
    out = write(
        "pacing",
        {
            "seconds": seconds,
            "packet_bytes": PACKET_BYTES,
            "frame_bytes": FRAME,
            "results": results,
            "tcp_over_cm": tcp,
        },
        headlines=[
            Headline("UDP pacer: worst mean rate error, 1-50 Mbit/s", worst, "%", 1.0, False),
            Headline("TCP over CM: worst goodput error vs set rate", worst_tcp, "%", 2.0, False),
        ],
    )
    print(f"wrote {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
