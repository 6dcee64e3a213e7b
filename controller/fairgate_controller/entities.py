"""finsy P4Runtime entities for everything the controller writes (pure).

Names come from fairgate_p4.generated (the committed P4Info), so a renamed
table fails at import time rather than at the switch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import finsy as fy

from fairgate_controller.routes import Route
from fairgate_controller.telemetry import Buckets
from fairgate_p4 import generated as g
from fairgate_p4.xcp_math import RatioBuckets, to_u16

METER_BURST_DEFAULT = 5


def route_entry(route: Route) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        g.TABLE_IPV4_ROUTES,
        match=fy.Match(dst_addr=route.prefix),
        action=fy.Action(
            g.ACTION_FORWARD, port=route.port, src_mac=route.src_mac, dst_mac=route.dst_mac
        ),
    )


def feedback_entry(port: int, rate_kbps: int, congested: bool) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        g.TABLE_PORT_FEEDBACK,
        match=fy.Match(egress_port=port),
        action=fy.Action(
            g.ACTION_SET_PORT_FEEDBACK, fair_rate_kbps=rate_kbps, congested=int(congested)
        ),
    )


def admission_entry(port: int) -> fy.P4TableEntry:
    return fy.P4TableEntry(
        g.TABLE_ADMISSION_PORTS,
        match=fy.Match(egress_port=port),
        action=fy.Action(g.ACTION_GATE_SYNS),
    )


def bucket_entries(table: str, buckets: Buckets) -> list[fy.P4TableEntry]:
    key, action = {
        g.TABLE_QUEUE_BUCKETS: ("enq_qdepth", g.ACTION_SET_QUEUE_BUCKET),
        g.TABLE_RTT_BUCKETS: ("rtt_us", g.ACTION_SET_RTT_BUCKET),
    }[table]
    return [
        fy.P4TableEntry(
            table,
            match=fy.Match({key: f"{lo}...{hi}"}),
            action=fy.Action(action, bucket=b),
            priority=1,
        )
        for lo, hi, b in buckets.ranges()
    ]


def xcp_factors_entry(port: int, lg_xi_p: int, lg_xi_n: int) -> fy.P4TableEntry:
    """XCP's per-packet factors of a port: signed Q8.8 log2 of xi_p and xi_n
    (``fairgate_p4.xcp_math.encode_factor``; LG_NONE = no such part)."""
    return fy.P4TableEntry(
        g.TABLE_XCP_FACTORS,
        match=fy.Match(egress_port=port),
        action=fy.Action(
            g.ACTION_SET_XCP_FACTORS, lg_xi_p=to_u16(lg_xi_p), lg_xi_n=to_u16(lg_xi_n)
        ),
    )


def xcp_bucket_entries(buckets: RatioBuckets) -> list[fy.P4TableEntry]:
    """The log2(rtt/cwnd) bucket bounds of xcp_ratio_hist (the last bucket is the default)."""
    return [
        fy.P4TableEntry(
            g.TABLE_XCP_RATIO_BUCKETS,
            match=fy.Match(ratio_key=f"{lo}...{hi}"),
            action=fy.Action(g.ACTION_SET_XCP_BUCKET, bucket=b),
            priority=1,
        )
        for b, lo, hi in buckets.entries()
    ]


def meter_entry(
    port: int, admit_fps: float | None, burst: int = METER_BURST_DEFAULT
) -> fy.P4MeterEntry:
    """The SYN meter of a port: admit `admit_fps` SYNs/s (PIR = CIR, BMv2 needs
    cir <= pir), or None for no gating (the meter reset to unconfigured, green)."""
    if admit_fps is None:
        return fy.P4MeterEntry(g.METER_SYN_METER, index=port)
    rate = max(1, round(admit_fps))
    config = fy.P4MeterConfig(cir=rate, cburst=burst, pir=rate, pburst=burst)
    return fy.P4MeterEntry(g.METER_SYN_METER, index=port, config=config)


def table_key(entry: Any, schema: fy.P4Schema) -> bytes:
    """Identity of a table entry on the switch: table, match and priority."""
    msg = entry.encode(schema).table_entry
    key = type(msg)(
        table_id=msg.table_id,
        match=sorted(msg.match, key=lambda m: m.field_id),
        priority=msg.priority,
    )
    return key.SerializeToString(deterministic=True)


def table_value(entry: Any, schema: fy.P4Schema) -> bytes:
    return entry.encode(schema).table_entry.action.SerializeToString(deterministic=True)


def reconcile(
    desired: Iterable[Any], current: Iterable[Any], schema: fy.P4Schema
) -> tuple[list[Any], list[Any], list[Any]]:
    """(inserts, modifies, deletes) that turn the switch's `current` entries of
    the tables we own into `desired`, touching nothing that is already right."""
    have = {table_key(e, schema): e for e in current}
    inserts, modifies = [], []
    wanted = set()
    for entry in desired:
        key = table_key(entry, schema)
        wanted.add(key)
        if key not in have:
            inserts.append(entry)
        elif table_value(have[key], schema) != table_value(entry, schema):
            modifies.append(entry)
    deletes = [e for k, e in have.items() if k not in wanted]
    return inserts, modifies, deletes
