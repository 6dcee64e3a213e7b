"""fg_cm, TCP/CM's kernel congestion control: built from source and registered (root,
clang, bpftool), a socket on it starts with the 2^30-segment window TCP/CM relies on."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from fairgate_hosts import kernel_cc


def test_resolve_kernel_cc_names() -> None:
    assert kernel_cc.resolve_kernel_cc("auto") in (None, kernel_cc.NAME)
    with pytest.raises(ValueError, match="not available here"):
        kernel_cc.resolve_kernel_cc("no-such-cc")


def test_unregister_trusts_the_kernels_list_over_bpftools_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listed = [True]

    def bpftool_fails(cmd: list[str], stdout: object = None) -> None:
        listed[0] = still_listed
        raise kernel_cc.KernelCCError("bpftool struct_ops unregister: can't unload fg_cm id 7")

    monkeypatch.setattr(kernel_cc, "registered", lambda: listed[0])
    monkeypatch.setattr(kernel_cc, "_run", bpftool_fails)
    still_listed = False  # ours went, a lingering older map did not: fine
    kernel_cc.unregister()
    listed[0], still_listed = True, True  # still registered afterwards: the error stands
    with pytest.raises(kernel_cc.KernelCCError, match="can't unload"):
        kernel_cc.unregister()


def test_fg_cm_window_is_huge_on_a_real_socket(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("registering fg_cm needs root (sudo make test)")
    why = None if kernel_cc.registered() else kernel_cc.missing_tools()
    if why:
        pytest.skip(why)
    ours = not kernel_cc.registered()
    kernel_cc.register(tmp_path / "fg_cm")
    assert kernel_cc.registered()
    from fairgate_hosts.kernel_tcp import kernel_info

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    cli = socket.socket()
    cli.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, kernel_cc.NAME.encode())
    cli.connect(srv.getsockname())
    peer, _ = srv.accept()
    try:
        cli.sendall(b"x" * 100_000)
        got = 0
        while got < 100_000:
            got += len(peer.recv(65536))
        name = cli.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        assert name.rstrip(b"\0").decode() == kernel_cc.NAME
        info = kernel_info(cli)
        assert info is not None and info.snd_cwnd == 1 << 30
        assert info.snd_ssthresh == 1 << 30
    finally:
        for s in (cli, peer, srv):
            s.close()
        if ours:  # take back the machine-wide state this test added
            kernel_cc.unregister()
            assert not kernel_cc.registered()
