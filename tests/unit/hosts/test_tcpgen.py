"""TCP traffic generator: summary maths, record format, socket cap, loopback runs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fairgate_hosts.traffic.records import (
    FlowRecord,
    RecordSink,
    TcpInfo,
    data_acked,
    load_records,
    parse_tcp_info,
    summarize,
)
from fairgate_hosts.traffic.tcpgen import (
    ClientConfig,
    ServerConfig,
    TcpFlowClient,
    TcpSinkServer,
    fd_budget,
)

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")


def done(i: int, start: float, fct: float, size: int) -> FlowRecord:
    return FlowRecord(
        i,
        start,
        size,
        start_s=start,
        outcome="completed",
        phase="done",
        fct_s=fct,
        connect_s=0.01,
        syn_retrans=1 if i % 2 else 0,
    )


def test_summary_counts_completions_in_the_window() -> None:
    recs = [
        done(0, 1.0, 2.0, 5_000),  # ends at 3: before the window
        done(1, 9.0, 2.0, 20_000),  # ends at 11: in
        done(2, 12.0, 4.0, 8_000),  # ends at 16: in
        done(3, 19.0, 2.0, 200_000),  # ends at 21: after
        FlowRecord(4, 12.0, 50_000, start_s=12.0, outcome="timeout", phase="send"),
        FlowRecord(5, 13.0, 1_000, outcome="capped"),
    ]
    s = summarize(recs, duration_s=20.0, warmup_s=10.0)
    assert s["window_s"] == [10.0, 20.0]
    assert s["completed_in_window"] == 2
    assert s["completion_rate_per_s"] == pytest.approx(0.2)
    assert s["offered_per_s"] == pytest.approx(6 / 20)
    assert s["offered_in_window_per_s"] == pytest.approx(4 / 10)  # flows 2, 3, 4, 5
    assert s["fct_s"]["mean"] == pytest.approx(3.0)
    assert s["transfer_s"]["mean"] == pytest.approx(3.0 - 0.01)  # connect_s excluded
    assert s["mean_goodput_kbps"] == pytest.approx((20_000 * 8 / 2 + 8_000 * 8 / 4) / 2 / 1000)
    assert s["sizes_completed"]["frac_above"]["10000"] == pytest.approx(0.5)
    assert s["sizes_completed"]["mean_bytes"] == pytest.approx(14_000)
    assert s["sizes_offered"]["frac_above"]["10000"] == pytest.approx(2 / 4)
    assert s["outcomes"] == {"completed": 4, "timeout": 1, "capped": 1}
    assert s["syn_retrans"]["connected"] == 4
    assert s["syn_retrans"]["frac_retried"] == pytest.approx(0.5)


def test_summary_window_end_and_validation() -> None:
    recs = [done(i, float(i), 0.5, 1000) for i in range(30)]
    s = summarize(recs, duration_s=30.0, warmup_s=10.0, window_end_s=20.0)
    assert s["completed_in_window"] == 10 and s["completion_rate_per_s"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        summarize(recs, duration_s=30.0, warmup_s=30.0)
    empty = summarize([], duration_s=5.0, warmup_s=0.0)
    assert empty["fct_s"]["mean"] is None and empty["sizes_completed"]["count"] == 0


def test_summary_fct_of_the_flows_arriving_in_the_window() -> None:
    """fct_arrived_s: flows scheduled in [window start, end - margin) that completed,
    wherever they ended; not flows that arrived before the window and ended in it."""
    recs = [
        done(0, 2.0, 60.0, 5_000),  # arrived before the window, ends in it: not counted
        done(1, 40.0, 3.0, 5_000),  # arrived in it: counted
        done(2, 80.0, 30.0, 5_000),  # arrived in it, ends after it: counted
        done(3, 95.0, 1.0, 5_000),  # arrived in the last 10 s (the margin): not counted
        FlowRecord(4, 50.0, 9_000, start_s=50.0, outcome="timeout", phase="send"),
    ]
    s = summarize(recs, duration_s=100.0, warmup_s=30.0)
    a = s["fct_arrived_s"]
    assert a["window_s"] == [30.0, 90.0]
    assert a["arrived"] == 3 and a["completed"] == 2  # flows 1, 2 and the timeout
    assert a["mean"] == pytest.approx((3.0 + 30.0) / 2)
    assert s["fct_s"]["mean"] == pytest.approx((60.0 + 3.0 + 1.0) / 3)  # ends in window
    # a short window keeps three quarters of itself
    short = summarize(recs, duration_s=100.0, warmup_s=30.0, window_end_s=34.0)
    assert short["fct_arrived_s"]["window_s"] == [30.0, 33.0]
    assert short["fct_arrived_s"]["mean"] is None


def test_record_format_round_trip(tmp_path: Path) -> None:
    sink = RecordSink(tmp_path / "r.jsonl")
    sink.header({"type": "run", "args": {}})
    sink.add(done(7, 1.5, 0.25, 12_345))
    sink.close()
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "run"
    assert set(lines[1]) == {
        "type",
        "flow",
        "scheduled_s",
        "size",
        "start_s",
        "outcome",
        "phase",
        "connect_s",
        "fct_s",
        "end_s",
        "syn_retrans",
        "retrans",
        "sent",
        "error",
    }
    assert load_records(tmp_path / "r.jsonl") == [done(7, 1.5, 0.25, 12_345)]


def test_parse_tcp_info_offsets() -> None:
    buf = bytearray(232)
    struct.pack_into("=I", buf, 8 + 23 * 4, 3)
    struct.pack_into("=I", buf, 8 + 15 * 4, 1234)
    struct.pack_into("=Q", buf, 120, 10**9)
    info = parse_tcp_info(bytes(buf))
    assert (info.total_retrans, info.rtt_us, info.bytes_acked) == (3, 1234, 10**9)
    assert parse_tcp_info(bytes(buf[:104])).bytes_acked is None


def test_data_acked_counts_the_syn_and_needs_every_byte() -> None:
    def info(acked: int | None) -> TcpInfo:
        return TcpInfo(0, 0, 0, acked, None)

    # Linux: 1 (the SYN) + data (+ 1 once our FIN is acknowledged)
    assert data_acked(info(1 + 5000 + 1), 5000)
    assert data_acked(info(1 + 5000), 5000)
    # a server that closed on its idle timeout had acknowledged only part of the data
    assert not data_acked(info(1 + 4999), 5000)
    assert not data_acked(info(1), 5000)
    # unknown: trust the FIN
    assert data_acked(None, 5000)
    assert data_acked(info(None), 5000)


def test_fd_budget_lowers_an_impossible_cap() -> None:
    assert fd_budget(16) == (16, None)
    cap, msg = fd_budget(10**8)
    assert cap < 10**8 and msg is not None and "open-file limit" in msg


async def _loopback(cfg: ClientConfig, server: bool = True) -> tuple[list[FlowRecord], dict]:
    stop = asyncio.Event()
    recs: list[FlowRecord] = []
    srv_task = None
    if server:
        srv = TcpSinkServer(ServerConfig("127.0.0.1", 0))
        srv_task = asyncio.create_task(srv.run(stop))
        await srv.ready.wait()
        cfg = dataclasses.replace(cfg, port=srv.port)
    stats = await TcpFlowClient(cfg, recs.append, warn=lambda m: None).run(asyncio.Event())
    stop.set()
    if srv_task:
        await srv_task
    return recs, stats


def test_loopback_flows_complete() -> None:
    cfg = ClientConfig("127.0.0.1", rate_per_s=200, duration_s=1.0, timeout_s=5, seed=3)
    recs, stats = asyncio.run(_loopback(cfg))
    assert 120 < len(recs) < 300
    assert all(r.outcome == "completed" for r in recs)
    assert all(r.sent == r.size and r.syn_retrans == 0 for r in recs)
    assert all(r.fct_s is not None and r.connect_s is not None for r in recs)
    assert sorted(r.flow for r in recs) == list(range(len(recs)))
    assert stats["capped"] == 0 and not stats["interrupted"]


def test_refused_when_nothing_listens() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed on exit: nobody listens there
    cfg = ClientConfig("127.0.0.1", port, rate_per_s=50, duration_s=0.3, timeout_s=2)
    recs, _ = asyncio.run(_loopback(cfg, server=False))
    assert recs and all(r.outcome == "refused" and r.phase == "connect" for r in recs)


def test_socket_cap_and_timeout() -> None:
    # A listener that never accepts: connections complete in the backlog, EOF never comes.
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(64)
        cfg = ClientConfig(
            "127.0.0.1",
            lsock.getsockname()[1],
            rate_per_s=200,
            duration_s=0.5,
            timeout_s=0.4,
            drain_s=1.0,
            max_open=3,
            mean_bytes=2000,
        )
        warnings: list[str] = []
        recs: list[FlowRecord] = []
        stats = asyncio.run(
            TcpFlowClient(cfg, recs.append, warn=warnings.append).run(asyncio.Event())
        )
    outcomes = {r.outcome for r in recs}
    assert outcomes <= {"timeout", "capped"} and "capped" in outcomes
    assert stats["peak_open"] == 3 and stats["capped"] == sum(r.outcome == "capped" for r in recs)
    assert len(warnings) == 1 and "socket cap reached (3 open)" in warnings[0]
    timed_out = [r for r in recs if r.outcome == "timeout"]
    assert timed_out and all(r.phase == "wait_eof" for r in timed_out)


def test_cli_sigterm_writes_what_it_has(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fairgate_hosts.traffic.server",
            "--bind",
            "127.0.0.1",
            "--port",
            str(port),
            "--summary",
            str(tmp_path / "srv.json"),
        ],
        env=ENV,
    )
    try:
        time.sleep(0.6)
        cli = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "fairgate_hosts.traffic.client",
                "--dst",
                "127.0.0.1",
                "--port",
                str(port),
                "--rate",
                "100",
                "--duration",
                "30",
                "--warmup",
                "0",
                "--records",
                str(tmp_path / "f.jsonl"),
                "--summary",
                str(tmp_path / "s.json"),
            ],
            env=ENV,
        )
        time.sleep(1.5)
        cli.send_signal(signal.SIGTERM)
        assert cli.wait(10) == 130
    finally:
        srv.send_signal(signal.SIGTERM)
        assert srv.wait(10) == 0
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["run"]["interrupted"] is True
    assert summary["outcomes"].get("completed", 0) > 50
    assert len(load_records(tmp_path / "f.jsonl")) == summary["flows"]
    assert json.loads((tmp_path / "srv.json").read_text())["connections"]["eof"] > 50


def test_arrivals_due_together_never_exceed_the_cap() -> None:
    # 100 arrivals within 5 ms: most are already due when the loop reaches them,
    # so they start without yielding to the flows started before them.
    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(128)
        cfg = ClientConfig(
            "127.0.0.1",
            lsock.getsockname()[1],
            rate_per_s=20_000,
            duration_s=0.005,
            timeout_s=0.2,
            drain_s=0.3,
            max_open=3,
            mean_bytes=2000,
        )
        recs: list[FlowRecord] = []
        stats = asyncio.run(
            TcpFlowClient(cfg, recs.append, warn=lambda _msg: None).run(asyncio.Event())
        )
    assert len(recs) > 20
    assert stats["peak_open"] == 3, stats
    assert stats["capped"] == len(recs) - 3


def test_client_flows_send_segments_of_the_given_mss() -> None:
    """ClientConfig.mss (--mss): every flow's segments carry that many data bytes, as the
    receiving end sees them (tcpi_rcv_mss)."""
    import threading

    from fairgate_hosts.kernel_tcp import kernel_info

    seen: list[int] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(64)
    srv.settimeout(0.2)
    stop = threading.Event()

    def sink() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                while conn.recv(65_536):
                    pass
                info = kernel_info(conn)
                seen.append(info.rcv_mss if info else -1)

    th = threading.Thread(target=sink, daemon=True)
    th.start()
    cfg = ClientConfig(
        "127.0.0.1",
        srv.getsockname()[1],
        rate_per_s=40,
        duration_s=0.3,
        timeout_s=5,
        mean_bytes=20_000,
        seed=3,
        mss=976,
    )
    try:
        recs, _ = asyncio.run(_loopback(cfg, server=False))
        deadline = time.monotonic() + 5
        while len(seen) < len(recs) and time.monotonic() < deadline:
            time.sleep(0.05)  # the sink reads each flow to its end after the client is done
    finally:
        stop.set()
        th.join(2)
        srv.close()
    assert recs and all(r.outcome == "completed" for r in recs)
    assert len(seen) == len(recs) and set(seen) == {976}
