"""FICCRD's per-packet arithmetic as the TNA pipeline does it, and the tables it needs.

Tofino's match-action ALUs add, subtract, shift by constants and take min/max;
they cannot multiply two runtime values, shift by a runtime amount, or shift
inside a stateful ALU. FairGate's v1model program does all three (FICCRD's
``ER x RTT >> 13 >> wscale``, ``MAPR x DPF >> 10`` and the ``>> 4`` EWMA of
MAPR). The TNA program (p4src/tna/) replaces them with:

* **log/exp tables.** ``x -> round(32 log2 x)`` is a ternary table on the
  leading one and the next :data:`MANT_BITS` bits of x; a product is a sum of
  logs; a shift by s is ``- 32 s``; ``2^(v/32)`` is an exact-match table on v.
* **APR without a multiply.** ``bytes x 8000 / 2^26 ns`` becomes
  ``(b >> 3) - (b >> 8) - (b >> 9)``.

This module is the single definition of those tables (``python -m
fairgate_p4.tna_math`` writes p4src/tna/ficcrd_math_tables.p4 from it; a unit
test fails when that file is stale) and the Python model of the switch-side
arithmetic that tests/unit/p4/test_tna_math.py compares with the exact v1model
value.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from fairgate_p4 import generated as g
from fairgate_p4.genfile import write_or_check

#: Fraction bits of a log value: log2 in units of 1/32.
LOG_FRAC = 5
LOG_ONE = 1 << LOG_FRAC
#: Bits below the leading one that the log table looks at.
MANT_BITS = 5
#: Offsets that keep the window and ER sums unsigned (12-bit exact-match keys).
WIN_OFFSET = 1024
ER_OFFSET = 512
#: v1model's window: ``bytes = ER[kbit/s] x RTT[us] >> 13``.
WIN_SHIFT = 13
#: v1model's DPF is Q6.10; MAPR on TNA is a sum of MAPR_SAMPLES samples.
MAPR_SAMPLE_BITS = 4
MAPR_SAMPLES = 1 << MAPR_SAMPLE_BITS
#: APR samples are clipped to 28 bits so that 16 of them sum in 32 bits.
APR_MAX = (1 << 28) - 1
#: Edge clock on TNA: egress_global_tstamp (ns) >> 10, 1.024 us per tick.
TICK_NS = 1024
#: Rate window on TNA: 2^16 ticks = 2^26 ns.
RATE_WINDOW_NS = 1 << 26

TABLES_P4 = Path(__file__).resolve().parent.parent / "tna" / "ficcrd_math_tables.p4"

# ---------------------------------------------------------------- log table


def log_buckets(width: int) -> list[tuple[int, int, int, int]]:
    """Ternary entries of the log table for a ``width``-bit input.

    Each entry is ``(value, mask, lo, hi)``: inputs x with ``x & mask == value``
    are exactly ``lo <= x < hi``. Values below ``2^MANT_BITS`` get one entry
    each (exact logs); above, one entry per leading-one position and
    MANT_BITS-bit mantissa. Zero has no entry (the table's default applies).
    """
    full = (1 << width) - 1
    out: list[tuple[int, int, int, int]] = []
    for p in range(width):
        if p <= MANT_BITS:
            for x in range(1 << p, 1 << (p + 1)):
                out.append((x, full, x, x + 1))
        else:
            low = p - MANT_BITS
            mask = full & ~((1 << low) - 1)
            for m in range(1 << MANT_BITS):
                lo = (1 << p) | (m << low)
                out.append((lo, mask, lo, lo + (1 << low)))
    return out


def bucket_log(lo: int, hi: int) -> int:
    """The log value of the bucket ``lo <= x < hi``: the rounded log of its
    geometric centre (between the smallest and largest member)."""
    return round(LOG_ONE * 0.5 * (math.log2(lo) + math.log2(hi - 1)))


def log_q(x: int, width: int = 32) -> int:
    """What the log table returns for x (0 reads as 1: log 0)."""
    if x <= 0:
        return 0
    p = x.bit_length() - 1
    if p <= MANT_BITS:
        return bucket_log(x, x + 1)
    low = p - MANT_BITS
    lo = (x >> low) << low
    return bucket_log(lo, lo + (1 << low))


# ---------------------------------------------------------------- window


def window_floor_key(shift: int) -> int:
    """The lowest window key for a window scale ``shift``: the 2920-byte floor."""
    return round(LOG_ONE * math.log2(g.FG_FICCRD_MIN_WINDOW)) - LOG_ONE * shift + WIN_OFFSET


def window_base_key() -> int:
    """Added to log(ER) + log(RTT) when an RD is consumed: offset and ``>> 13``."""
    return WIN_OFFSET - LOG_ONE * WIN_SHIFT


def window_key(er: int, rtt: int, shift: int) -> int:
    """The key of the window exp table for ER, the flow's RTT (already at
    least rtt_min) and its window scale: ``log(ER) + log(RTT) + base``, at
    least the floor's key, minus 32 x the window scale."""
    stored = log_q(er) + log_q(rtt) + window_base_key()
    return max(stored, window_floor_key(0)) - LOG_ONE * shift


