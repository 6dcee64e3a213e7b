"""The paced flows one ``[[flows]]`` entry stands for: itself, its ``count`` users, or its
on-periods (``every``). The one place an entry is expanded: ``check`` takes the names from
here (duplicates, expectations' references) and ``plan`` the flows both engines run, so an
engine never sees ``count`` or ``every``, only ordinary flows with a start and a stop.
"""

from __future__ import annotations

from dataclasses import dataclass

from fairgate_exp import units
from fairgate_exp.schema import Flow

#: at most this many flows from one entry (``count``'s bound): BMv2 runs a sender process
#: per flow, so an on/off flow with a short period would otherwise start thousands
MAX_FLOWS_PER_ENTRY = 2000


@dataclass(frozen=True)
class Instance:
    """One flow of an entry: its recorded name and its times (seconds)."""

    name: str
    start_s: float
    stop_s: float


def _err(msg: str) -> Exception:
    from fairgate_exp.load import ExperimentError

    return ExperimentError(msg)


def _t(x: float) -> float:
    """A time of the expansion, rounded to the nanosecond: ``start + k x every`` equals the
    time a user would have written (0.1 + 2 x 0.1 is 0.3, not 0.30000000000000004)."""
    return round(x, 9)


def instances(f: Flow, duration_s: float, where: str) -> list[Instance]:
    """The flows of entry ``f`` in a run of ``duration_s``, in start order; ``where``
    (``flows[3] (cbr)``) names the entry in errors.

    ``count`` > 1: users ``<name>-1`` .. ``<name>-<count>``, user k from
    ``start + (k - 1) x stagger`` to ``stop``. ``every``: the on-periods ``<name>-1``,
    ``<name>-2`` .., period k from ``start + (k - 1) x every`` to ``stop + (k - 1) x every``
    (the last one cut at the end of the run), every period that starts before ``until``
    and before the end of the run. Otherwise the entry itself, ``<name>``."""
    start = units.parse_time(f.start)
    stop = duration_s if f.stop is None else units.parse_time(f.stop)
    if f.every is None:
        if f.until is not None:
            raise _err(f"{where}: until needs every (the period the flow repeats with)")
        if f.count == 1:
            return [Instance(f.name, start, stop)]
        stagger = units.parse_time(f.stagger)
        if start + (f.count - 1) * stagger >= stop:
            raise _err(f"{where}: its last user starts after it stops")
        return [Instance(f"{f.name}-{k + 1}", start + k * stagger, stop) for k in range(f.count)]
    every = units.parse_time(f.every)
    if f.count > 1:
        raise _err(
            f"{where}: every and count > 1 cannot be combined (write one on/off entry per user)"
        )
    if f.stop is None:
        raise _err(
            f"{where}: every needs stop (the flow is on from start to stop, then again "
            f"every {f.every})"
        )
    if stop - start >= every:
        raise _err(
            f"{where}: on for {units.fmt_time(stop - start)} every {f.every}: stop - start "
            f"must be shorter than every (a flow that never pauses has no every)"
        )
    last = duration_s
    if f.until is not None:
        until = units.parse_time(f.until)
        if until <= start:
            raise _err(f"{where}: until {f.until} is not after start {f.start}")
        last = min(last, until)
    n = 0
    while _t(start + n * every) < last:
        n += 1
        if n > MAX_FLOWS_PER_ENTRY:
            raise _err(
                f"{where}: more than {MAX_FLOWS_PER_ENTRY} on-periods (every {f.every} "
                f"until {units.fmt_time(last)}): a longer every, or an until"
            )
    return [
        Instance(f"{f.name}-{k + 1}", _t(start + k * every), min(_t(stop + k * every), duration_s))
        for k in range(n)
    ]
