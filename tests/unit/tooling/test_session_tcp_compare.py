"""scripts/session_tcp_compare.py: the engines' TCP per window, SYN retries, size classes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import session_tcp_compare as stc  # noqa: E402


def row(
    scheduled: float,
    size: int,
    outcome: str,
    connected: float | None = None,
    fct: float | None = None,
    syn: int | None = None,
    retrans: int | None = None,
) -> dict[str, str]:
    def s(x: float | None) -> str:
        return "" if x is None else str(x)

    return {
        "scheduled_s": str(scheduled),
        "size": str(size),
        "outcome": outcome,
        "connected_s": s(connected),
        "fct_s": s(fct),
        "syn_retrans": s(syn),
        "retrans": s(retrans),
    }


def test_size_classes_are_segments() -> None:
    assert stc.size_class(1) == "1-3" and stc.size_class(3 * 1448) == "1-3"
    assert stc.size_class(3 * 1448 + 1) == "4-7"
    assert stc.size_class(15 * 1448) == "8-15" and stc.size_class(10**6) == "16+"


def test_profile_counts_each_event_in_its_own_window() -> None:
    rows = [
        row(1.0, 5000, "completed", 1.1, 2.0, 0, 1),  # arrived before, ends in [2, 12) at 3
        row(3.0, 30000, "completed", 4.2, 5.0, 1, 3),  # retried its SYN once, ends at 8
        row(4.0, 5000, "timeout"),  # gave up connecting
        row(5.0, 5000, "interrupted", 5.1),  # connected, never completed
        row(11.0, 5000, "completed", 11.1, 2.0, 0, 0),  # ends after the window
        row(1.0, 5000, "timeout"),  # gave up, arrived before the window
    ]
    p = stc.profile(rows, 2.0, 12.0)
    assert (p.arrived, p.connected, p.completed, p.gave_up) == (4, 3, 2, 1)
    assert p.per_s(p.connected) == pytest.approx(0.3)
    # SYN retries of the flows connected in the window (4.2, 5.1: no value, 11.1)
    assert (p.syn_known, p.first_syn, p.syn_retries) == (2, 1, 1)
    assert (p.retrans_known, p.retrans) == (2, 4)
    assert p.by_class["4-7"] == [2.0] and p.by_class["16+"] == [5.0]
    lines = stc.table(["a"], [p])
    assert "| connected on the first SYN | 0.50 |" in lines
    assert any(x.startswith("| completed 16+ segments") and "0.1 (50%)" in x for x in lines)


def test_older_records_without_retry_columns_show_a_dash() -> None:
    rows = [{k: v for k, v in row(3.0, 5000, "completed", 3.1, 1.0).items() if "retrans" not in k}]
    lines = stc.table(["old"], [stc.profile(rows, 0.0, 10.0)])
    assert "| SYN retries per connected flow | - |" in lines
