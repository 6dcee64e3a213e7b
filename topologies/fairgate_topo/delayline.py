"""A userspace delay line: bridges two interfaces of one network namespace and
forwards every Ethernet frame both ways a fixed one-way delay later.

    python -m fairgate_topo.delayline --a IF1 --b IF2 --delay-ms D [--pid-file F]

For kernels without netem (this project's machines). AF_PACKET raw sockets,
promiscuous, one per interface; frames the kernel sends out of an interface
(PACKET_OUTGOING, including our own) are never read back, so nothing loops.
A frame's due time is its kernel receive timestamp (SO_TIMESTAMPNS) plus the
delay; ``select`` sleeps until the next due time (timer slack 1 us). Order is
kept per direction. Each direction holds at most ``--capacity`` frames; one
more is dropped, counted and logged (at most once a second), as are send errors
and the sockets' own receive-buffer drops (PACKET_STATISTICS): no loss is silent.

Offloads (GRO, GSO, TSO, checksums) are turned off on both interfaces and
checked, so every frame read is one wire frame (<= MTU). The peers must send
complete checksums too (``ethtool -K <if> tx off``; the labs do this on every
host). SIGTERM or SIGINT: exit 0, printing the counts as one JSON line (and
``--stats FILE``); the PID file, written once the line is running, is removed.
Needs root (AF_PACKET). The logic is ``fairgate_topo.delaycore`` (no I/O).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import fcntl
import json
import math
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from fairgate_topo.delaycore import DelayCore, Direction, check_capacity, check_delay

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
PACKET_OUTGOING = 4
SO_TIMESTAMPNS = 35
SIOCGIFMTU = 0x8921
PR_SET_TIMERSLACK = 29
ETH_OVERHEAD = 18  # Ethernet header + one VLAN tag
RCVBUF_BYTES = 8 << 20
BATCH = 256
MAX_DELAY_MS = 10_000  # delaycore's limit
DROP_CHECK_S = 1.0  # how often the sockets' own drop counters are read (and logged)
OFFLOADS = ("tx", "rx", "tso", "gso", "gro")
MUST_BE_OFF = {  # ethtool -k names of what would hand us frames larger than the MTU
    "generic-receive-offload": "gro",
    "generic-segmentation-offload": "gso",
    "tcp-segmentation-offload": "tso",
    "large-receive-offload": "lro",
}


class Stop(BaseException):
    """Raised by the SIGTERM/SIGINT handler to leave the loop (like KeyboardInterrupt)."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop


@dataclass(frozen=True)
class Config:
    a: str
    b: str
    delay_s: float
    capacity: int = 8192
    pid_file: Path | None = None
    stats_file: Path | None = None
    fix_offloads: bool = True
    rt_priority: int = 0


def parse_args(argv: list[str] | None = None) -> Config:
    p = argparse.ArgumentParser(prog="python -m fairgate_topo.delayline", description=__doc__)
    p.add_argument("--a", required=True, metavar="IF1", help="one side (interface name)")
    p.add_argument("--b", required=True, metavar="IF2", help="the other side")
    p.add_argument("--delay-ms", required=True, type=float, help="one-way delay, ms (both ways)")
    p.add_argument("--capacity", type=int, default=8192, help="frames held per direction")
    p.add_argument("--pid-file", type=Path, help="written once running, removed on exit")
    p.add_argument("--stats", type=Path, help="also write the exit counts (JSON) here")
    p.add_argument(
        "--rt-priority",
        type=int,
        default=0,
        help="SCHED_FIFO priority 1-99 so busy CPUs do not delay the line (default 0: off)",
    )
    p.add_argument(
        "--no-fix-offloads",
        action="store_true",
        help="only check that GRO/GSO/TSO are off (default: turn them off first)",
    )
    args = p.parse_args(argv)
    if args.a == args.b:
        p.error(f"--a and --b are the same interface ({args.a})")
    if not math.isfinite(args.delay_ms) or not 0 <= args.delay_ms <= MAX_DELAY_MS:
        p.error(f"--delay-ms must be between 0 and {MAX_DELAY_MS}, not {args.delay_ms}")
    if args.capacity < 1:
        p.error(f"--capacity must be at least 1 frame, not {args.capacity}")
    if not 0 <= args.rt_priority <= 99:
        p.error(f"--rt-priority must be between 0 and 99, not {args.rt_priority}")
    return Config(
        args.a,
        args.b,
        check_delay(args.delay_ms / 1000),
        check_capacity(args.capacity),
        args.pid_file,
        args.stats,
        not args.no_fix_offloads,
        args.rt_priority,
    )


