"""FICCRD on the controller side (pure: no I/O).

What the controller computes and writes for FICCRD (docs/ficcrd.md):

- port roles: host-facing ports are *source* ports (``ficcrd_sources``: one RD
  every k packets of each TCP flow from their hosts) and *edge* ports
  (``ficcrd_edges``: RDs routed to them end there, ACKs to their hosts get
  their receive window lowered to ER x RTT); switch-to-switch ports (and, with
  ``core="all"``, host ports too) are *core* queues;
- one clone session per source switch port (``FG_RD_SESSION_BASE + port``),
  through which the edge emits RDs;
- the DPF table of each core queue: the paper's linear queue control
  function of the queue depth Q (packets), from BUR, alpha and the port's
  buffer (its BMv2 queue depth), as ``ficcrd_dpf`` range entries whose action
  carries DPF in unsigned Q6.10 fixed point (``FG_DPF_ONE`` = 1.0) and whether
  the range lies above Q0 = BUR x buffer. The switch multiplies and shifts;
  it never divides.

and what it reads: the ``ficcrd_edge_events`` / ``ficcrd_core_events``
counters, turned into per-port records, and (over Thrift on BMv2, from SimFiccrd
in the simulator) the ``ficcrd_mapr`` / ``ficcrd_queue_seen`` registers: each core
port's record carries MAPR and DPF at the switch's last-seen queue (``core_state``).

It estimates nothing: each flow's arrival rate (APR, the paper's per-packet
exponential average, at the source edge) and each core queue's MAPR (per
forward RD) are the data plane's own registers (docs/ficcrd.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import finsy as fy
from finsy.p4entity import P4Replica

from fairgate_controller.telemetry import Snapshot
from fairgate_controller.topology import PortSpec, Topology
from fairgate_p4 import generated as g

QDEPTH_MAX = (1 << 19) - 1  # enq_qdepth is 19 bits
DPF_MAX = 0xFFFF  # bit<16> action parameter
MAX_RANGES_PER_PORT = 32  # ficcrd_dpf holds FG_MAX_PORTS * 32 entries
TABLES = (g.TABLE_FICCRD_SOURCES, g.TABLE_FICCRD_EDGES, g.TABLE_FICCRD_DPF)
COUNTERS = (g.COUNTER_FICCRD_EDGE_EVENTS, g.COUNTER_FICCRD_CORE_EVENTS)

EDGE_EVENTS = {
    "rd_emitted": g.FG_EDGE_RD_EMITTED,
    "rd_turned": g.FG_EDGE_RD_TURNED,
    "rd_consumed": g.FG_EDGE_RD_CONSUMED,
    "rd_stale": g.FG_EDGE_RD_STALE,
    "windows_rewritten": g.FG_EDGE_WINDOW_REWRITTEN,
    "wscale_learned": g.FG_EDGE_WSCALE_LEARNED,
    "flows_started": g.FG_EDGE_FLOW_STARTED,
    "base_rtts_learned": g.FG_EDGE_BASE_RTT_LEARNED,
}
CORE_EVENTS = {
    "mapr_updated": g.FG_CORE_MAPR_UPDATED,
    "mapr_held": g.FG_CORE_MAPR_HELD,
    "apr_unknown": g.FG_CORE_APR_UNKNOWN,
    "er_lowered": g.FG_CORE_ER_LOWERED,
    "er_kept": g.FG_CORE_ER_KEPT,
    "mapr_unknown": g.FG_CORE_MAPR_UNKNOWN,
}


@dataclass(frozen=True)
class FiccrdConfig:
    """FICCRD parameters (the paper's BUR and alpha; k; the RTT floor)."""

    rd_interval: int = 8  # k: one RD per k packets of a flow (0: no RDs)
    bur: float = 0.5  # Q0 = BUR x buffer
    alpha: float = 1.15  # DPF(0)
    rtt_min_us: int = 20_000  # ER x max(RD RTT, this) at the source edge
    levels: int = 15  # DPF ranges on each side of Q0
    core: Literal["links", "all"] = "links"  # which ports are core queues
    default_buffer_pkts: int = 64  # BMv2's default queue depth

    def __post_init__(self) -> None:
        if not 0 <= self.rd_interval <= 0xFFFF:
            raise ValueError(f"rd_interval must be 0..65535, got {self.rd_interval}")
        if not 0 < self.bur < 1:
            raise ValueError(f"BUR must be in (0, 1), got {self.bur}")
        if not 1 <= self.alpha < DPF_MAX / g.FG_DPF_ONE:
            raise ValueError(f"alpha must be in [1, 64), got {self.alpha}")
        if not 0 <= self.rtt_min_us < 1 << 32:
            raise ValueError(f"rtt_min_us out of range: {self.rtt_min_us}")
        if not 1 <= self.levels <= (MAX_RANGES_PER_PORT - 2) // 2:
            raise ValueError(f"levels must be 1..15, got {self.levels}")
        if self.core not in ("links", "all"):
            raise ValueError(f"core must be 'links' or 'all', got {self.core!r}")


# ---- the DPF table ------------------------------------------------------------
def dpf(q: float, buffer: float, bur: float = 0.5, alpha: float = 1.15) -> float:
    """The paper's down-pressure factor for queue length q (any unit).

    (buffer - q) / (buffer - Q0) above Q0, (alpha - 1)(Q0 - q)/Q0 + 1 at or
    below it; 0 at a full buffer, 1 at Q0, alpha at an empty queue."""
    if buffer <= 0:
        raise ValueError("buffer must be > 0")
    q0 = bur * buffer
    if q > q0:
        return max(0.0, (buffer - q) / (buffer - q0))
    return (alpha - 1.0) * (q0 - q) / q0 + 1.0


def to_fixed(value: float) -> int:
    """DPF as the switch's unsigned Q6.10 (rounded, clamped to 16 bits)."""
    return max(0, min(DPF_MAX, round(value * g.FG_DPF_ONE)))


@dataclass(frozen=True)
class DpfLevel:
    """One ficcrd_dpf range: queue depths lo..hi (packets, inclusive)."""

    lo: int
    hi: int
    dpf: int  # Q6.10
    above_q0: bool


def _split(lo: int, hi: int, parts: int) -> list[tuple[int, int]]:
    """lo..hi (inclusive) in at most `parts` contiguous ranges of near-equal width."""
    n = hi - lo + 1
    if n <= 0:
        return []
    parts = min(parts, n)
    bounds = [lo + (n * i) // parts for i in range(parts + 1)]
    return [(a, b - 1) for a, b in zip(bounds, bounds[1:], strict=False)]


def dpf_levels(
    buffer_pkts: int, bur: float = 0.5, alpha: float = 1.15, levels: int = 15
) -> list[DpfLevel]:
    """The DPF table of a queue of `buffer_pkts` packets.

    Depths 0..floor(Q0) (Q <= Q0) and floor(Q0)+1..buffer-1 (Q > Q0) are each
    cut into at most `levels` ranges; a range carries DPF at its midpoint (a
    one-packet range is exact). Depths from the buffer size up carry DPF 0.
    The ranges cover 0..2^19-1 without gaps or overlaps."""
    if buffer_pkts < 2:
        raise ValueError(f"buffer must be at least 2 packets, got {buffer_pkts}")
    q0 = bur * buffer_pkts
    q0_floor = math.floor(q0)
    out: list[DpfLevel] = []
    for lo, hi in _split(0, q0_floor, levels):
        out.append(DpfLevel(lo, hi, to_fixed(dpf((lo + hi) / 2, buffer_pkts, bur, alpha)), False))
    for lo, hi in _split(q0_floor + 1, buffer_pkts - 1, levels):
        out.append(DpfLevel(lo, hi, to_fixed(dpf((lo + hi) / 2, buffer_pkts, bur, alpha)), True))
    out.append(DpfLevel(buffer_pkts, QDEPTH_MAX, 0, True))
    return out


def dpf_lookup(table: list[DpfLevel], q: int) -> DpfLevel:
    """What the switch finds for queue depth q (a test and planning aid)."""
    for level in table:
        if level.lo <= q <= level.hi:
            return level
    raise KeyError(q)


def explicit_rate(mapr_kbps: int, er_kbps: int, level: DpfLevel) -> int:
    """The switch's ER = min(ER, DPF * MAPR >> FG_DPF_SHIFT); MAPR 0 = unknown."""
    if mapr_kbps == 0:
        return er_kbps
    return min(er_kbps, (mapr_kbps * level.dpf) >> g.FG_DPF_SHIFT)


def window_limit(er_kbps: int, rtt_us: int, wscale: int) -> int:
    """The window field the source edge writes at most: ER x RTT in bytes
    (>> 13 for / 8000, 2.3 % low), floored at FG_FICCRD_MIN_WINDOW, scaled."""
    limit = max((er_kbps * rtt_us) >> 13, g.FG_FICCRD_MIN_WINDOW) >> wscale
    return max(limit, 1)


# ---- roles and entities -----------------------------------------------------------
@dataclass(frozen=True)
class Roles:
    edge: tuple[int, ...]  # host-facing ports: sources and edges
    core: tuple[PortSpec, ...]  # queues with a DPF table


def roles(topo: Topology, switch: str, config: FiccrdConfig) -> Roles:
    ports = topo.switch_ports(switch)
    edge = tuple(p.port for p in ports if p.peer_switch is None)
    core = tuple(p for p in ports if config.core == "all" or p.peer_switch is not None)
    return Roles(edge, core)


def source_entry(port: int, rd_interval: int) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        g.TABLE_FICCRD_SOURCES,
        match=fy.Match(ingress_port=port),
        action=fy.Action(g.ACTION_SET_SOURCE_PORT, rd_interval=rd_interval),
    )


def edge_entry(port: int, rtt_min_us: int) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        g.TABLE_FICCRD_EDGES,
        match=fy.Match(egress_port=port),
        action=fy.Action(g.ACTION_SET_EDGE_PORT, rtt_min_us=rtt_min_us),
    )


