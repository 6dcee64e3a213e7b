"""TCP/CM on loopback: the CM's grants, not the kernel, set what each connection sends."""

from __future__ import annotations

import socket
import threading

import pytest

from fairgate_hosts.agentio import monotonic_us
from fairgate_hosts.apps.tcpcm import TcpCm
from fairgate_hosts.cm.core import CMConfig, CongestionManager
from fairgate_hosts.kernel_tcp import KernelInfo


def _kernel_info(**fields: int) -> KernelInfo:
    """A TCP_INFO poll of a connection whose window never binds; ``fields`` override."""
    base = dict(
        ca_state=0, snd_mss=1448, unacked=0, sacked=0, lost=0, retrans=0, rtt_us=150_000,
        snd_ssthresh=1 << 30, snd_cwnd=1 << 30, total_retrans=0, bytes_acked=0, notsent=0,
        busy_us=0, rwnd_limited_us=0, sndbuf_limited_us=0, bytes_sent=0, bytes_retrans=0,
        snd_wnd=1 << 20,
    )  # fmt: skip
    return KernelInfo(**(base | fields))


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


def test_a_shared_cm_hands_tcp_grants_over_and_carries_out_their_events() -> None:
    """apps.audio --tcp-flows: the UDP host core and TCP/CM share one CM; grants of the
    TCP flow go to ``foreign_grant``, and the events its notify returns (grants for the
    UDP flow) are carried out by the host, both at the macroflow's rate."""
    from dataclasses import dataclass

    from fairgate_hosts.cm.host import CMFlow, CMHostCore

    @dataclass
    class FakeHost(CMHostCore):
        sent: int = 0

        def _send_data(self, flow: object, data: bytes) -> bool:
            self.sent += 1
            return True

        def _send_probe(self, dst: str, data: bytes) -> bool:
            return True

    class Sender:
        def on_grant(self, host: FakeHost, flow: CMFlow, nbytes: int, now_us: int) -> None:
            host.send(flow, nbytes, now_us)

        def on_rate(self, *a: object) -> None: ...

        def on_timer(self, *a: object) -> None: ...

    cfg = CMConfig(mss=1000, initial_rate_Bps=100_000, probing=False, aging="off")
    host = FakeHost("10.0.0.2", cfg=cfg)  # no feedback here: no aging either
    udp = CMFlow(host.cm.open("", "10.0.0.2", now_us=0), 1.0)
    host.flows[udp.fid] = udp
    tcp_fid = host.cm.open("", "10.0.0.2", now_us=0, probed=False)
    tcp_bytes: list[int] = []

    def foreign(fid: int, nbytes: int, now_us: int) -> list[object]:
        assert fid == tcp_fid
        tcp_bytes.append(nbytes)
        return host.cm.notify(fid, nbytes, now_us)  # type: ignore[return-value]

    host.foreign_grant = foreign  # type: ignore[assignment]
    app = Sender()
    host.handle(host.cm.request(udp.fid, 1 << 30, 0), app, 0)
    host.handle(host.cm.request(tcp_fid, 1 << 30, 0), app, 0)
    for t in range(1, 1001):  # one second in 1 ms ticks
        host.handle(host.cm.tick(t * 1000), app, t * 1000)
    # 100 kB/s split evenly: ~50 grants of 1000 B each
    assert sum(tcp_bytes) == pytest.approx(50_000, rel=0.1)
    assert host.sent * 1000 == pytest.approx(50_000, rel=0.1)


