"""CM daemon and client across two processes (UNIX socket, JSON lines)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fairgate_hosts.cm.client import CMClient, CMError

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "cm"
    d.mkdir(mode=0o700)
    path = d / "cm.sock"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fairgate_hosts.cm.daemon",
            "--socket",
            str(path),
            "--no-probe",
            "--initial-rate",
            "960",
        ],
        env=env,
    )
    try:
        for _ in range(100):
            if path.exists():
                break
            time.sleep(0.05)
        yield path
    finally:
        proc.terminate()
        proc.wait(5)
    assert proc.returncode == 0
    assert not path.exists()


def test_daemon_round_trip(daemon: Path) -> None:
    assert stat.S_IMODE(daemon.stat().st_mode) == 0o600
    assert stat.S_IMODE(daemon.parent.stat().st_mode) == 0o700
    got: list[int] = []
    rates: list[float] = []
    with CMClient(daemon) as cm:
        fid = cm.open("10.0.0.2", weight=1, app_notify=got.append, change_rate=rates.append)
        cm.request(fid, 12_000)
        deadline = time.monotonic() + 3
        while sum(got) < 12_000 and time.monotonic() < deadline:
            cm.poll(0.05)
        assert sum(got) == 12_000 and max(got) <= 1200
        assert rates and rates[0] == pytest.approx(120_000)
        cm.notify(fid, 12_000)
        cm.update(fid, 12_000, rtt_us=20_000, explicit_rate_kbps=400)
        q = cm.query(fid)
        assert q["srtt_us"] == 20_000 and q["rate_Bps"] == pytest.approx(50_000)
        cm.poll(0.05)
        assert rates[-1] == pytest.approx(50_000)
        cm.close(fid)
        with pytest.raises(CMError):
            cm.query(fid)


def test_daemon_survives_malformed_requests(daemon: Path) -> None:
    with CMClient(daemon) as cm:
        bad = [
            b"not json",
            b"[1,2]",
            b'{"op": "nope"}',
            b'{"op": "open"}',
            b'{"op": "open", "dst": "x", "weight": -1}',
            b'{"op": "request", "flow": 99}',
            b'{"op": "request", "flow": "1", "nbytes": 1}',
            b"\xff\xfe",
            b'{"op": "update", "flow": 1, "loss": "yes"}',
        ]
        for line in bad:
            rep = cm.raw(line)
            assert rep["ok"] is False and rep["error"]
        assert cm.call("ping")["pong"] is True
    with CMClient(daemon) as other, CMClient(daemon) as cm:
        fid = cm.open("10.0.0.3")
        with pytest.raises(CMError):
            other.query(fid)  # flows belong to the connection that opened them
        cm.close_connection()
        time.sleep(0.1)
        assert other.call("ping")["flows"] == 0  # a closed connection closes its flows


def test_daemon_with_the_papers_names(daemon: Path) -> None:
    got: list[int] = []
    with CMClient(daemon) as cm:
        with pytest.raises(CMError, match=r"no open flow to 10\.0\.0\.9"):
            cm.cm_query("10.0.0.9")
        cid = cm.cm_open("10.0.0.1", "10.0.0.9", app_notify=got.append)
        cm.cm_request(cid, 6000, minbytes=1000, latency=0.05)
        deadline = time.monotonic() + 3
        while sum(got) < 6000 and time.monotonic() < deadline:
            cm.poll(0.05)
        assert sum(got) == 6000
        cm.cm_notify(cid, 6000)
        cm.cm_update(cid, 6000, False, 0.03)
        entry = cm.cm_query("10.0.0.9")
        assert entry.dst == "10.0.0.9" and entry.mean_rtt == pytest.approx(0.03)
        assert entry.rate > 0
        with pytest.raises(ValueError):
            cm.cm_request(cid, 100, minbytes=200)
        cm.cm_close(cid)
        with pytest.raises(CMError):
            cm.cm_query("10.0.0.9")