def window_key_switch(er: int, rtt_sum: int, rtt_min: int, shift: int) -> int:
    """The same key as the egress MAU computes it when an RD is consumed
    (ficcrd.p4: rd_er_base .. rd_window_floor): ``max(rtt, rtt_min)`` is
    taken after the log tables, ``max(log a, log b)``, and the window scale is
    subtracted from each term before the maxima. Equal to
    ``window_key(er, max(rtt_sum, rtt_min), shift)`` because the log table is
    monotonic (tested)."""
    scale = LOG_ONE * shift
    er_base = log_q(er) + window_base_key()
    win_sum = er_base - scale + log_q(rtt_sum)
    win_low = max(er_base + log_q(rtt_min) - scale, window_floor_key(0) - scale)
    return max(win_sum, win_low)


def window_keys() -> range:
    lo = window_floor_key(g.FG_TCP_MAX_WSCALE)
    hi = 2 * 32 * LOG_ONE + WIN_OFFSET - LOG_ONE * WIN_SHIFT
    return range(lo, hi + 1)


def window_value(key: int) -> int:
    """The exp table: the receive window (scaled) for a key, 1 .. 65535."""
    v = round(2.0 ** ((key - WIN_OFFSET) / LOG_ONE))
    return min(max(v, 1), 0xFFFF)


def window_tna(er: int, rtt: int, shift: int) -> int:
    """The window the TNA pipeline writes (before the ``< tcp.window`` test)."""
    return window_value(window_key(er, rtt, shift))


def window_exact(er: int, rtt: int, shift: int) -> int:
    """v1model's arithmetic (ficcrd.p4), capped at 65535 like a 16-bit field."""
    w = max((er * rtt) >> WIN_SHIFT, g.FG_FICCRD_MIN_WINDOW) >> shift
    return min(max(w, 1), 0xFFFF)


# ---------------------------------------------------------------- core ER


def dpf_log(dpf: int) -> int:
    """What the DPF log table returns: log(DPF) - 10 (Q6.10) - 4 (16-sample sum),
    plus ER_OFFSET so that the ER key stays positive (at least 64)."""
    return log_q(dpf, 16) - LOG_ONE * (g.FG_DPF_SHIFT + MAPR_SAMPLE_BITS) + ER_OFFSET


def er_key(mapr_sum: int, dpf: int) -> int:
    return log_q(mapr_sum) + dpf_log(dpf)


def er_keys() -> range:
    low = ER_OFFSET - LOG_ONE * (g.FG_DPF_SHIFT + MAPR_SAMPLE_BITS)
    return range(low, 32 * LOG_ONE + 16 * LOG_ONE + low + 1)


def er_value(key: int) -> int:
    v = round(2.0 ** ((key - ER_OFFSET) / LOG_ONE))
    return min(max(v, 0), 0xFFFFFFFF)


def er_tna(mapr_sum: int, dpf: int) -> int:
    """ER candidate on TNA from the 16-sample MAPR sum and the Q6.10 DPF."""
    return er_value(er_key(mapr_sum, dpf))