def test_kernel_retransmissions_are_charged_to_the_cm(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel resends lost segments without a grant: the poll that sees
    ``tcpi_bytes_retrans`` grow charges those bytes to the CM (counted as sent, paid from
    the macroflow's credit), once each."""
    from fairgate_hosts.apps import tcpcm
    from fairgate_hosts.apps.tcpcm import CmConn

    def info(bytes_retrans: int, total_retrans: int) -> KernelInfo:
        return _kernel_info(bytes_retrans=bytes_retrans, total_retrans=total_retrans)

    polls = iter([info(0, 0), info(2 * 1448, 2), info(2 * 1448, 2), info(3 * 1448, 3)])
    monkeypatch.setattr(tcpcm, "kernel_info", lambda sock: next(polls))
    cm = CongestionManager(CMConfig(mss=1448, initial_rate_Bps=100_000, aging="off"))
    app = TcpCm("10.0.0.2", 5001, cm)
    fid = cm.open("", "10.0.0.2", now_us=0, probed=False)
    sock = socket.socket()
    try:
        app.conns.append(CmConn(0, sock, fid))
        credit = []
        for t in range(4):
            app.feedback(t * 1000)
            credit.append(cm.macroflows["10.0.0.2"].credit)
    finally:
        sock.close()
    assert cm.flows[fid].sent == 3 * 1448 and app.conns[0].bytes_retrans == 3 * 1448
    # the credit (no data requested: nothing granted; 100 B accrue per 1 ms poll) fell by
    # what was charged
    assert credit[1] == pytest.approx(credit[0] + 100 - 2 * 1448, abs=1)
    assert credit[2] == pytest.approx(credit[1] + 100, abs=1)
    assert credit[3] == pytest.approx(credit[2] + 100 - 1448, abs=1)


def test_acks_count_after_a_timeout_but_not_in_fast_recovery(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``cm_update`` gets the newly acked bytes, none in fast recovery (NewReno's window
    does not grow there) but all of them in RTO recovery, where NewReno slow-starts."""
    from fairgate_hosts.apps import tcpcm
    from fairgate_hosts.apps.tcpcm import CmConn
    from fairgate_hosts.kernel_tcp import TCP_CA_LOSS, TCP_CA_RECOVERY

    def info(ca_state: int, acked: int) -> KernelInfo:
        return _kernel_info(ca_state=ca_state, bytes_acked=acked)

    states = [(0, 1448), (TCP_CA_RECOVERY, 2 * 1448), (0, 3 * 1448)]
    states += [(TCP_CA_LOSS, 3 * 1448), (TCP_CA_LOSS, 5 * 1448), (0, 6 * 1448)]
    polls = iter([info(c, a) for c, a in states])
    monkeypatch.setattr(tcpcm, "kernel_info", lambda sock: next(polls))
    cm = CongestionManager(CMConfig(mss=1448, initial_rate_Bps=100_000, aging="off"))
    reported: list[tuple[int, bool, bool]] = []
    update = cm.update

    def spy(fid: int, nrecd: int, loss: bool, *a: object, **kw: object) -> object:
        reported.append((nrecd, loss, bool(kw.get("persistent"))))
        return update(fid, nrecd, loss, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(cm, "update", spy)
    app = TcpCm("10.0.0.2", 5001, cm)
    fid = cm.open("", "10.0.0.2", now_us=0, probed=False)
    sock = socket.socket()
    try:
        app.conns.append(CmConn(0, sock, fid))
        for t in range(len(states)):
            app.feedback(t * 1000)
    finally:
        sock.close()
    assert reported == [
        (1448, False, False),
        (0, True, False),  # fast recovery: a loss, no growth
        (1448, False, False),
        (0, False, True),  # the timeout: persistent congestion
        (2 * 1448, False, False),  # RTO recovery: the resends' acks count
        (1448, False, False),
    ]


def test_connections_send_segments_of_the_cms_mss() -> None:
    """A grant is one segment of the CM's mss, and so is every segment the kernel sends:
    the frames are the file's (BMv2 serves its ports in packets/s of one frame size)."""
    from fairgate_hosts.kernel_tcp import kernel_info

    cm = CongestionManager(CMConfig(mss=976, initial_rate_Bps=100_000.0, probing=False))
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(2)
    app = TcpCm("127.0.0.1", srv.getsockname()[1], cm, 1)
    try:
        app.connect()
        info = kernel_info(app.conns[0].sock)
        assert info is not None and info.snd_mss == 976
    finally:
        app.close()
        srv.close()