def mtu(sock: socket.socket, ifname: str) -> int:
    req = struct.pack("16si", ifname.encode(), 0)
    return int(struct.unpack("16si", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, req))[1])


def offloads_on(ifname: str) -> list[str]:
    """Offloads that would merge frames beyond the MTU and are on (ethtool -k)."""
    out = subprocess.run(["ethtool", "-k", ifname], capture_output=True, text=True, check=True)
    on = []
    for line in out.stdout.splitlines():
        key, _, value = line.strip().partition(":")
        if key in MUST_BE_OFF and value.split() and value.split()[0] == "on":
            on.append(MUST_BE_OFF[key])
    return on


def prepare_offloads(ifname: str, fix: bool) -> None:
    """Turn offloads off (when `fix`) and check GRO/GSO/TSO/LRO are off."""
    if shutil.which("ethtool") is None:
        raise RuntimeError("ethtool not found: cannot check that GRO/GSO/TSO are off")
    if fix:
        args = [x for o in OFFLOADS for x in (o, "off")]
        subprocess.run(["ethtool", "-K", ifname, *args], capture_output=True, check=False)
    on = offloads_on(ifname)
    if on:
        raise RuntimeError(
            f"{ifname}: {', '.join(on)} still on; frames would exceed the MTU "
            f"(ethtool -K {ifname} {' '.join(f'{o} off' for o in OFFLOADS)})"
        )


def open_packet_socket(ifname: str) -> socket.socket:
    """Promiscuous AF_PACKET socket on `ifname` that never reads outgoing frames."""
    index = socket.if_nametoindex(ifname)  # OSError when missing (this namespace)
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        with contextlib.suppress(OSError):  # Linux >= 4.20; pkttype is checked anyway
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        sock.bind((ifname, ETH_P_ALL))
        mreq = struct.pack("iHH8s", index, PACKET_MR_PROMISC, 0, b"")
        sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def kernel_drops(sock: socket.socket) -> int:
    """Frames the socket's receive buffer dropped since the last call."""
    try:
        _, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    except OSError:
        return 0
    return int(drops)


def realtime(priority: int) -> str:
    """SCHED_FIFO at `priority` (0: leave the policy alone); what was done."""
    if priority == 0:
        return "normal scheduling"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
    except OSError as exc:
        return f"SCHED_FIFO {priority} refused ({exc}); normal scheduling"
    return f"SCHED_FIFO {priority}"


