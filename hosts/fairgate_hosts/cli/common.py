"""What every fg-* command shares: one-line errors, units, the lab session, PID files.

The lab (``fairgate_topo.interactive``) exports ``FG_RUN_DIR`` to every host shell and writes
``$FG_RUN_DIR/session.json`` (host names and addresses, the algorithm, the ack delay). A
command registers its PID in ``$FG_RUN_DIR/pids/`` while it runs, so leaving the lab can
stop what the user started (by PID, checked against the process start time).
Outside a lab (no ``FG_RUN_DIR``) the commands still work with IPv4 addresses and write their
logs under ``./fg-cmds/``.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import os
import re
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

RUN_DIR_ENV = "FG_RUN_DIR"
BACKGROUND_ENV = "FG_BACKGROUND"
_SUFFIX = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3}


class CommandError(Exception):
    """Bad input: the command prints ``<prog>: <message>`` and exits 2."""


class OneLineParser(argparse.ArgumentParser):
    """argparse whose errors are one line: ``fg-send: <what> (fg-send --help)``."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def fail(prog: str, message: str) -> int:
    print(f"{prog}: {message}", file=sys.stderr)
    return 2


def parse_bitrate_kbps(text: str) -> int:
    """'20M', '500k', '1.5G', '64000' (bit/s, powers of 1000) -> kbit/s (at least 1)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:bit/s|b/s|bps)?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a bit rate: {text!r} (e.g. 20M, 500k)")
    bits = float(m.group(1)) * _SUFFIX[m.group(2).lower()]
    kbps = round(bits / 1000)
    if kbps < 1:
        raise argparse.ArgumentTypeError(f"rate {text!r} is below 1 kbit/s")
    if kbps >= 0xFFFFFFFF:
        raise argparse.ArgumentTypeError(f"rate {text!r} does not fit the rate header")
    return kbps


def parse_bytes(text: str) -> int:
    """'10k', '5M', '1500' (bytes, powers of 1000) -> bytes (> 0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)[bB]?\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 10k, 5M)")
    value = int(float(m.group(1)) * _SUFFIX[m.group(2).lower()])
    if value <= 0:
        raise argparse.ArgumentTypeError(f"size must be > 0: {text!r}")
    return value


def parse_seconds(text: str) -> float:
    """'30', '30s', '1.5' -> seconds (> 0)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*s?\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(f"not a positive number of seconds: {text!r}")
    return float(m.group(1))


def parse_count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text!r}")
    return value


@dataclass(frozen=True)
class Session:
    """The lab a command runs in (``session.json``), or none."""

    run_dir: Path | None
    hosts: dict[str, str] = field(default_factory=dict)  # name -> IPv4
    algo: str = "qfcp"
    ack_delay_ms: float = 0.0

    @classmethod
    def load(cls, environ: dict[str, str] | None = None) -> Session:
        env = os.environ if environ is None else environ
        raw = env.get(RUN_DIR_ENV)
        if not raw:
            return cls(None)
        run_dir = Path(raw)
        try:
            doc = json.loads((run_dir / "session.json").read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise CommandError(
                f"{RUN_DIR_ENV}={raw} holds no readable session.json ({exc})"
            ) from None
        return cls(
            run_dir,
            {str(k): str(v) for k, v in doc.get("hosts", {}).items()},
            str(doc.get("algo", "qfcp")),
            float(doc.get("ack_delay_ms", 0.0)),
        )

    def address(self, name_or_ip: str) -> str:
        """A host name of this lab or an IPv4 address -> IPv4 address."""
        if name_or_ip in self.hosts:
            return self.hosts[name_or_ip]
        try:
            return str(ipaddress.IPv4Address(name_or_ip))
        except ValueError:
            known = ", ".join(sorted(self.hosts)) or "none: not in a lab, give an IPv4 address"
            raise CommandError(f"unknown host {name_or_ip!r} (hosts: {known})") from None

    def name_of(self, ip: str) -> str:
        return next((n for n, a in self.hosts.items() if a == ip), ip)

    def out_dir(self) -> Path:
        path = (self.run_dir or Path("fg-cmds")) / "cmds"
        path.mkdir(parents=True, exist_ok=True)
        return path


def local_address(dst: str, port: int) -> str:
    """The address this host sends from towards ``dst`` (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((dst, port))
            return str(s.getsockname()[0])
        except OSError:
            return "0.0.0.0"


def log_path(session: Session, host: str, what: str, suffix: str = ".jsonl") -> Path:
    """``<run>/cmds/<host>-<what>-<HHMMSS>-<pid><suffix>``."""
    stem = f"{host}-{what}-{time.strftime('%H%M%S')}-{os.getpid()}"
    return session.out_dir() / (stem + suffix)


def process_start_ticks(pid: int) -> int | None:
    """Field 22 of /proc/<pid>/stat (start time in clock ticks), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


@contextlib.contextmanager
def registered(session: Session, label: str) -> Iterator[None]:
    """Lists this process in ``$FG_RUN_DIR/pids/`` while the block runs."""
    if session.run_dir is None:
        yield
        return
    pid_dir = session.run_dir / "pids"
    pid_dir.mkdir(parents=True, exist_ok=True)
    path = pid_dir / str(os.getpid())
    path.write_text(json.dumps({"start": process_start_ticks(os.getpid()), "cmd": label}) + "\n")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)


def in_foreground() -> bool:
    """False for a background job of a terminal (``h1 fg-send r1 &``): its per-second lines
    would pile up in the host's terminal; the log has them. The lab's CLI marks those with
    ``FG_BACKGROUND=1`` (Mininet's host shells have no job control to ask)."""
    if os.environ.get(BACKGROUND_ENV) == "1":
        return False
    try:
        return os.tcgetpgrp(sys.stdout.fileno()) == os.getpgrp()
    except (OSError, ValueError):
        return True


def say(text: str) -> None:
    print(text, flush=True)


def fmt_kbps(kbps: float | None) -> str:
    if kbps is None:
        return "-"
    if kbps >= 0xFFFFFFFF:
        return "unlimited"
    return f"{kbps / 1000:.2f} Mb/s" if kbps >= 1000 else f"{kbps:.0f} kb/s"


def json_lines(path: Path) -> list[dict[str, Any]]:
    out = []
    with contextlib.suppress(OSError):
        for line in path.read_text(errors="replace").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
    return out
