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

#: A simulated time in seconds: a float, or an int where SimPy's arithmetic gives one
#: (the clock starts at the int 0). Not ``float``: in the mypyc build a ``float`` is a C
#: double, so an int passed in would come back a float and results could differ.
Time = Any
#: time, tie-break, callback, arguments
Event = tuple[Time, int, Callable[..., Any], tuple[Any, ...]]


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
        _heappush(self.queue, (now + (delay if delay > 0 else 0.0), _next(self.seq), fn, args))
        self.events += 1

    def push(self, t: Time, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        """``at(t, fn, *args)`` for a ``t`` not in the past, args already a tuple (the
        packet path's form: no argument packing)."""
        now = self.now
        _heappush(self.queue, (now + (t - now), _next(self.seq), fn, args))
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
            event = _heappop(q)
            t = event[0]
            if t >= stop:
                _heappush(q, event)  # the first event not run, back in place (once per run)
                break
            self.now = t
            args = event[3]
            if args:
                event[2](*args)
            else:
                event[2]()  # a port's packet landing (Port._land): a plain call
        self.now = stop
