"""Per-flow records of the TCP traffic generator and the run summary (pure functions).

A record is one JSON object per flow (``type: "flow"``), see :class:`FlowRecord`. The
summary follows the session-control paper's Tables I-II: flows completed per second in a
measurement window (skipping a warm-up), mean flow completion time and goodput of the
flows that complete, and the size mix of completed flows against the offered one.
"""

from __future__ import annotations

import json
import math
import socket
import struct
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

OUTCOMES = ("completed", "timeout", "refused", "reset", "error", "capped", "interrupted")
PHASES = ("not_started", "connect", "send", "wait_eof", "done")
SIZE_THRESHOLDS = (10_000, 100_000, 1_000_000)
#: ``fct_arrived_s`` counts flows that arrived up to this long before the window's end (at
#: most a quarter of the window), so that each had time to complete
ARRIVED_MARGIN_S = 10.0


@dataclass(slots=True)
class FlowRecord:
    """One flow. Times are seconds of a monotonic clock since the run started.

    ``syn_retrans`` is ``tcpi_total_retrans`` read right after ``connect()`` returned, before
    any data was written: the number of SYN retransmissions (null when the connection never
    completed; then ``connect_s`` is null too). ``retrans`` is ``tcpi_total_retrans`` at the
    end (all retransmitted segments, SYNs included). ``fct_s`` = first connect() call until
    the server's FIN was read (the server closes after reading our FIN, so all data was
    delivered); null unless completed. A FIN read before the server acknowledged all the
    data (a server closing early: an idle timeout) is ``reset``, not completed
    (:func:`data_acked`). ``phase`` is where the flow ended.
    """

    flow: int
    scheduled_s: float
    size: int
    start_s: float | None = None
    outcome: str = "interrupted"
    phase: str = "not_started"
    connect_s: float | None = None
    fct_s: float | None = None
    end_s: float | None = None
    syn_retrans: int | None = None
    retrans: int | None = None
    sent: int = 0
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {"type": "flow", **asdict(self)}


# --------------------------------------------------------------------- TCP_INFO
# struct tcp_info (linux/tcp.h): 8 bytes of u8 fields, then u32 fields, then u64 fields.
_TI_TOTAL_RETRANS = 8 + 23 * 4
_TI_RTT = 8 + 15 * 4
_TI_BYTES_ACKED = 120
_TI_BYTES_SENT = 200
TCP_INFO_LEN = 232


@dataclass(frozen=True, slots=True)
class TcpInfo:
    ca_state: int  # 4 = TCP_CA_Loss (retransmission timeout)
    total_retrans: int
    rtt_us: int
    bytes_acked: int | None
    bytes_sent: int | None


def parse_tcp_info(buf: bytes) -> TcpInfo:
    """Decode the fields we use; fields beyond what the kernel returned are None."""

    def u64(off: int) -> int | None:
        return struct.unpack_from("=Q", buf, off)[0] if len(buf) >= off + 8 else None

    total = struct.unpack_from("=I", buf, _TI_TOTAL_RETRANS)[0]
    rtt = struct.unpack_from("=I", buf, _TI_RTT)[0]
    return TcpInfo(buf[1], total, rtt, u64(_TI_BYTES_ACKED), u64(_TI_BYTES_SENT))


def data_acked(info: TcpInfo | None, size: int) -> bool:
    """Whether the peer acknowledged all ``size`` bytes of data (``tcpi_bytes_acked``
    counts the SYN too: 1 + data, + 1 once our FIN is acknowledged). Unknown (no
    TCP_INFO, or a kernel without the field) counts as acknowledged.

    A server that closes a connection without having read to EOF (an idle timeout)
    also sends a FIN, and the client then reads EOF as on a completed flow: this tells
    the two apart."""
    if info is None or info.bytes_acked is None:
        return True
    return info.bytes_acked - 1 >= size


def tcp_info(sock: socket.socket) -> TcpInfo | None:
    try:
        return parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN))
    except (OSError, struct.error):
        return None


# --------------------------------------------------------------------- I/O
def write_jsonl(path: Path | str, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, separators=(",", ":")) + "\n")


def load_records(path: Path | str) -> list[FlowRecord]:
    """Flow records of a JSONL file (other record types are skipped)."""
    names = set(FlowRecord.__slots__)  # type: ignore[attr-defined]
    out: list[FlowRecord] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("type") == "flow":
            out.append(FlowRecord(**{k: v for k, v in row.items() if k in names}))
    return out