def dpf_entries(port: int, table: list[DpfLevel]) -> list[fy.P4TableEntry]:
    return [
        fy.P4TableEntry(
            g.TABLE_FICCRD_DPF,
            match=fy.Match(port=port, queue_depth=f"{lv.lo}...{lv.hi}"),
            action=fy.Action(g.ACTION_SET_DPF, dpf=lv.dpf, above_q0=int(lv.above_q0)),
            priority=1,
        )
        for lv in table
    ]


def clone_session(port: int) -> fy.P4CloneSessionEntry:
    """RDs emitted towards `port` leave through this session."""
    return fy.P4CloneSessionEntry(
        session_id=g.FG_RD_SESSION_BASE + port, replicas=[P4Replica(port, instance=1)]
    )


def table_entries(topo: Topology, switch: str, config: FiccrdConfig) -> list[fy.P4TableEntry]:
    """Every FICCRD table entry of `switch`."""
    r = roles(topo, switch, config)
    out: list[fy.P4TableEntry] = []
    for port in r.edge:
        out.append(source_entry(port, config.rd_interval))
        out.append(edge_entry(port, config.rtt_min_us))
    for spec in r.core:
        buffer = spec.queue_depth or config.default_buffer_pkts
        out += dpf_entries(spec.port, dpf_levels(buffer, config.bur, config.alpha, config.levels))
    return out


