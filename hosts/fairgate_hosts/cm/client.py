"""Small synchronous client of the CM daemon.

>>> cm = CMClient()                       # doctest: +SKIP
>>> fid = cm.open("10.0.0.2", weight=2)   # doctest: +SKIP
>>> cm.request(fid, 12000); cm.poll(0.1)  # app_notify callbacks run inside poll()

The paper's names (Fig. 8) work too: ``cm_open(src, dst)``, ``cm_request(id, nbytes,
minbytes, latency)``, ``cm_notify``, ``cm_update(id, nrecd, loss_occurred, rtt)``,
``cm_query(dst) -> CMEntry``, ``cm_close``.

Events that arrive while waiting for a reply are queued and delivered by :meth:`poll`.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairgate_hosts.cm.core import CMEntry
from fairgate_hosts.cm.protocol import default_socket_path


class CMError(RuntimeError):
    """The daemon refused a request."""


class CMClient:
    def __init__(self, path: Path | str | None = None, timeout: float = 5.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(path or default_socket_path()))
        self.timeout = timeout
        self._buf = b""
        self._ids = 0
        self.events: deque[dict[str, Any]] = deque()
        self.app_notify: dict[int, Callable[[int], None]] = {}
        self.change_rate: dict[int, Callable[[float], None]] = {}
        self.rates: dict[int, float] = {}
        self.dst_of: dict[int, str] = {}

    def close_connection(self) -> None:
        self.sock.close()

    def __enter__(self) -> CMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close_connection()

    # ------------------------------------------------------------------ plumbing
    def _readline(self, deadline: float) -> dict[str, Any] | None:
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return None
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("CM daemon closed the connection")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def raw(self, line: bytes) -> dict[str, Any]:
        """Send a raw line and return the next reply (for tests and debugging)."""
        self.sock.sendall(line.rstrip(b"\n") + b"\n")
        return self._reply(None)

    def _reply(self, rid: Any) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._readline(deadline)
            if msg is None:
                raise TimeoutError("no reply from the CM daemon")
            if "event" in msg:
                self._note(msg)
                self.events.append(msg)
            elif rid is None or msg.get("id") == rid:
                return msg

    def call(self, op: str, **kw: Any) -> Any:
        self._ids += 1
        rid = self._ids
        self.sock.sendall((json.dumps({"id": rid, "op": op, **kw}) + "\n").encode())
        rep = self._reply(rid)
        if not rep.get("ok"):
            raise CMError(rep.get("error", "error"))
        return rep.get("result")

    def _note(self, ev: dict[str, Any]) -> None:
        if ev.get("event") == "change_rate":
            self.rates[ev["flow"]] = ev["rate_Bps"]

    def poll(self, timeout: float = 0.0) -> list[dict[str, Any]]:
        """Deliver queued and newly arrived events (running callbacks); returns them."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self._readline(deadline if not self.events else time.monotonic())
            if msg is None:
                break
            if "event" in msg:
                self._note(msg)
                self.events.append(msg)
        out = list(self.events)
        self.events.clear()
        for ev in out:
            if ev["event"] == "app_notify" and ev["flow"] in self.app_notify:
                self.app_notify[ev["flow"]](ev["nbytes"])
            elif ev["event"] == "change_rate" and ev["flow"] in self.change_rate:
                self.change_rate[ev["flow"]](ev["rate_Bps"])
        return out

    # ------------------------------------------------------------------ API (Fig. 8)
    def open(
        self,
        dst: str,
        src: str = "",
        weight: float = 1.0,
        app_notify: Callable[[int], None] | None = None,
        change_rate: Callable[[float], None] | None = None,
    ) -> int:
        fid = int(self.call("open", dst=dst, src=src, weight=weight)["flow"])
        self.dst_of[fid] = dst
        if app_notify:
            self.app_notify[fid] = app_notify
        if change_rate:
            self.change_rate[fid] = change_rate
        return fid

    def request(self, flow: int, nbytes: int) -> None:
        self.call("request", flow=flow, nbytes=nbytes)

    def notify(self, flow: int, nsent: int) -> None:
        self.call("notify", flow=flow, nsent=nsent)

    def update(
        self,
        flow: int,
        nrecd: int,
        loss: bool = False,
        rtt_us: int | None = None,
        persistent: bool = False,
        explicit_rate_kbps: int | None = None,
    ) -> None:
        self.call(
            "update",
            flow=flow,
            nrecd=nrecd,
            loss=loss,
            rtt_us=rtt_us,
            persistent=persistent,
            explicit_rate_kbps=explicit_rate_kbps,
        )

    def query(self, flow: int) -> dict[str, Any]:
        return dict(self.call("query", flow=flow))

    def close(self, flow: int) -> None:
        self.call("close", flow=flow)
        self.app_notify.pop(flow, None)
        self.change_rate.pop(flow, None)
        self.dst_of.pop(flow, None)

    # ------------------------------------------------------------------ the paper's names
    def cm_open(
        self,
        src: str,
        dst: str,
        *,
        weight: float = 1.0,
        app_notify: Callable[[int], None] | None = None,
        change_rate: Callable[[float], None] | None = None,
    ) -> int:
        """``cm_id cm_open(addr src, addr dst)`` (Fig. 8)."""
        return self.open(dst, src, weight, app_notify, change_rate)

    def cm_request(
        self, cm_id: int, nbytes: int, minbytes: int | None = None, latency: float | None = None
    ) -> None:
        """``cm_request(id, nbytes, minbytes, latency)``: see ``core.cm_request``."""
        if minbytes is not None and not 0 < minbytes <= nbytes:
            raise ValueError("minbytes must be in 1..nbytes")
        if latency is not None and latency < 0:
            raise ValueError("latency must be >= 0")
        self.request(cm_id, nbytes)

    def cm_notify(self, cm_id: int, nsent: int) -> None:
        self.notify(cm_id, nsent)

    def cm_update(self, cm_id: int, nrecd: int, loss_occurred: bool, rtt: float | None) -> None:
        """``cm_update(id, nrecd, loss_occurred, rtt)`` with ``rtt`` in seconds."""
        self.update(cm_id, nrecd, loss_occurred, None if rtt is None else int(rtt * 1e6))

    def cm_query(self, dst: str) -> CMEntry:
        """``cm_query(cm_entry *entry, addr dst)``, through a flow this client has to dst."""
        flow = next((f for f, d in self.dst_of.items() if d == dst), None)
        if flow is None:
            raise CMError(f"no open flow to {dst}: cm_open one first")
        q = self.query(flow)
        return CMEntry(dst, q["macroflow_rate_Bps"], q["srtt_us"] / 1e6, q["rttvar_us"] / 1e6)

    def cm_close(self, cm_id: int) -> None:
        self.close(cm_id)
