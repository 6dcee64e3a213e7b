"""Per-port, per-period records as JSON lines (one object per line).

Fields (SI units): t (wall clock, s), switch, port, period_s (since the port's last
update), interval_s (the port's next control interval), capacity_Bps,
y_Bps (input rate), departure_Bps, arrival_pkts, departure_pkts, drop_pkts
(arrivals - departures, clamped at 0: drops plus queue growth), queue_drop_pkts (the
queue's drops as QFCP used them), queue_drop_est_pkts (the estimate from the counters
BMv2 has), queue_drops_exact (true when the engine knew them: the simulator),
queue_mean_bytes, queue_min_bytes, queue_overflow_pkts (packets in the queue
histogram's open last bucket: the queue estimate saturated), rtt_mean_s (null
when no packet carried one), syn_admitted, syn_dropped, syn_ungated, fins, rsts; with a rate
algorithm also rate_Bps, rate_kbps (what was written), congested and the
algorithm's diagnostics (e.g. N, n_hat, q_bytes, T_s); with session control
admit_fps (null = no gating), completions and handshakes (FINs and SYNs or SYN-ACKs
counted for the gated port, see SwitchAgent.session_counts), completions_from (where
they were counted: downstream, reverse or same) and, at the end of each window,
window_completions_fps, window_admitted_fps and window_connected_fps; with FICCRD its
per-period event counts (ficcrd.port_events) and, for a core queue, ficcrd_q0_pkts,
ficcrd_mapr_kbps, ficcrd_queue_pkts and ficcrd_dpf (ficcrd.core_state; the last three only when the
switch's registers were read).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import IO, Any


class Recorder:
    """Appends records to a JSONL file (or nowhere) and keeps the latest per port
    for the live view."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", buffering=1)
        self.latest: dict[tuple[str, int], dict[str, Any]] = {}

    def write(self, record: dict[str, Any]) -> None:
        self.latest[(record["switch"], record["port"])] = record
        if self._file is not None:
            # non-finite floats as null (JSON has no inf or nan), inline: not a call per
            # field of every record
            clean = {
                k: None if isinstance(v, float) and not math.isfinite(v) else v
                for k, v in record.items()
            }
            self._file.write(json.dumps(clean) + "\n")

    def flush(self) -> None:
        """Hand what was written to the OS (the agent calls it once per period)."""
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
