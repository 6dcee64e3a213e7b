"""An in-process Congestion Manager driving UDP flows to one receiver agent (selectors loop).

Each flow has its own UDP socket (so the receiver agent sees it as its own peer) and sends
rate-header DATA packets when the CM grants it bytes (``app_notify``); the CM learns the
path from probes answered by the receiver agent (``python -m fairgate_hosts.receiver``)
and, when ``explicit`` is on, from the rate field the switches stamp into the acks.
Applications implement :class:`CMApp`: ``on_grant`` sends (and returns what it sent),
``on_rate`` sees every ``change_rate``, ``on_timer`` runs every ``timer_s``. The event
handling is ``fairgate_hosts.cm.host.CMHostCore``'s, shared with the simulator.
"""

from __future__ import annotations

import selectors
import socket
from dataclasses import dataclass, field

from fairgate_hosts.agentio import monotonic_us
from fairgate_hosts.cm.host import CMApp, CMFlow, CMHostCore

__all__ = ["CMApp", "CMHost", "UdpFlow"]


@dataclass
class UdpFlow(CMFlow):
    """A CM flow with its own connected UDP socket (``sport``: the socket's local port)."""

    sock: socket.socket | None = None


@dataclass
class CMHost(CMHostCore):
    """``CMHostCore`` on UDP sockets and a selectors loop (``run``)."""

    probe_sock: socket.socket = field(init=False)
    sel: selectors.DefaultSelector = field(default_factory=selectors.DefaultSelector)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.probe_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.probe_sock.bind(("0.0.0.0", 0))
        self.probe_sock.setblocking(False)
        self.sel.register(self.probe_sock, selectors.EVENT_READ, None)

    # ------------------------------------------------------------------ I/O
    def _send_data(self, flow: UdpFlow, data: bytes) -> bool:
        assert flow.sock is not None
        try:
            flow.sock.send(data)
        except OSError:
            return False
        return True

    def _send_probe(self, dst: str, data: bytes) -> bool:
        try:
            self.probe_sock.sendto(data, (dst, self.port))
        except OSError:
            return False
        return True

    # ------------------------------------------------------------------ flows
    def open(self, weight: float = 1.0) -> UdpFlow:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.connect((self.dst, self.port))
        sock.setblocking(False)
        fid = self.cm.open("", self.dst, weight, now_us=monotonic_us())
        flow = UdpFlow(fid, weight, sport=sock.getsockname()[1], sock=sock)
        self.flows[fid] = flow
        self.sel.register(sock, selectors.EVENT_READ, flow)
        return flow

    def close_all(self) -> None:
        for flow in list(self.flows.values()):
            self.sel.unregister(flow.sock)
            flow.sock.close()
            self.cm.close(flow.fid)
        self.flows.clear()
        self.sel.unregister(self.probe_sock)
        self.probe_sock.close()
        self.sel.close()

    def request(self, flow: UdpFlow, nbytes: int, app: CMApp) -> None:
        now = monotonic_us()
        self.handle(self.cm.request(flow.fid, nbytes, now), app, now)

    # ------------------------------------------------------------------ loop
    def _read(self, key: selectors.SelectorKey, app: CMApp) -> None:
        sock: socket.socket = key.fileobj  # type: ignore[assignment]
        flow: UdpFlow | None = key.data
        for _ in range(256):
            try:
                data, peer = sock.recvfrom(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # ICMP port unreachable etc.
                return
            now = monotonic_us()
            if flow is None:
                self.handle(self.cm.on_probe_response(peer[0], data, now), app, now)
            else:
                self.handle(self.on_ack(flow, data, now), app, now)

    def run(self, app: CMApp, duration_s: float, timer_s: float, stopped: object) -> None:
        """Run until ``duration_s`` passed or ``stopped.stopped`` (a StopFlag) is set."""
        start = monotonic_us()
        end = start + int(duration_s * 1e6)
        next_timer = start + int(timer_s * 1e6)
        while not getattr(stopped, "stopped", False):
            now = monotonic_us()
            if now >= end:
                break
            if now >= next_timer:
                app.on_timer(self, now)
                next_timer += int(timer_s * 1e6)
            self.handle(self.cm.tick(now), app, now)
            deadline = min(end, next_timer)
            cm_next = self.cm.next_deadline(now)
            if cm_next is not None:
                deadline = min(deadline, cm_next)
            timeout = max(0.0, (deadline - monotonic_us()) / 1e6)
            for key, _ in self.sel.select(timeout):
                self._read(key, app)
