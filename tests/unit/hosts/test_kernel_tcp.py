"""TCP/CM's kernel trace: TCP_INFO decoding and the cwnd-bound verdict."""

from __future__ import annotations

import socket
import struct

import pytest

from fairgate_hosts.kernel_tcp import (
    MIN_MSS,
    TCP_INFO_LEN,
    BindingTrace,
    classify,
    kernel_info,
    limit_segment_size,
    parse_kernel_info,
)


def info_buf(**f: int) -> bytes:
    """A struct tcp_info with the given fields at their Linux offsets."""
    buf = bytearray(TCP_INFO_LEN)
    buf[1] = f.get("ca_state", 0)
    for name, idx in (
        ("snd_mss", 2),
        ("unacked", 4),
        ("sacked", 5),
        ("lost", 6),
        ("retrans", 7),
        ("rtt_us", 15),
        ("snd_cwnd", 18),
        ("total_retrans", 23),
    ):
        struct.pack_into("=I", buf, 8 + 4 * idx, f.get(name, 0))
    struct.pack_into("=Q", buf, 120, f.get("bytes_acked", 0))
    struct.pack_into("=I", buf, 144, f.get("notsent", 0))
    struct.pack_into("=I", buf, 228, f.get("snd_wnd", 1 << 20))
    return bytes(buf)


def test_decode_offsets_and_in_flight() -> None:
    i = parse_kernel_info(
        info_buf(snd_mss=1448, unacked=20, sacked=3, lost=2, retrans=1, snd_cwnd=40,
                 bytes_acked=123456, notsent=1448, rtt_us=80_000, total_retrans=7)
    )  # fmt: skip
    assert (i.snd_mss, i.snd_cwnd, i.bytes_acked, i.notsent) == (1448, 40, 123456, 1448)
    assert (i.rtt_us, i.total_retrans) == (80_000, 7)
    assert i.in_flight == 20 - (3 + 2) + 1
    with pytest.raises(ValueError, match="needs 232"):
        parse_kernel_info(bytes(100))


def test_cwnd_bound_only_when_granted_data_waits_and_the_window_is_full() -> None:
    full = parse_kernel_info(info_buf(snd_mss=1448, unacked=10, snd_cwnd=10, notsent=1448))
    assert classify(full, 0).cwnd_bound
    # nothing waiting: a full window holds nothing back (the CM sent exactly a window)
    idle = parse_kernel_info(info_buf(snd_mss=1448, unacked=10, snd_cwnd=10))
    assert not classify(idle, 0).cwnd_bound
    # the application holds bytes the socket refused: waiting, and bound if full
    assert classify(idle, 1448).cwnd_bound
    room = parse_kernel_info(info_buf(snd_mss=1448, unacked=9, snd_cwnd=10, notsent=1448))
    v = classify(room, 0)
    assert v.waiting and not v.cwnd_bound and v.headroom == 1
    # the peer's window, not cwnd
    rwnd = parse_kernel_info(
        info_buf(snd_mss=1000, unacked=10, snd_cwnd=100, notsent=1, snd_wnd=10_000)
    )
    assert classify(rwnd, 0).rwnd_bound and not classify(rwnd, 0).cwnd_bound


def test_binding_trace_counts() -> None:
    t = BindingTrace()
    t.add(parse_kernel_info(info_buf(unacked=5, snd_cwnd=10)), 0)
    t.add(parse_kernel_info(info_buf(unacked=8, snd_cwnd=8, notsent=10, ca_state=4)), 0)
    t.add(parse_kernel_info(info_buf(unacked=8, snd_cwnd=8, notsent=10)), 0)
    j = t.as_json()
    assert j["samples"] == 3 and j["cwnd_bound"] == 2 and j["loss_state"] == 1
    # the RTO sample is recovery; the last one held data back in the open state
    assert j["recovery"] == 1 and j["cwnd_bound_open"] == 1
    assert j["min_headroom_segs"] == 0 and j["min_cwnd_segs"] == 8
    assert j["max_in_flight_segs"] == 8 and j["max_notsent_bytes"] == 10


def test_kernel_info_of_a_real_socket() -> None:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.create_connection(srv.getsockname())
    peer, _ = srv.accept()
    try:
        cli.sendall(b"x" * 5000)
        assert peer.recv(10_000)
        info = kernel_info(cli)
        assert info is not None and info.snd_cwnd >= 1 and info.snd_mss > 0
        assert info.bytes_sent >= 5000
    finally:
        for s in (cli, peer, srv):
            s.close()


@pytest.mark.parametrize("mss", [976, 1176, 1448])
def test_limit_segment_size_is_the_data_per_segment(mss: int) -> None:
    """TCP_MAXSEG counts the timestamps option: limit_segment_size(sock, 976) gives
    segments of 976 data bytes (frames of 976 + 66 B), as the sender and the receiver see
    them; without it loopback's 64 kB MTU gives far larger ones."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(2)
    plain = socket.create_connection(srv.getsockname())
    cli = socket.socket()
    limit_segment_size(cli, mss)
    cli.connect(srv.getsockname())
    peers = [srv.accept()[0] for _ in range(2)]
    try:
        for s in (plain, cli):
            s.sendall(b"x" * 50_000)
        for p in peers:
            got = 0
            while got < 50_000:
                got += len(p.recv(65_536))
        info = kernel_info(cli)
        assert info is not None and info.snd_mss == mss
        limited = next(p for p in peers if p.getpeername() == cli.getsockname())
        seen = kernel_info(limited)
        assert seen is not None and seen.rcv_mss == mss
        other = kernel_info(plain)
        assert other is not None and other.snd_mss > 10 * mss
    finally:
        for s in (cli, plain, *peers, srv):
            s.close()


def test_limit_segment_size_refuses_what_linux_cannot_set() -> None:
    with socket.socket() as s:
        with pytest.raises(ValueError, match=f"at least {MIN_MSS} bytes"):
            limit_segment_size(s, MIN_MSS - 1)
        limit_segment_size(s, MIN_MSS)


def test_mss_argument_refuses_what_limit_segment_size_would() -> None:
    import argparse

    from fairgate_hosts.kernel_tcp import add_mss_argument

    p = argparse.ArgumentParser()
    add_mss_argument(p)
    assert p.parse_args([]).mss is None and p.parse_args(["--mss", str(MIN_MSS)]).mss == MIN_MSS
    for bad in (str(MIN_MSS - 1), "1k"):
        with pytest.raises(SystemExit):
            p.parse_args(["--mss", bad])
