"""The delay line between two namespaces (a - d - b, root only): ping RTT rises
by twice the one-way delay, a TCP transfer arrives byte-exact, every frame is
accounted for, and the PID file is gone after SIGTERM."""

from __future__ import annotations

import hashlib
import json
import os
import random
import statistics
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairgate_hosts.netns import netns_unavailable_reason
from fairgate_topo.delaychain import DelayChain, exit_counts, ping_rtts_ms

REASON = netns_unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

# Added RTT = 2 x delay within this (median over 50 pings vs the same path at 0 ms).
TOLERANCE_MS = 1.0
SINK = r"""
import hashlib, socket, sys
srv = socket.create_server(("0.0.0.0", int(sys.argv[1])))
srv.settimeout(20)
conn, _ = srv.accept()
h, n = hashlib.sha256(), 0
while data := conn.recv(1 << 16):
    h.update(data)
    n += len(data)
print(n, h.hexdigest(), flush=True)
"""
SOURCE = r"""
import random, socket, sys, time
data = random.Random(int(sys.argv[3])).randbytes(int(sys.argv[2]))
for _ in range(50):
    try:
        s = socket.create_connection((sys.argv[1], 5301), timeout=5)
        break
    except OSError:
        time.sleep(0.1)
s.sendall(data)
s.close()
"""


@pytest.fixture(scope="module")
def chain() -> Iterator[DelayChain]:
    ch = DelayChain(prefix=f"fgdl-{os.getpid()}")
    with ch:
        yield ch
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert ch.ns_a not in out and ch.ns_d not in out and ch.ns_b not in out


def link_counts(ns: str, dev: str) -> tuple[int, int]:
    """(tx_packets, rx_packets) of `dev` in namespace `ns`."""
    out = subprocess.run(
        ["ip", "-n", ns, "-j", "-s", "link", "show", dev], capture_output=True, text=True
    ).stdout
    stats = json.loads(out)[0]["stats64"]
    return int(stats["tx"]["packets"]), int(stats["rx"]["packets"])


def ping_ms(chain: DelayChain, count: int = 50) -> list[float]:
    out = subprocess.run(
        ["ip", "netns", "exec", chain.ns_a, "ping", "-n", "-c", str(count), "-i", "0.02",
         chain.addr_b],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    rtts = ping_rtts_ms(out)
    assert len(rtts) == count, out
    return rtts[1:]  # the first one includes ARP


def run_line(chain: DelayChain, tmp: Path, delay_ms: float, name: str) -> tuple[object, Path]:
    log, pid = tmp / f"{name}.log", tmp / f"{name}.pid"
    return chain.start_delay(delay_ms, log, pid), log


def test_ping_rtt_rises_by_twice_the_delay(chain: DelayChain, tmp_path: Path) -> None:
    medians = {}
    for delay in (0.0, 20.0):
        proc, log = run_line(chain, tmp_path, delay, f"ping{delay:g}")
        rtts = ping_ms(chain)
        assert chain.stop(proc) == 0  # type: ignore[arg-type]
        assert not (tmp_path / f"ping{delay:g}.pid").exists()
        counts = exit_counts(log)
        assert counts["ab"]["dropped_full"] == counts["ba"]["dropped_full"] == 0
        # Never early: every reply waited at least 2 x delay.
        assert min(rtts) >= 2 * delay, rtts
        medians[delay] = statistics.median(rtts)
    added = medians[20.0] - medians[0.0]
    assert abs(added - 40.0) <= TOLERANCE_MS, medians


def test_tcp_transfer_is_byte_exact_and_every_frame_is_accounted_for(
    chain: DelayChain, tmp_path: Path
) -> None:
    size, seed = 4_000_000, 7
    tx0_a, _ = link_counts(chain.ns_a, "veth0")
    _, rx0_b = link_counts(chain.ns_b, "veth0")
    proc, log = run_line(chain, tmp_path, 5.0, "tcp")
    server = subprocess.Popen(
        ["ip", "netns", "exec", chain.ns_b, "python3", "-c", SINK, "5301"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        src = subprocess.run(
            ["ip", "netns", "exec", chain.ns_a, "python3", "-c", SOURCE, chain.addr_b,
             str(size), str(seed)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert src.returncode == 0, src.stderr
        out, _ = server.communicate(timeout=30)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    want = hashlib.sha256(random.Random(seed).randbytes(size)).hexdigest()
    assert out.split() == [str(size), want]
    assert chain.stop(proc) == 0  # type: ignore[arg-type]
    assert not (tmp_path / "tcp.pid").exists()
    counts = exit_counts(log)
    tx_a = link_counts(chain.ns_a, "veth0")[0] - tx0_a
    rx_b = link_counts(chain.ns_b, "veth0")[1] - rx0_b
    ab, ba = counts["ab"], counts["ba"]
    # Every frame a sent was read once (no loop through our own sends), all of
    # them reached b, none was dropped, none was larger than a wire frame.
    assert ab["rx"] == tx_a and ab["tx"] == rx_b == ab["rx"], (counts, tx_a, rx_b)
    assert ab["rx"] > size / 1500
    assert ba["rx"] == ba["tx"] > 0
    assert counts["oversize"] == counts["truncated"] == counts["discarded_at_exit"] == 0
    assert counts["socket_drops"] == {"a": 0, "b": 0}
    assert ab["dropped_full"] + ab["tx_errors"] + ba["dropped_full"] + ba["tx_errors"] == 0


def test_missing_interface_is_a_clear_error(chain: DelayChain, tmp_path: Path) -> None:
    log = tmp_path / "bad.log"
    proc = chain.popen(
        chain.ns_d,
        ["python", "-m", "fairgate_topo.delayline", "--a", "da", "--b", "nope0", "--delay-ms", "1",
         "--pid-file", str(tmp_path / "bad.pid")],
        log,
    )  # fmt: skip
    assert proc.wait(10) == 2
    assert "no interface 'nope0' in this network namespace" in log.read_text()
    assert not (tmp_path / "bad.pid").exists()


def test_a_full_line_drops_counts_and_logs(chain: DelayChain, tmp_path: Path) -> None:
    # 5 frames per direction, 100 ms delay, a ping every 5 ms: ~20 in flight.
    log, pid = tmp_path / "full.log", tmp_path / "full.pid"
    proc = chain.start_delay(100.0, log, pid, ["--capacity", "5"])
    out = subprocess.run(
        ["ip", "netns", "exec", chain.ns_a, "ping", "-n", "-c", "100", "-i", "0.005", "-W", "1",
         chain.addr_b],
        capture_output=True, text=True, timeout=60,
    ).stdout  # fmt: skip
    assert chain.stop(proc) == 0
    counts = exit_counts(log)
    ab, ba = counts["ab"], counts["ba"]
    replies = len(ping_rtts_ms(out))
    assert ab["dropped_full"] > 0 and ab["max_pending"] == 5
    assert ab["rx"] + ab["dropped_full"] >= 100  # every request was either held or dropped
    assert ab["tx"] == ab["rx"] and ba["tx"] == ba["rx"] >= replies
    assert "lost" in log.read_text() and "buffer full" in log.read_text()