def er_exact(mapr: int, dpf: int) -> int:
    """v1model: ``MAPR x DPF >> 10``."""
    return (mapr * dpf) >> g.FG_DPF_SHIFT


# ---------------------------------------------------------------- APR


def apr_tna(window_bytes: int) -> int:
    """APR on TNA: bytes in a 2^26 ns window to kbit/s by shifts and subtracts."""
    b = window_bytes
    return (b >> 3) - (b >> 8) - (b >> 9)


def apr_exact(window_bytes: int) -> float:
    """Bytes in 2^26 ns, in kbit/s, without rounding."""
    return window_bytes * 8 * 1e6 / RATE_WINDOW_NS


# ---------------------------------------------------------------- P4 output


def render_tables() -> str:
    """The P4 const entries of FICCRD's log and exp tables and their key constants."""
    lines = [
        "/* GENERATED by `python -m fairgate_p4.tna_math` from p4src/fairgate_p4/tna_math.py:",
        " * do not edit. Included inside the FiccrdEgress control of ficcrd.p4 (TNA). */",
        "",
    ]

    def log_table(name: str, key: str, width: int, action: str, adjust: int) -> None:
        lines.append(f'    @name(".{name}")')
        lines.append(f"    table {name} {{")
        lines.append(f"        key = {{ {key} : ternary; }}")
        lines.append(f"        actions = {{ {action}; }}")
        lines.append(f"        const default_action = {action}({adjust & 0xFFFF});")
        buckets = log_buckets(width)
        lines.append(f"        size = {len(buckets)};")
        lines.append("        const entries = {")
        for value, mask, lo, hi in buckets:
            out = (bucket_log(lo, hi) + adjust) & 0xFFFF
            lines.append(f"            {value:#x} &&& {mask:#x} : {action}({out});")
        lines.append("        }")
        lines.append("    }")
        lines.append("")

    def exp_table(name: str, key: str, action: str, keys: range, fn) -> None:  # type: ignore[no-untyped-def]
        lines.append(f'    @name(".{name}")')
        lines.append(f"    table {name} {{")
        lines.append(f"        key = {{ {key} : exact; }}")
        lines.append(f"        actions = {{ {action}; }}")
        lines.append(f"        const default_action = {action}({fn(keys.stop - 1)});")
        lines.append(f"        size = {len(keys)};")
        lines.append("        const entries = {")
        for k in keys:
            lines.append(f"            {k} : {action}({fn(k)});")
        lines.append("        }")
        lines.append("    }")
        lines.append("")

    lines.insert(3, f"#define FG_TNA_WIN_BASE_KEY {window_base_key()}")
    lines.insert(4, f"#define FG_TNA_WIN_FLOOR_KEY {window_floor_key(0)}")
    lines.insert(5, "")
    log_table("log_er", "hdr.fg.rate_kbps", 32, "set_log_er", window_base_key())
    log_table("log_rtt", "meta.fc.log_in_rtt", 32, "set_log_rtt", 0)
    log_table("log_rtt_min", "meta.bridge.fc_rtt_min_us", 32, "set_log_rtt_min", 0)
    exp_table("exp_window", "win_key", "set_window", window_keys(), window_value)
    # the core's tables: not in an edge-only profile (-DFG_TNA_NO_FICCRD_CORE)
    lines.append("#ifndef FG_TNA_NO_FICCRD_CORE")
    log_table("log_mapr", "msum", 32, "set_log_mapr", 0)
    log_table(
        "log_dpf",
        "meta.fc_dpf",
        16,
        "set_log_dpf",
        ER_OFFSET - LOG_ONE * (g.FG_DPF_SHIFT + MAPR_SAMPLE_BITS),
    )
    exp_table("exp_er", "er_key", "set_er", er_keys(), er_value)
    lines.append("#endif")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    return write_or_check(argv, TABLES_P4, render_tables(), "fairgate_p4.tna_math")


if __name__ == "__main__":
    sys.exit(main())