def low_timer_slack() -> None:
    """1 us timer slack (default 50 us) so select wakes up on time; best effort."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0)


@dataclass
class Line:
    """The I/O loop around a DelayCore: two sockets, select, send."""

    cfg: Config
    log: Callable[[str], None]
    core: DelayCore = field(init=False)
    socks: list[socket.socket] = field(default_factory=list)
    mtus: list[int] = field(default_factory=list)
    ignored_outgoing: int = 0
    oversize: int = 0
    truncated: int = 0
    kernel_drops: list[int] = field(default_factory=lambda: [0, 0])
    next_drop_check: float = 0.0

    def __post_init__(self) -> None:
        self.core = DelayCore(self.cfg.delay_s, self.cfg.capacity)

    def open(self) -> None:
        for ifname in (self.cfg.a, self.cfg.b):
            try:
                socket.if_nametoindex(ifname)
            except OSError:
                raise RuntimeError(f"no interface {ifname!r} in this network namespace") from None
            prepare_offloads(ifname, self.cfg.fix_offloads)
            sock = open_packet_socket(ifname)
            self.socks.append(sock)
            self.mtus.append(mtu(sock, ifname))

    def close(self) -> None:
        for sock in self.socks:
            sock.close()
        self.socks.clear()

    def _frames(self, side: int, buf: bytearray) -> Iterator[tuple[bytes, float]]:
        """Up to BATCH frames waiting on `side`: (frame, receive time, monotonic)."""
        sock, view = self.socks[side], memoryview(buf)
        offset = time.monotonic() - time.time()  # realtime kernel stamps -> monotonic
        for _ in range(BATCH):
            try:
                n, anc, flags, addr = sock.recvmsg_into([buf], 64)
            except BlockingIOError:
                return
            if addr[2] == PACKET_OUTGOING:
                self.ignored_outgoing += 1
                continue
            if flags & socket.MSG_TRUNC:  # larger than our buffer: cannot be forwarded
                self.truncated += 1
                self.log(f"dropped a frame larger than {len(buf)} B on {self._name(side)}")
                continue
            stamp = next((d for lvl, t, d in anc if t == SO_TIMESTAMPNS), None)
            if stamp is not None and len(stamp) >= 16:
                sec, nsec = struct.unpack("qq", stamp[:16])
                t = sec + nsec * 1e-9 + offset
            else:
                t = time.monotonic()
            if n > self.mtus[side] + ETH_OVERHEAD:
                self.oversize += 1
                if self.oversize == 1:
                    self.log(f"frame of {n} B on {self._name(side)} exceeds the MTU (GRO on?)")
            yield bytes(view[:n]), t

    def _name(self, side: int) -> str:
        return self.cfg.a if side == 0 else self.cfg.b

    def step(self, buf: bytearray) -> None:
        due = self.core.next_due()
        timeout = None if due is None else max(0.0, due - time.monotonic())
        readable, _, _ = select.select(self.socks, [], [], timeout)
        for side, sock in enumerate(self.socks):
            if sock in readable:
                for frame, t in self._frames(side, buf):
                    self.core.push(Direction(side), frame, t)
        for direction, frame in self.core.pop_due(time.monotonic()):
            try:
                self.socks[1 - direction].send(frame)
            except OSError as exc:
                self.core.tx_error(direction)
                if self.core.stats[direction].tx_errors == 1:
                    self.log(f"send on {self._name(1 - direction)} failed: {exc}")
        now = time.monotonic()
        report = self.core.drop_report(now)
        if report:
            self.log(report)
        if now >= self.next_drop_check:
            self.next_drop_check = now + DROP_CHECK_S
            self.check_socket_drops()

    def check_socket_drops(self) -> None:
        """Logs frames the sockets' receive buffers dropped (read from the kernel)."""
        for side, sock in enumerate(self.socks):
            new = kernel_drops(sock)
            if new:
                self.kernel_drops[side] += new
                self.log(
                    f"socket receive buffer of {self._name(side)} dropped {new} frame(s) "
                    f"({self.kernel_drops[side]} in all): the line cannot keep up"
                )

    def run(self) -> None:
        buf = bytearray(65536 + 64)
        while True:
            self.step(buf)

    def counts(self) -> dict[str, object]:
        self.check_socket_drops()
        out: dict[str, object] = {"type": "delayline-exit", "a": self.cfg.a, "b": self.cfg.b}
        out.update(self.core.counts())
        out["ignored_outgoing"] = self.ignored_outgoing
        out["oversize"] = self.oversize
        out["truncated"] = self.truncated
        out["socket_drops"] = {"a": self.kernel_drops[0], "b": self.kernel_drops[1]}
        out["discarded_at_exit"] = self.core.pending()
        return out


def main(argv: list[str] | None = None) -> int:
    cfg = parse_args(argv)
    tag = f"delayline[{cfg.a}<->{cfg.b} {cfg.delay_s * 1000:g} ms]"

    def log(msg: str) -> None:
        print(f"{tag}: {msg}", file=sys.stderr, flush=True)

    if os.geteuid() != 0:
        log("needs root (AF_PACKET raw sockets)")
        return 2
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    line = Line(cfg, log)
    low_timer_slack()
    sched = realtime(cfg.rt_priority)
    try:
        try:
            line.open()
        except (RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            log(f"cannot start: {exc}")
            return 2
        if cfg.pid_file is not None:
            cfg.pid_file.parent.mkdir(parents=True, exist_ok=True)
            cfg.pid_file.write_text(f"{os.getpid()}\n")
        log(f"running, pid {os.getpid()}, capacity {cfg.capacity} frames per direction, {sched}")
        with contextlib.suppress(Stop):
            line.run()
    except Stop:  # a signal during start-up
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        counts = line.counts()
        line.close()
        if cfg.pid_file is not None:
            cfg.pid_file.unlink(missing_ok=True)
    text = json.dumps(counts)
    print(text, flush=True)
    if cfg.stats_file is not None:
        cfg.stats_file.write_text(text + "\n")
    lost = line.core.dropped() + sum(line.kernel_drops) + line.truncated
    log(f"stopped; {lost} frame(s) lost, {counts['discarded_at_exit']} discarded at exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
