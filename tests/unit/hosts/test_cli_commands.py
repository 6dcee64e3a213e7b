"""The lab's host commands (fg-send, fg-recv, fg-tcp, fg-cm, fg-status): arguments, one-line
errors, the session file, fg-status's lines; fg-send -> fg-recv over loopback."""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairgate_hosts.cli import cm, common, recv, send, status, tcp

HOSTS = {"h1": "10.0.1.1", "r1": "10.0.4.1"}


def make_run_dir(tmp_path: Path, algo: str = "qfcp") -> Path:
    doc = {"hosts": HOSTS, "algo": algo, "ack_delay_ms": 40.0, "ports": {"s1:1": "s2"}}
    (tmp_path / "session.json").write_text(json.dumps(doc))
    return tmp_path


@pytest.mark.parametrize(
    ("text", "kbps"), [("20M", 20_000), ("500k", 500), ("1.5G", 1_500_000), ("64000", 64)]
)
def test_bitrates(text: str, kbps: int) -> None:
    assert common.parse_bitrate_kbps(text) == kbps


@pytest.mark.parametrize("text", ["", "fast", "20X", "-3M", "100", "5000G"])
def test_bad_bitrates(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        common.parse_bitrate_kbps(text)


def test_sizes_seconds_counts() -> None:
    assert common.parse_bytes("10k") == 10_000 and common.parse_bytes("5MB") == 5_000_000
    assert common.parse_seconds("30s") == 30.0
    assert common.parse_count("3") == 3
    for fn, bad in (
        (common.parse_bytes, "0"),
        (common.parse_seconds, "-1"),
        (common.parse_count, "0"),
    ):
        with pytest.raises(argparse.ArgumentTypeError):
            fn(bad)


def test_tcp_workload_syntax() -> None:
    assert tcp.parse_arrivals("poisson:50/s") == tcp.Arrivals(50.0)
    assert tcp.parse_arrivals("12.5/s") == tcp.Arrivals(12.5)
    assert tcp.parse_sizes("pareto:1.5,10k") == tcp.Sizes(1.5, 10_000)
    for bad in ("uniform:5", "poisson:0/s", "poisson:-1/s"):
        with pytest.raises(argparse.ArgumentTypeError):
            tcp.parse_arrivals(bad)
    for bad in ("pareto:1.0,10k", "pareto:x,10k", "lognormal:1,2", "pareto:1.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            tcp.parse_sizes(bad)


@pytest.mark.parametrize(
    ("module", "argv", "message"),
    [
        (send, ["r1", "--rate", "fast"], "fg-send: argument --rate: not a bit rate: 'fast'"),
        (send, [], "fg-send: the following arguments are required: dst"),
        (send, ["r1", "--for", "3", "--size", "1M"], "fg-send: argument --size: not allowed"),
        (recv, ["--for", "soon"], "fg-recv: argument --for: not a positive number"),
        (tcp, ["r1", "--sizes", "pareto:0.5,10k"], "fg-tcp: argument --sizes: Pareto shape"),
        (cm, ["r1", "--flows", "0"], "fg-cm: argument --flows: must be at least 1"),
        (status, ["--stale", "x"], "fg-status: argument --stale: not a positive number"),
    ],
)
def test_parse_errors_are_one_line(
    module: object, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        module.main(argv)  # type: ignore[attr-defined]
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(message), err


def test_semantic_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(common.RUN_DIR_ENV, str(make_run_dir(tmp_path)))
    cases = [
        (send.main, ["nowhere"], "fg-send: unknown host 'nowhere' (hosts: h1, r1)"),
        (send.main, ["r1", "--mode", "fixed"], "fg-send: --mode fixed needs --rate"),
        (cm.main, ["r1", "--flows", "2", "--weights", "1"], "fg-cm: --weights gives 1 weights"),
        (tcp.main, ["10.0.0.300"], "fg-tcp: unknown host '10.0.0.300'"),
    ]
    for main, argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(message), err
    assert not list(tmp_path.glob("cmds/*")), "a failed command wrote a log"


def test_not_in_a_lab(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(common.RUN_DIR_ENV, raising=False)
    assert status.main([]) == 2
    assert (
        capsys.readouterr().err == "fg-status: not in a lab (no FG_RUN_DIR): give --records FILE\n"
    )
    monkeypatch.setenv(common.RUN_DIR_ENV, "/nonexistent/run")
    assert send.main(["r1"]) == 2
    assert "holds no readable session.json" in capsys.readouterr().err


def test_session_resolves_names_and_addresses(tmp_path: Path) -> None:
    s = common.Session.load({common.RUN_DIR_ENV: str(make_run_dir(tmp_path, "lestas"))})
    assert s.address("r1") == "10.0.4.1" and s.address("10.9.9.9") == "10.9.9.9"
    assert s.name_of("10.0.1.1") == "h1" and s.name_of("10.9.9.9") == "10.9.9.9"
    args = send.build_parser().parse_args(["r1"])
    cfg = send.config(args, s.algo)
    assert cfg.mode == "lestas" and cfg.duration_us == 30_000_000
    assert cfg.desired_rate_kbps == 0xFFFFFFFF
    args = send.build_parser().parse_args(["r1", "--rate", "2M", "--mode", "fixed"])
    assert send.config(args, "qfcp").fixed_rate_kbps == 2000


def record(switch: str, port: int, t: float, **kw: float | None) -> dict[str, object]:
    r: dict[str, object] = {"t": t, "switch": switch, "port": port, "period_s": 0.1}
    r |= {"capacity_Bps": 496_800.0, "y_Bps": 0.0, "drop_pkts": 0, "queue_mean_bytes": 0.0}
    r |= {"rate_kbps": None, "congested": False}
    r |= kw
    return r


def test_status_shows_the_newest_record_of_each_busy_port(tmp_path: Path) -> None:
    path = tmp_path / "controller.jsonl"
    now = time.time()
    rows = [
        record("s1", 1, now - 1, y_Bps=100.0, rate_kbps=3000),
        record("s1", 1, now, y_Bps=500_000.0, rate_kbps=1987, drop_pkts=4, congested=True),
        record("s1", 2, now),  # idle, no rate: hidden unless --all
        record("s2", 2, now, y_Bps=248_400.0, rate_kbps=0xFFFFFFFF, queue_mean_bytes=2484.0),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"cut')
    latest = status.latest_records(path)
    assert latest[("s1", 1)]["rate_kbps"] == 1987
    lines = status.render(latest, {"s1:1": "s2"}, False, now + 0.5, 3.0)
    assert lines[0] == "controller records, newest 0.5 s old"
    assert lines[1] == (
        "s1:1   -> s2    rate  1987 kb/s  arrivals    4000 kb/s (101% of 3974)  "
        "queue   0.0 pkt  drops   40.0/s  congested"
    )
    assert "rate unlim kb/s" in lines[2] and "queue   2.0 pkt" in lines[2]
    assert len(lines) == 3
    assert len(status.render(latest, {}, True, now, 3.0)) == 4
    assert "STALE" in status.render(latest, {}, False, now + 10, 3.0)[0]
    assert status.render({}, {}, False, now, 3.0)[0].startswith("fg-status: no controller records")


def test_status_reads_only_the_tail_of_a_long_file(tmp_path: Path) -> None:
    path = tmp_path / "controller.jsonl"
    lines = [json.dumps(record("s1", 1, float(i), rate_kbps=i)) for i in range(5000)]
    path.write_text("\n".join(lines) + "\n")
    latest = status.latest_records(path, tail_bytes=4096)
    assert latest[("s1", 1)]["rate_kbps"] == 4999


def test_recv_printer_rates_from_counters() -> None:
    session = common.Session(None, HOSTS)
    printer = recv.RxPrinter(session, "r1")
    base = {"type": "rx", "peer": "10.0.1.1:4000", "duplicates": 0, "congested": 3}
    assert printer.lines([{**base, "t_us": 0, "unique_bytes": 0, "packets": 0}]) == []
    assert printer.lines([{**base, "t_us": 500_000, "unique_bytes": 1, "packets": 1}]) == []
    out = printer.lines([{**base, "t_us": 2_000_000, "unique_bytes": 500_000, "packets": 400}])
    assert out == [
        "r1 <- h1 (10.0.1.1:4000)  t=  2.0s  2.00 Mb/s goodput  200 pkt/s  dup 0  congested 3"
    ]


FIXED = ["--for", "2", "--mode", "fixed", "--rate", "2M"]


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_send_to_recv_over_loopback(tmp_path: Path) -> None:
    """The real agents behind the commands: 1 s of a fixed 2 Mbit/s flow on loopback."""
    run_dir = make_run_dir(tmp_path)
    env = {**os.environ, common.RUN_DIR_ENV: str(run_dir)}
    port = str(free_udp_port())
    rx = subprocess.Popen(
        [sys.executable, "-m", "fairgate_hosts.cli.recv", "--port", port, "--delay", "0"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.0)
        tx = subprocess.run(
            [sys.executable, "-m", "fairgate_hosts.cli.send", "127.0.0.1", "--port", port, *FIXED],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert tx.returncode == 0, tx.stderr
        assert "127.0.0.1 -> 127.0.0.1  completed after 2.0s" in tx.stdout, tx.stdout
        assert tx.stdout.count("granted") >= 1
        time.sleep(1.5)
        assert list((run_dir / "pids").glob("*")), "fg-recv is not registered while running"
    finally:
        rx.terminate()
        out, _ = rx.communicate(timeout=10)
    assert rx.returncode == 0
    assert "goodput" in out, out
    logs = sorted((run_dir / "cmds").glob("*.jsonl"))
    assert [("-recv-" in p.name, "-send-" in p.name) for p in logs] in (
        [(True, False), (False, True)],
        [(False, True), (True, False)],
    ), logs
    done = [
        r
        for r in common.json_lines(next((run_dir / "cmds").glob("*-send-*")))
        if r["type"] == "done"
    ]
    assert done[0]["acked_bytes"] > 0.8 * 2e6 / 8 * 2 * 1158 / 1200
    assert not list((run_dir / "pids").glob("*")), "a finished command left its PID file"
