"""The event loop: a heap of callbacks (no generators, no event objects).

Every simulated action is a callback scheduled at an absolute time. Times are seconds
(float); the host cores want integer microseconds, which ``now_us`` gives (rounded, so
a timer set for ``t_us`` reads ``t_us`` when it fires).

This replaced SimPy (issue 17: SimPy's ``Timeout`` object, its callback list and a
closure per event were a third of the run time) and keeps SimPy's semantics exactly,
so a run gives the same results on the same seed, bit for bit
(tests/unit/sim/test_same_seed.py):

- an event is a heap entry ``(time, seq, fn, args)``; ties in time run in the order
  they were scheduled (SimPy: ``(time, NORMAL, eid)``, every event here being a
  ``Timeout`` of the same priority);
- the time is computed as SimPy computes it, ``now + delay`` with ``delay = t - now``
  (0 when ``t`` is in the past), which may differ from ``t`` in the last bit;
- ``run(until)`` runs the events before ``until`` (not those at ``until``: SimPy's
  stop event is urgent) and leaves the clock at ``until``; the clock starts at the
  integer 0 as SimPy's does.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import count
from typing import Any, Final

US = 1e-6
#: Final: a C static in the mypyc build (an import is looked up in the module dict per call)
_heappush: Final = heapq.heappush
_heappop: Final = heapq.heappop
_next: Final = next
ENGINE = "fairgate_sim.engine (heapq, SimPy's ordering)"
#: True in the mypyc build (scripts/sim_ext.py): the heap is then sifted by ``push`` and
#: ``pop`` below, compiled, which compare two events' times as C doubles; pure Python
#: keeps heapq (C), where the same functions would be interpreted. Both order events by
#: ``(time, seq)`` with heapq's algorithm, so either gives the same events in the same
#: order (the sequence numbers are unique: no two events tie).
NATIVE: Final = not __file__.endswith(".py")

#: A simulated time in seconds: a float, or an int where SimPy's arithmetic gives one
#: (the clock starts at the int 0). Not ``float``: in the mypyc build a ``float`` is a C
#: double, so an int passed in would come back a float and results could differ.
Time = Any
#: time, tie-break, callback, arguments: ``(Time, int, Callable[..., Any], tuple)``, typed
#: as any tuple (a fixed tuple type is unboxed into a C struct on every read in the mypyc
#: build, which the heap's comparisons would pay)
Event = tuple[Any, ...]


def _before(a: Event, b: Event) -> bool:
    """``a < b`` for two events, as tuples compare: by time, then by sequence number
    (unique, so never further)."""
    x = a[0]
    y = b[0]
    if isinstance(x, float) and isinstance(y, float):
        xf: float = x
        yf: float = y
        if xf != yf:
            return xf < yf
    elif x != y:
        return bool(x < y)
    sa: int = a[1]
    sb: int = b[1]
    return sa < sb


def _sift_down(heap: list[Event], start: int, pos: int) -> None:
    """heapq._siftdown."""
    item = heap[pos]
    while pos > start:
        parent_pos = (pos - 1) >> 1
        parent = heap[parent_pos]
        if _before(item, parent):
            heap[pos] = parent
            pos = parent_pos
            continue
        break
    heap[pos] = item


def push(heap: list[Event], event: Event) -> None:
    """heapq.heappush (the mypyc build's: see ``NATIVE``)."""
    heap.append(event)
    _sift_down(heap, 0, len(heap) - 1)


def pop(heap: list[Event]) -> Event:
    """heapq.heappop (the mypyc build's: see ``NATIVE``); ``heap`` must not be empty."""
    last = heap.pop()
    if not heap:
        return last
    top = heap[0]
    # heapq._siftup: the hole at the root goes down to a leaf, then ``last`` up into it
    end = len(heap)
    pos = 0
    child = 1
    while child < end:
        right = child + 1
        if right < end and not _before(heap[child], heap[right]):
            child = right
        heap[pos] = heap[child]
        pos = child
        child = 2 * pos + 1
    heap[pos] = last
    _sift_down(heap, 0, pos)
    return top


class Clock:
    """Simulated time and scheduling. ``now`` is the current time (s), ``events`` the
    number of callbacks scheduled so far."""

    __slots__ = ("events", "now", "queue", "seq")

    def __init__(self) -> None:
        self.now: Time = 0  # SimPy's initial time is the int 0
        self.events = 0
        #: the pending events, a heap of ``(time, seq, fn, args)`` (push with ``push``)
        self.queue: list[Event] = []
        #: insertion order, the heap's tie-break (the packet path pushes with it too)
        self.seq = count()

    def now_us(self) -> int:
        return round(self.now * 1e6)

    def at(self, t: Time, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at simulated time ``t`` (now if ``t`` is in the past)."""
        now = self.now
        delay = t - now
        event = (now + (delay if delay > 0 else 0.0), _next(self.seq), fn, args)
        if NATIVE:
            push(self.queue, event)
        else:
            _heappush(self.queue, event)
        self.events += 1

    def push(self, t: Time, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """``at(t, fn, *args)`` for a ``t`` not in the past, args already a tuple (the
        packet path's form: no argument packing)."""
        now = self.now
        event = (now + (t - now), _next(self.seq), fn, args)
        if NATIVE:
            push(self.queue, event)
        else:
            _heappush(self.queue, event)
        self.events += 1

    def after(self, delay: Time, fn: Callable[..., Any], *args: Any) -> None:
        self.at(self.now + delay, fn, *args)

    def run(self, until: Time) -> None:
        """Run every event before ``until``; the clock then reads ``until``."""
        stop_at = until if isinstance(until, int) else float(until)
        if stop_at <= self.now:
            raise ValueError(f"until ({stop_at}) must be greater than the current simulation time")
        stop = self.now + (stop_at - self.now)
        q = self.queue
        while q:
            event = pop(q) if NATIVE else _heappop(q)
            t = event[0]
            if t >= stop:
                # the first event not run, back in place (once per run)
                if NATIVE:
                    push(q, event)
                else:
                    _heappush(q, event)
                break
            self.now = t
            args = event[3]
            if args:
                event[2](*args)
            else:
                event[2]()  # a port's packet landing (Port._land): a plain call
        self.now = stop
