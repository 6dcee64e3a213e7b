"""TCP/CM on loopback: the CM's grants, not the kernel, set what each connection sends."""

from __future__ import annotations

import socket
import threading

import pytest

from fairgate_hosts.agentio import monotonic_us
from fairgate_hosts.apps.tcpcm import TcpCm
from fairgate_hosts.cm.core import CMConfig, CongestionManager


def _sink(srv: socket.socket, n: int, got: list[int], stop: threading.Event) -> None:
    conns = [srv.accept()[0] for _ in range(n)]
    for c in conns:
        c.settimeout(0.05)
    while not stop.is_set():
        for i, c in enumerate(conns):
            try:
                data = c.recv(65536)
            except TimeoutError:
                continue
            got[i] += len(data)
    for c in conns:
        c.close()


def test_grants_set_the_rate_and_the_kernel_window_never_binds() -> None:
    # A fixed CM rate (no loss on loopback, rate capped at max; 690 segments/s so that
    # delayed acks never leave the CM a smoothed RTT without feedback) split 1:3 between
    # two connections: what is sent is the CM's rate and the weights, and every poll of
    # TCP_INFO finds room in the kernel's window whenever granted data waited.
    rate_Bps = 1_000_000.0
    cm = CongestionManager(
        CMConfig(mss=1448, initial_rate_Bps=rate_Bps, max_rate_Bps=rate_Bps, probing=False)
    )
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    got = [0, 0]
    stop = threading.Event()
    th = threading.Thread(target=_sink, args=(srv, 2, got, stop), daemon=True)
    th.start()
    app = TcpCm("127.0.0.1", srv.getsockname()[1], cm, 2, [1.0, 3.0], feedback_us=5_000)
    try:
        app.connect()
        start = monotonic_us()
        end = start + 2_000_000
        while (now := monotonic_us()) < end:
            app.feedback(now)
            app.pump(min(end, now + app.feedback_us))
        secs = (monotonic_us() - start) / 1e6
    finally:
        app.close()
        stop.set()
        th.join(2)
        srv.close()
    total = sum(c.written for c in app.conns)
    assert total / secs == pytest.approx(rate_Bps, rel=0.1)
    assert app.conns[1].written / app.conns[0].written == pytest.approx(3, rel=0.15)
    for c in app.conns:
        assert c.trace.samples > 200
        assert c.trace.cwnd_bound == 0, c.trace.as_json()
        # the kernel never held more than a grant or two unsent (TCP_NOTSENT_LOWAT)
        assert c.trace.max_notsent <= 2 * 1448, c.trace.as_json()
