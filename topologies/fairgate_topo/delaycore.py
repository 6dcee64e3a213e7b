"""The sans-IO core of the userspace delay line (``fairgate_topo.delayline``).

Frames arrive from side A or side B with an arrival time; each is released to
the other side ``delay_s`` later. Each direction is a FIFO whose due times never
decrease (a frame's due time is at least its predecessor's), so order is kept
per direction even if the caller's clock steps back; ``pop_due`` merges the
two directions by due time. Each direction holds at most ``capacity`` frames:
one more is refused, counted (``dropped_full``) and reported by
``drop_report``. Nothing here reads a clock or touches a socket.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import IntEnum

LATENESS_BUCKET_S = 10e-6  # lateness histogram: 10 us buckets
LATENESS_BUCKETS = 10_000  # the last bucket collects everything from 100 ms up
DROP_REPORT_EVERY_S = 1.0


class Direction(IntEnum):
    AB = 0  # received on side A, sent on side B
    BA = 1


@dataclass
class DirectionStats:
    rx: int = 0  # frames accepted into the line
    rx_bytes: int = 0
    tx: int = 0  # frames handed to the sender
    dropped_full: int = 0  # refused: the direction held `capacity` frames
    tx_errors: int = 0  # the sender could not send (reported by the I/O loop)
    max_pending: int = 0


@dataclass
class Lateness:
    """Release time minus due time, as a histogram (the I/O loop's timer error)."""

    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    buckets: list[int] = field(default_factory=lambda: [0] * LATENESS_BUCKETS)

    def add(self, late_s: float) -> None:
        late_s = max(0.0, late_s)
        self.count += 1
        self.total_s += late_s
        self.max_s = max(self.max_s, late_s)
        self.buckets[min(LATENESS_BUCKETS - 1, int(late_s / LATENESS_BUCKET_S))] += 1

    def quantile_s(self, q: float) -> float | None:
        """Upper edge of the bucket holding quantile q (None before any frame)."""
        if not self.count:
            return None
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for i, n in enumerate(self.buckets):
            seen += n
            if seen >= rank:
                return (i + 1) * LATENESS_BUCKET_S
        return LATENESS_BUCKETS * LATENESS_BUCKET_S  # pragma: no cover - rank <= count

    def summary(self) -> dict[str, float | int | None]:
        def us(x: float | None) -> float | None:
            return None if x is None else round(x * 1e6, 1)

        return {
            "frames": self.count,
            "mean_us": us(self.total_s / self.count) if self.count else None,
            "p50_us": us(self.quantile_s(0.5)),
            "p99_us": us(self.quantile_s(0.99)),
            "max_us": us(self.max_s) if self.count else None,
        }


def check_delay(delay_s: float) -> float:
    if not isinstance(delay_s, int | float) or isinstance(delay_s, bool):
        raise ValueError(f"delay must be a number of seconds, not {delay_s!r}")
    if not math.isfinite(delay_s) or delay_s < 0:
        raise ValueError(f"delay must be finite and >= 0, not {delay_s!r}")
    if delay_s > 10.0:
        raise ValueError(f"delay {delay_s} s is above the 10 s limit (a typo in ms vs s?)")
    return float(delay_s)


def check_capacity(capacity: int) -> int:
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        raise ValueError(f"capacity must be an integer >= 1 frame, not {capacity!r}")
    return capacity


class DelayCore:
    """Two fixed-delay FIFOs of bounded size, one per direction."""

    def __init__(self, delay_s: float, capacity: int = 8192) -> None:
        self.delay_s = check_delay(delay_s)
        self.capacity = check_capacity(capacity)
        self._queues: tuple[deque[tuple[float, bytes]], deque[tuple[float, bytes]]] = (
            deque(),
            deque(),
        )
        self.stats = (DirectionStats(), DirectionStats())
        self.lateness = Lateness()
        self._drops_reported = 0
        self._last_report: float | None = None

    def push(self, direction: Direction, frame: bytes, now: float) -> bool:
        """Frame received at `now` (seconds, any monotonic clock); False when the
        direction is full (the frame is dropped and counted)."""
        queue, st = self._queues[direction], self.stats[direction]
        if len(queue) >= self.capacity:
            st.dropped_full += 1
            return False
        due = now + self.delay_s
        if queue and due < queue[-1][0]:
            due = queue[-1][0]  # the clock stepped back: keep the order
        queue.append((due, frame))
        st.rx += 1
        st.rx_bytes += len(frame)
        st.max_pending = max(st.max_pending, len(queue))
        return True

    def next_due(self) -> float | None:
        """The earliest due time of a held frame (None when empty)."""
        heads = [q[0][0] for q in self._queues if q]
        return min(heads) if heads else None

    def pop_due(self, now: float) -> list[tuple[Direction, bytes]]:
        """Every frame due at or before `now`, earliest first (ties: A->B first)."""
        out: list[tuple[Direction, bytes]] = []
        qa, qb = self._queues
        while True:
            da = qa[0][0] if qa and qa[0][0] <= now else None
            db = qb[0][0] if qb and qb[0][0] <= now else None
            if da is None and db is None:
                return out
            d = Direction.AB if db is None or (da is not None and da <= db) else Direction.BA
            due, frame = self._queues[d].popleft()
            self.stats[d].tx += 1
            self.lateness.add(now - due)
            out.append((d, frame))

    def tx_error(self, direction: Direction) -> None:
        """The I/O loop could not send a popped frame: it is lost, and counted."""
        self.stats[direction].tx -= 1
        self.stats[direction].tx_errors += 1

    def pending(self, direction: Direction | None = None) -> int:
        if direction is None:
            return sum(len(q) for q in self._queues)
        return len(self._queues[direction])

    def dropped(self) -> int:
        return sum(s.dropped_full + s.tx_errors for s in self.stats)

    def drop_report(self, now: float) -> str | None:
        """A log line when frames were lost since the last report: at once for
        the first loss, then at most once per DROP_REPORT_EVERY_S."""
        total = self.dropped()
        if total == self._drops_reported:
            return None
        if self._last_report is not None and now - self._last_report < DROP_REPORT_EVERY_S:
            return None
        new = total - self._drops_reported
        self._drops_reported, self._last_report = total, now
        parts = [
            f"{d.name}: {s.dropped_full} buffer full, {s.tx_errors} send errors"
            for d, s in zip(Direction, self.stats, strict=True)
        ]
        return f"lost {new} frame(s) since the last report (capacity {self.capacity}); " + (
            "; ".join(parts)
        )

    def counts(self) -> dict[str, object]:
        out: dict[str, object] = {"delay_ms": self.delay_s * 1000, "capacity": self.capacity}
        for d, s in zip(Direction, self.stats, strict=True):
            out[d.name.lower()] = {
                "rx": s.rx,
                "rx_bytes": s.rx_bytes,
                "tx": s.tx,
                "dropped_full": s.dropped_full,
                "tx_errors": s.tx_errors,
                "max_pending": s.max_pending,
                "pending": len(self._queues[d]),
            }
        out["lateness"] = self.lateness.summary()
        return out
