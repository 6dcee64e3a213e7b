"""The controller against simple_switch_grpc (issue #4): it computes and
installs a rate from real counters, data packets come out stamped with it,
a switch restart gets its state back, and a backup controller never writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import finsy as fy
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from fairgate_controller.sync_client import SyncSwitch
from fairgate_controller.telemetry import queue_buckets, uniform_queue_buckets
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g
from fairgate_p4.header import RateHeader
from fairgate_p4.scapy_layer import FgRate
from fairgate_topo.netns_switch import NetnsSwitch

from .nsio import send_and_capture, send_paced

SWITCH_MAC = "02:fa:00:00:00:01"
H2_MAC = "00:00:00:00:00:02"
QUEUE_PPS = 100  # the bottleneck: port 2 forwards 100 packets/s
PKT_PAYLOAD = 900
CAPACITY_KBPS = 800  # ~ QUEUE_PPS x 1000-byte frames


def data_frame(rate_kbps: int, payload: int = PKT_PAYLOAD, rtt_us: int = 50_000) -> bytes:
    return bytes(
        Ether(src="00:00:00:00:00:01", dst=SWITCH_MAC)
        / IP(src="10.0.1.1", dst="10.0.2.2")
        / UDP(sport=40000, dport=g.FG_UDP_PORT)
        / FgRate(rate_kbps=rate_kbps, rtt_us=rtt_us)
        / Raw(b"d" * payload)
    )


def write_topology(sw: NetnsSwitch, path: Path) -> None:
    path.write_text(
        json.dumps(
            {
                "switches": [
                    {
                        "name": "s1",
                        "grpc_addr": sw.grpc_address,
                        "device_id": 0,
                        "thrift_port": sw.thrift_port,
                        "mac": SWITCH_MAC,
                    }
                ],
                "hosts": [
                    {
                        "name": "h1",
                        "ip": "10.0.1.1",
                        "mac": "00:00:00:00:00:01",
                        "switch": "s1",
                        "port": 1,
                        "capacity_kbps": 100_000,
                    },
                    {
                        "name": "h2",
                        "ip": "10.0.2.2",
                        "mac": H2_MAC,
                        "switch": "s1",
                        "port": 2,
                        "capacity_kbps": CAPACITY_KBPS,
                        "queue_rate_pps": QUEUE_PPS,
                    },
                ],
            }
        )
    )


class Controller:
    def __init__(self, topo: Path, log: Path, *args: str) -> None:
        self.log = log
        cmd = [
            sys.executable,
            "-m",
            "fairgate_controller",
            "--topo",
            str(topo),
            "--no-live",
            "--log-level",
            "INFO",
            *args,
        ]
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def switch(tmp_path: Path) -> Iterator[NetnsSwitch]:
    with NetnsSwitch(log_dir=tmp_path / "switch", ports=2) as sw:
        yield sw


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def feedback(reader: SyncSwitch) -> dict[int, tuple[int, int]]:
    out = {}
    for e in reader.read(fy.P4TableEntry(g.TABLE_PORT_FEEDBACK)):
        out[int(e.match["egress_port"])] = (
            int(e.action.args["fair_rate_kbps"]),
            int(e.action.args["congested"]),
        )
    return out


def reader_for(sw: NetnsSwitch) -> SyncSwitch:
    """A low-election-id client: reads only (it never pushes: the pipeline matches)."""
    return SyncSwitch(
        sw.grpc_address,
        artifacts.p4info_path(),
        artifacts.bmv2_json_path(),
        election_id=1,
        name="reader",
    )


def test_rate_from_real_counters_is_stamped_and_survives_a_switch_restart(
    switch: NetnsSwitch, tmp_path: Path
) -> None:
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    records = tmp_path / "records.jsonl"
    ctl = Controller(
        topo,
        tmp_path / "controller.log",
        "--algo",
        "qfcp",
        "--period",
        "0.1",
        "--election-id",
        "20",
        "--records",
        str(records),
    )
    try:
        wait_for(lambda: "s1: installed" in ctl.text(), 20, "the controller to install")
        switch.switch_cli([f"set_queue_rate {QUEUE_PPS} 2"])
        # 2.5x the port's capacity for 3 s: QFCP must settle well below C.
        send_paced(
            switch, 1, data_frame(1_000_000), pps=2.5 * QUEUE_PPS, count=int(7.5 * QUEUE_PPS)
        )
        with reader_for(switch) as reader:
            rate, _congested = feedback(reader)[2]
        assert 0 < rate < CAPACITY_KBPS, f"rate {rate} kbit/s after overload"
        recs = [json.loads(line) for line in records.read_text().splitlines()]
        loaded = [r for r in recs if r["port"] == 2 and r["y_Bps"] > 0]
        assert loaded and max(r["y_Bps"] for r in loaded) > CAPACITY_KBPS * 125
        assert any(r["drop_pkts"] > 0 for r in loaded)
        assert any(r["rtt_mean_s"] and 0.04 < r["rtt_mean_s"] < 0.065 for r in loaded)

        out = send_and_capture(switch, 1, 2, data_frame(1_000_000, payload=100))
        assert out, "no packet came out of port 2"
        stamped = RateHeader.unpack(out[42:])
        with reader_for(switch) as reader:
            now_rate = feedback(reader)[2][0]
        assert stamped.rate_kbps in (rate, now_rate) or stamped.rate_kbps <= CAPACITY_KBPS
        assert stamped.rate_kbps < 1_000_000

        # Restart the switch: the controller reconnects, pushes the pipeline
        # and restores the routes and the last rates.
        last = now_rate
        switch.restart_switch()
        wait_for(lambda: ctl.text().count("s1: installed") >= 2, 30, "the controller to reinstall")
        with reader_for(switch) as reader:
            restored = feedback(reader)
            routes = reader.read(fy.P4TableEntry(g.TABLE_IPV4_ROUTES))
        assert len(routes) == 2
        assert 0 < restored[2][0] <= max(last, CAPACITY_KBPS)
        out = send_and_capture(switch, 1, 2, data_frame(1_000_000, payload=100))
        assert out and RateHeader.unpack(out[42:]).rate_kbps <= CAPACITY_KBPS
        assert ctl.proc.poll() is None, "the controller died"
    finally:
        ctl.stop()
    assert ctl.proc.returncode == 0, ctl.text()[-2000:]


def test_backup_controller_does_not_write(switch: NetnsSwitch, tmp_path: Path) -> None:
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    primary = Controller(topo, tmp_path / "primary.log", "--algo", "qfcp", "--election-id", "20")
    backup = None
    try:
        wait_for(lambda: "s1: installed" in primary.text(), 20, "the primary to install")
        with reader_for(switch) as reader:
            before = feedback(reader)
        assert sorted(before) == [1, 2]
        # --algo none would delete every port_feedback entry if it could write.
        backup = Controller(topo, tmp_path / "backup.log", "--algo", "none", "--election-id", "10")
        wait_for(lambda: "backup controller" in backup.text(), 20, "the backup to notice")
        time.sleep(1.5)
        with reader_for(switch) as reader:
            assert sorted(feedback(reader)) == [1, 2]
        assert "s1: installed" not in backup.text()
        assert backup.proc.poll() is None
    finally:
        if backup is not None:
            backup.stop()
        primary.stop()


def test_bad_topology_is_refused_with_a_clear_error(tmp_path: Path) -> None:
    topo = tmp_path / "topo.json"
    topo.write_text(json.dumps({"switches": [], "hosts": [], "links": []}))
    proc = subprocess.run(
        [sys.executable, "-m", "fairgate_controller", "--topo", str(topo)],
        capture_output=True,
        text=True,
        timeout=30,
        env=os.environ,
    )
    assert proc.returncode == 2
    assert "no switches" in proc.stderr


def queue_ranges(reader: SyncSwitch) -> list[tuple[int, int, int]]:
    out = []
    for e in reader.read(fy.P4TableEntry(g.TABLE_QUEUE_BUCKETS)):
        lo, hi = e.match["enq_qdepth"]
        out.append((int(lo), int(hi), int(e.action.args["bucket"])))
    return sorted(out)


def test_queue_buckets_follow_the_algorithm_and_bin_real_queues(
    switch: NetnsSwitch, tmp_path: Path
) -> None:
    """QFCP installs the uniform queue buckets; a Lestas controller started next
    replaces them with q_ref-sized ones (BMv2 takes the ranges), and a real
    queue on port 2 is binned by them."""
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    qfcp = Controller(topo, tmp_path / "qfcp.log", "--algo", "qfcp", "--election-id", "20")
    try:
        wait_for(lambda: "s1: installed" in qfcp.text(), 20, "the QFCP controller to install")
        with reader_for(switch) as reader:
            assert queue_ranges(reader) == uniform_queue_buckets(64).ranges()
    finally:
        qfcp.stop()
    lestas_log = tmp_path / "lestas.log"
    lestas = Controller(
        topo, lestas_log, "--algo", "lestas", "--q-ref", "10", "--election-id", "20"
    )
    try:
        wait_for(lambda: "s1: installed" in lestas.text(), 20, "the Lestas controller to install")
        qb = queue_buckets(64, 10.0)
        with reader_for(switch) as reader:
            assert queue_ranges(reader) == qb.ranges()
            before = reader.read_counters(g.COUNTER_QUEUE_DEPTH_HIST)
        # 40 packets at 1000/s into a 100 packets/s queue: it grows to ~36.
        switch.switch_cli([f"set_queue_rate {QUEUE_PPS} 2"])
        send_paced(switch, 1, data_frame(1_000_000), pps=1000, count=40)
        time.sleep(40 / QUEUE_PPS + 0.5)
        with reader_for(switch) as reader:
            after = reader.read_counters(g.COUNTER_QUEUE_DEPTH_HIST)
        base = 2 << g.FG_HIST_BUCKET_BITS
        counts = [
            after.get(base + b, (0, 0))[0] - before.get(base + b, (0, 0))[0]
            for b in range(g.FG_HIST_BUCKETS)
        ]
        assert sum(counts) == 40, counts
        assert counts[0] >= 1 and counts[-1] == 0, counts  # empty at first; never full
        top = max(b for b, n in enumerate(counts) if n)
        assert qb.bucket_of(25) <= top <= qb.bucket_of(40), counts
        # 2-packet buckets: no bucket gets more than a few packets of a steady ramp.
        assert max(counts[1:top]) <= 4, counts
    finally:
        lestas.stop()
    assert lestas.proc.returncode == 0, lestas.text()[-2000:]


def test_ficcrd_registers_are_read_over_thrift(switch: NetnsSwitch) -> None:
    """The agent's FICCRD register read (thrift_cli.read_registers) against the real
    simple_switch_CLI output: the values the switch holds, at their ports."""
    from fairgate_controller import ficcrd as fc
    from fairgate_controller.thrift_cli import read_registers

    primary = SyncSwitch(
        switch.grpc_address, artifacts.p4info_path(), artifacts.bmv2_json_path(), name="primary"
    )
    with primary:  # pushes the pipeline
        switch.switch_cli(
            ["register_write ficcrd_mapr 2 4321", "register_write ficcrd_queue_seen 2 37"]
        )
        regs = read_registers(switch.thrift_port, list(fc.REGISTERS))
    assert len(regs["ficcrd_mapr"]) == len(regs["ficcrd_queue_seen"]) == g.FG_MAX_PORTS
    assert regs["ficcrd_mapr"][2] == 4321 and regs["ficcrd_queue_seen"][2] == 37
    assert regs["ficcrd_mapr"][1] == 0
