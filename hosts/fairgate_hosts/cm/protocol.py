"""The CM daemon's wire protocol: JSON lines over a UNIX stream socket.

Request  ``{"id": 7, "op": "open", "dst": "10.0.0.2", "weight": 1}``
Reply    ``{"id": 7, "ok": true, "result": {"flow": 3}}`` or ``{"id": 7, "ok": false,
"error": "..."}``. Events (unsolicited): ``{"event": "app_notify", "flow": 3, "nbytes": 1200}``
and ``{"event": "change_rate", "flow": 3, "rate_Bps": 125000.0}``.

Ops: ``open(dst, src="", weight=1)``, ``request(flow, nbytes)``, ``notify(flow, nsent)``,
``update(flow, nrecd, loss=false, rtt_us=null, persistent=false, explicit_rate_kbps=null)``,
``query(flow)``, ``close(flow)``, ``ping()``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_LINE = 65536
OPS = ("open", "request", "notify", "update", "query", "close", "ping")


class ProtocolError(ValueError):
    """A request the daemon refuses (bad JSON, unknown op, bad argument)."""


def default_socket_path() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    root = Path(base) / "fairgate" if base else Path(f"/tmp/fairgate-cm-{os.getuid()}")
    return root / "cm.sock"


def secure_dir(path: Path) -> None:
    """Create ``path`` (mode 0700) or check that it is ours and closed to others."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = path.lstat()
    if not stat.S_ISDIR(st.st_mode):
        raise PermissionError(f"{path} is not a directory")
    if st.st_uid != os.getuid():
        raise PermissionError(f"{path} belongs to uid {st.st_uid}, not {os.getuid()}")
    if st.st_mode & 0o077:
        raise PermissionError(f"{path} is open to group/others (mode {st.st_mode & 0o777:o})")


def int_arg(req: dict[str, object], name: str, lo: int = 0, default: int | None = None) -> int:
    value = req.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{name} must be an integer")
    if value < lo:
        raise ProtocolError(f"{name} must be >= {lo}")
    return value
