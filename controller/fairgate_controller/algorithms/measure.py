"""What the control loop measured at one output port over one control period.

Everything is in SI units: seconds, bytes, bytes per second. The control loop builds one
:class:`PortMeasurement` per port and per period from counter deltas (see docs/algorithms.md)
and hands it to a rate controller and/or a session controller. Nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

_COUNT_FIELDS = (
    "arrival_bytes",
    "arrival_pkts",
    "departure_bytes",
    "departure_pkts",
    "drop_pkts",
    "drop_bytes",
    "queue_drop_pkts",
    "queue_drop_bytes",
    "queue_mean_bytes",
    "queue_min_bytes",
    "syn_admitted",
    "syn_dropped",
    "syn_ungated",
    "fins",
    "rsts",
)


@dataclass(frozen=True, slots=True)
class PortMeasurement:
    """One output port over one control period (all counts are deltas over the period).

    ``drop_*`` are arrivals minus departures clamped at 0 (BMv2 does not count queue drops):
    the period's drops plus the queue's growth; :meth:`from_counters` computes them.
    ``queue_drop_*`` are the packets the queue dropped in the period, as well as the engine
    can tell: exact in the simulator, estimated on BMv2 (``telemetry.QueueDropEstimator``).
    ``queue_*_bytes`` come from the queue-depth histogram (packets converted to bytes by the
    caller). ``rtt_mean_s`` is the mean RTT carried by data
    packets in the period, or ``None`` when no packet carried one.
    """

    period_s: float
    capacity_Bps: float
    arrival_bytes: float = 0
    arrival_pkts: float = 0
    departure_bytes: float = 0
    departure_pkts: float = 0
    drop_pkts: float = 0
    drop_bytes: float = 0
    queue_drop_pkts: float = 0
    queue_drop_bytes: float = 0
    queue_mean_bytes: float = 0.0
    queue_min_bytes: float = 0.0
    rtt_mean_s: float | None = None
    syn_admitted: int = 0
    syn_dropped: int = 0
    syn_ungated: int = 0
    fins: int = 0
    rsts: int = 0

    def __post_init__(self) -> None:
        # the fields' names found once (the control loop builds one of these per port)
        names = _NAMES if type(self) is PortMeasurement else tuple(f.name for f in fields(self))
        for name in names:
            value = getattr(self, name)
            if value is None and name == "rtt_mean_s":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"PortMeasurement.{name} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"PortMeasurement.{name} must be finite, got {value!r}")
        if self.period_s <= 0:
            raise ValueError(f"PortMeasurement.period_s must be > 0 s, got {self.period_s!r}")
        if self.capacity_Bps <= 0:
            raise ValueError(
                f"PortMeasurement.capacity_Bps must be > 0 B/s, got {self.capacity_Bps!r}"
            )
        for name in _COUNT_FIELDS:
            value = getattr(self, name)
            if value < 0:
                raise ValueError(
                    f"PortMeasurement.{name} must be >= 0 (counters are deltas of monotonic "
                    f"counters), got {value!r}"
                )
        if self.rtt_mean_s is not None and self.rtt_mean_s < 0:
            raise ValueError(
                f"PortMeasurement.rtt_mean_s must be >= 0 s or None, got {self.rtt_mean_s!r}"
            )

    @classmethod
    def from_counters(
        cls,
        *,
        period_s: float,
        capacity_Bps: float,
        arrival_bytes: float,
        arrival_pkts: float,
        departure_bytes: float,
        departure_pkts: float,
        queue_drop_pkts: float = 0,
        queue_drop_bytes: float = 0,
        queue_mean_bytes: float = 0.0,
        queue_min_bytes: float = 0.0,
        rtt_mean_s: float | None = None,
        syn_admitted: int = 0,
        syn_dropped: int = 0,
        syn_ungated: int = 0,
        fins: int = 0,
        rsts: int = 0,
    ) -> PortMeasurement:
        """Build a measurement, deriving drops as arrivals - departures clamped at 0."""
        return cls(
            period_s=period_s,
            capacity_Bps=capacity_Bps,
            arrival_bytes=arrival_bytes,
            arrival_pkts=arrival_pkts,
            departure_bytes=departure_bytes,
            departure_pkts=departure_pkts,
            drop_pkts=max(0, arrival_pkts - departure_pkts),
            drop_bytes=max(0, arrival_bytes - departure_bytes),
            queue_drop_pkts=queue_drop_pkts,
            queue_drop_bytes=queue_drop_bytes,
            queue_mean_bytes=queue_mean_bytes,
            queue_min_bytes=queue_min_bytes,
            rtt_mean_s=rtt_mean_s,
            syn_admitted=syn_admitted,
            syn_dropped=syn_dropped,
            syn_ungated=syn_ungated,
            fins=fins,
            rsts=rsts,
        )

    @property
    def y_Bps(self) -> float:
        """Input rate y: bytes arriving for the port per second."""
        return self.arrival_bytes / self.period_s

    @property
    def departure_Bps(self) -> float:
        """Output rate: bytes leaving the port per second."""
        return self.departure_bytes / self.period_s

    @property
    def drop_Bps(self) -> float:
        """Bytes dropped per second."""
        return self.drop_bytes / self.period_s

    @property
    def utilisation(self) -> float:
        """Departure rate over capacity (can exceed 1 if C is set too low)."""
        return self.departure_Bps / self.capacity_Bps

    @property
    def load(self) -> float:
        """Input rate over capacity, y / C."""
        return self.y_Bps / self.capacity_Bps

    @property
    def mean_pkt_bytes(self) -> float | None:
        """Mean arriving packet size, or None with no arrivals."""
        if self.arrival_pkts <= 0:
            return None
        return self.arrival_bytes / self.arrival_pkts

    @property
    def virtual_queue_bytes(self) -> float:
        """QFCP's virtual queue: mean queue plus the bytes the queue dropped in the period
        (not arrivals - departures, which also counts the queue's growth)."""
        return self.queue_mean_bytes + self.queue_drop_bytes

    @property
    def syns_seen(self) -> int:
        """SYNs that reached the port: admitted + dropped by the gate + seen while ungated."""
        return self.syn_admitted + self.syn_dropped + self.syn_ungated

    @property
    def syns_passed(self) -> int:
        """SYNs that went through (admitted by the meter or not gated at all)."""
        return self.syn_admitted + self.syn_ungated

    @property
    def syn_rate_per_s(self) -> float:
        """Offered SYN rate (SYNs seen per second, retransmissions included)."""
        return self.syns_seen / self.period_s

    @property
    def completion_rate_per_s(self) -> float:
        """FINs per second."""
        return self.fins / self.period_s


#: PortMeasurement's fields, in order
_NAMES: tuple[str, ...] = tuple(f.name for f in fields(PortMeasurement))
