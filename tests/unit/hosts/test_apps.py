"""Demo application CLIs on loopback: bulk flows sharing a macroflow, layered audio
following the CM's rate, TCP over CM."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairgate_hosts.apps.bulk import jain

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")


def free_port(kind: int) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def records(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def start(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", *args], env=ENV)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def receiver(request: pytest.FixtureRequest) -> Iterator[int]:
    port = free_port(socket.SOCK_DGRAM)
    extra = getattr(request, "param", [])
    proc = start(
        "fairgate_hosts.receiver",
        "--port",
        str(port),
        "--ack-delay-ms",
        "20",
        "--log",
        os.devnull,
        *extra,
    )
    time.sleep(0.4)
    yield port
    stop(proc)


def test_jain() -> None:
    assert jain([1, 1, 1]) == pytest.approx(1.0)
    assert jain([1, 0]) == pytest.approx(0.5)
    assert jain([]) is None and jain([0, 0]) is None


@pytest.mark.parametrize(
    "module", ["apps.bulk", "apps.audio", "apps.tcp_cm", "traffic.client", "traffic.server"]
)
def test_help(module: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", f"fairgate_hosts.{module}", "--help"],
        env=ENV,
        capture_output=True,
        text=True,
        timeout=20,
        check=True,
    ).stdout
    assert out.startswith("usage: python -m fairgate_hosts.")


def test_bulk_flows_share_the_macroflow(receiver: int, tmp_path: Path) -> None:
    log = tmp_path / "bulk.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fairgate_hosts.apps.bulk",
            "--dst",
            "127.0.0.1",
            "--port",
            str(receiver),
            "--flows",
            "3",
            "--weights",
            "1,1,2",
            "--duration",
            "2.5",
            "--max-rate",
            "2400",
            "--log",
            str(log),
        ],
        env=ENV,
        timeout=30,
        check=True,
    )
    done = records(log)[-1]
    assert done["type"] == "done"
    kbps = [done["flows"][k]["kbps"] for k in sorted(done["flows"])]
    assert done["jain_index_per_weight"] > 0.95, kbps
    assert kbps[2] == pytest.approx(2 * kbps[0], rel=0.15)
    assert 800 < done["total_kbps"] < 2600


@pytest.mark.parametrize("receiver", [["--stamp", "0:400,1.6:30"]], indirect=True)
def test_audio_layer_follows_the_rate(receiver: int, tmp_path: Path) -> None:
    log = tmp_path / "audio.jsonl"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "fairgate_hosts.apps.audio",
            "--dst",
            "127.0.0.1",
            "--port",
            str(receiver),
            "--duration",
            "3",
            "--initial-rate",
            "400",
            "--log",
            str(log),
        ],
        env=ENV,
        timeout=30,
        check=True,
    )
    recs = records(log)
    layers = [(r["t_s"], r["layer_kbps"]) for r in recs if r["type"] == "layer"]
    # the layer of the CM's rate at once (cm_query at open): 400 kbit/s, stamped 400 too,
    # so no change_rate comes before the stamp falls to 30 at 1.6 s of the receiver's time
    assert layers[0][0] < 0.1 and layers[0][1] == 320
    assert any(layer == 320 for t, layer in layers if t < 1.0)
    assert layers[-1][1] == 20  # 30 kbit/s stamped: highest layer below is 20
    assert recs[-1]["type"] == "done" and recs[-1]["seconds_per_layer"]["20"] > 0.5


def test_tcp_over_cm_loopback(tmp_path: Path) -> None:
    port = free_port(socket.SOCK_STREAM)
    srv = start(
        "fairgate_hosts.traffic.server",
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--summary",
        os.devnull,
    )
    try:
        time.sleep(0.5)
        log = tmp_path / "tcp.jsonl"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "fairgate_hosts.apps.tcp_cm",
                "--dst",
                "127.0.0.1",
                "--port",
                str(port),
                "--cm",
                "--flows",
                "2",
                "--max-rate",
                "4000",
                "--duration",
                "2",
                "--log",
                str(log),
            ],
            env=ENV,
            timeout=30,
            check=True,
        )
    finally:
        stop(srv)
    done = records(log)[-1]
    for f in done["flows"]:
        assert f["pacing_kbps"] == pytest.approx(2000, rel=0.05)  # half of the macroflow each
        # loopback segments are 64 kB (IW10 = 650 kB goes out unpaced): only the whole-run
        # average is meaningful here; tests/netns/hosts checks accuracy on a veth
        assert 1000 < f["goodput_kbps"] < 3500


def test_tcp_cm_counts_recoveries_and_rtos_from_ca_state_polls() -> None:
    """The NewReno agent's log counts loss episodes from ``tcpi_ca_state`` polls (Open 0,
    Disorder 1, CWR 2, Recovery 3, Loss 4): an entry into Recovery is a fast retransmit,
    an entry into Loss a retransmission timeout (from Recovery too); polls that stay in a
    state count nothing (the back-off's further timeouts are one episode)."""
    from fairgate_hosts.apps.tcp_cm import PacedFlow

    flow = PacedFlow(0, socket.socket())
    try:
        for state in (0, 1, 3, 3, 0, 3, 4, 4, 0, 4, 0, 2, 3, 1, 0):
            flow.track_state(state)
    finally:
        flow.sock.close()
    assert (flow.recoveries, flow.rtos) == (3, 2)