# --------------------------------------------------------------------- summary
def _quantile(xs: Sequence[float], q: float) -> float | None:
    if not xs:
        return None
    ys = sorted(xs)
    pos = q * (len(ys) - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    return ys[lo] + (ys[hi] - ys[lo]) * (pos - lo)


def _mean(xs: Sequence[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def size_mix(sizes: Sequence[int], thresholds: Sequence[int] = SIZE_THRESHOLDS) -> dict[str, Any]:
    """Count, mean, and the fraction of flows above each threshold (Table II's view:
    ``1 - frac_above[10000]`` is the percentile of 10 kB)."""
    n = len(sizes)
    return {
        "count": n,
        "mean_bytes": _mean(sizes),
        "median_bytes": _quantile(sizes, 0.5),
        "frac_above": {str(t): (sum(s > t for s in sizes) / n if n else None) for t in thresholds},
    }


@dataclass(frozen=True, slots=True)
class Window:
    """Completions are counted when ``start_s + fct_s`` falls in ``[start, end)``."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not self.end > self.start >= 0:
            raise ValueError(f"need 0 <= warm-up < window end, got [{self.start}, {self.end})")

    @property
    def length(self) -> float:
        return self.end - self.start

    def __contains__(self, t: object) -> bool:
        return isinstance(t, int | float) and self.start <= t < self.end


def arrived_fct(
    records: Sequence[FlowRecord], win: Window, margin_s: float = ARRIVED_MARGIN_S
) -> dict[str, Any]:
    """The flows scheduled in [window start, window end - margin) (the margin at most a
    quarter of the window, so that each had time to finish): how many, how many completed
    (wherever they ended) and their mean FCT."""
    came = Window(win.start, win.end - min(margin_s, win.length / 4.0))
    arrived = [r for r in records if r.scheduled_s in came]
    done = [r.fct_s for r in arrived if r.outcome == "completed" and r.fct_s is not None]
    return {
        "window_s": [came.start, came.end],
        "arrived": len(arrived),
        "completed": len(done),
        "mean": _mean(done),
    }


def summarize(
    records: Sequence[FlowRecord],
    duration_s: float,
    warmup_s: float = 10.0,
    window_end_s: float | None = None,
    thresholds: Sequence[int] = SIZE_THRESHOLDS,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Summary of a run that offered flows for ``duration_s`` seconds.

    Window = ``[warmup_s, window_end_s or duration_s)``. ``offered_per_s`` counts every
    arrival (capped ones too) over ``duration_s``; ``completion_rate_per_s`` counts flows
    whose completion falls in the window, divided by its length. FCT, goodput (size x 8 /
    FCT, Table I's "avg goodput") and the completed size mix are over those flows; the
    offered size mix is over the flows that arrived in the window.
    """
    if duration_s <= 0:
        raise ValueError("duration_s must be > 0")
    win = Window(warmup_s, duration_s if window_end_s is None else window_end_s)
    done = [
        r
        for r in records
        if r.outcome == "completed"
        and r.fct_s is not None
        and r.start_s is not None
        and (r.start_s + r.fct_s) in win
    ]
    arrived = [r for r in records if r.scheduled_s in win]
    fcts = [r.fct_s for r in done if r.fct_s is not None]
    goodputs = [r.size * 8 / r.fct_s / 1000 for r in done if r.fct_s]
    transfers = [r.fct_s - r.connect_s for r in done if r.fct_s and r.connect_s is not None]
    connected = [r for r in records if r.syn_retrans is not None]
    connects = [r.connect_s for r in connected if r.connect_s is not None]
    out: dict[str, Any] = {
        "duration_s": duration_s,
        "window_s": [win.start, win.end],
        "flows": len(records),
        "offered_per_s": len(records) / duration_s,
        "offered_in_window_per_s": len(arrived) / win.length,
        "outcomes": dict(Counter(r.outcome for r in records)),
        "completed_in_window": len(done),
        "completion_rate_per_s": len(done) / win.length,
        "fct_s": {
            "mean": _mean(fcts),
            "p50": _quantile(fcts, 0.5),
            "p90": _quantile(fcts, 0.9),
            "p99": _quantile(fcts, 0.99),
            "max": max(fcts) if fcts else None,
        },
        # the flows that arrived in [window start, window end - margin) and completed: the
        # FCT of the operating point, without flows admitted before the window (a search's
        # first probes) that complete in it
        "fct_arrived_s": arrived_fct(records, win),
        # FCT once connected (fct_s - connect_s): what admission costs, SYN waits excluded
        "transfer_s": {"mean": _mean(transfers), "p50": _quantile(transfers, 0.5)},
        "mean_goodput_kbps": _mean(goodputs),
        "sizes_completed": size_mix([r.size for r in done], thresholds),
        "sizes_offered": size_mix([r.size for r in arrived], thresholds),
        "connect_s": {"mean": _mean(connects), "p99": _quantile(connects, 0.99)},
        "syn_retrans": {
            "connected": len(connected),
            "mean": _mean([float(r.syn_retrans or 0) for r in connected]),
            "frac_retried": (
                sum(1 for r in connected if (r.syn_retrans or 0) > 0) / len(connected)
                if connected
                else None
            ),
        },
    }
    if extra:
        out.update(extra)
    return out


@dataclass
class RecordSink:
    """Collects records in memory and appends each to an open JSONL file as it ends."""

    path: Path | str | None = None
    records: list[FlowRecord] = field(default_factory=list)
    _fh: Any = None

    def __post_init__(self) -> None:
        if self.path is not None:
            self._fh = open(self.path, "w", encoding="utf-8")  # noqa: SIM115

    def header(self, row: dict[str, Any]) -> None:
        if self._fh is not None:
            self._fh.write(json.dumps(row, separators=(",", ":")) + "\n")

    def add(self, rec: FlowRecord) -> None:
        self.records.append(rec)
        if self._fh is not None:
            self._fh.write(json.dumps(rec.as_json(), separators=(",", ":")) + "\n")

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