def clone_sessions(topo: Topology, switch: str) -> list[fy.P4CloneSessionEntry]:
    """One session per port an RD can leave by (every port of the switch)."""
    return [clone_session(p.port) for p in topo.switch_ports(switch)]


# ---- reading ---------------------------------------------------------------------------
def port_events(delta: Snapshot, port: int) -> dict[str, Any]:
    """Per-period FICCRD counts of one port, for the records."""
    base = port << g.FG_FICCRD_EVENT_BITS
    edge = delta.get(g.COUNTER_FICCRD_EDGE_EVENTS, {})
    core = delta.get(g.COUNTER_FICCRD_CORE_EVENTS, {})
    out: dict[str, Any] = {}
    for name, event in EDGE_EVENTS.items():
        out[name] = edge.get(base | event, (0, 0))[0]
    out["rd_emitted_bytes"] = edge.get(base | g.FG_EDGE_RD_EMITTED, (0, 0))[1]
    for name, event in CORE_EVENTS.items():
        out[name] = core.get(base | event, (0, 0))[0]
    return out


REGISTERS = ("ficcrd_mapr", "ficcrd_queue_seen")  # per port: MAPR (kbps), last queue (pkts)


def core_state(
    spec: PortSpec, config: FiccrdConfig, regs: dict[str, list[int]] | None
) -> dict[str, Any]:
    """A core port's FICCRD state for its period record: Q0 (packets) always;
    with the switch's registers (``REGISTERS``, indexed by port) also MAPR
    (kbps, 0 = unknown), the queue depth the switch last saw (packets) and
    DPF there, as the ``ficcrd_dpf`` ranges this controller installed give it
    (Q6.10 -> float). Without registers (a failed read) those keys are left out."""
    buffer = spec.queue_depth or config.default_buffer_pkts
    out: dict[str, Any] = {"ficcrd_q0_pkts": config.bur * buffer}
    if not regs:
        return out
    mapr, seen = regs.get(REGISTERS[0], []), regs.get(REGISTERS[1], [])
    if spec.port >= len(mapr) or spec.port >= len(seen):
        return out
    table = dpf_levels(buffer, config.bur, config.alpha, config.levels)
    q = seen[spec.port] & QDEPTH_MAX
    out.update(
        ficcrd_mapr_kbps=mapr[spec.port],
        ficcrd_queue_pkts=q,
        ficcrd_dpf=dpf_lookup(table, q).dpf / g.FG_DPF_ONE,
    )
    return out
