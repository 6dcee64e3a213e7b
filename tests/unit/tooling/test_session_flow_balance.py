"""scripts/session_flow_balance.py: flows connected vs completed in a window, open flows."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import session_flow_balance as sfb  # noqa: E402


def row(scheduled: float, connected: float | None, fct: float | None) -> dict[str, str]:
    return {
        "scheduled_s": str(scheduled),
        "connected_s": "" if connected is None else str(connected),
        "fct_s": "" if fct is None else str(fct),
    }


def test_balance_counts_connections_completions_and_open_flows() -> None:
    rows = [
        row(1.0, 1.5, 3.0),  # connected before, completes in the window (at 4 s)
        row(2.5, 3.0, 0.5),  # connected and completed inside (3.0 s)
        row(3.0, 3.5, None),  # connected inside, never completes: open at the end
        row(9.0, 9.2, 0.5),  # connected inside, completes after (9.5 s)
        row(0.5, None, None),  # never connected (SYN timeouts)
    ]
    b = sfb.balance(rows, 2.0, 9.5)
    assert b.connected_per_s == pytest.approx(3 / 7.5)
    assert b.completed_per_s == pytest.approx(2 / 7.5)
    assert (b.open_at_start, b.open_at_end) == (1, 2)
    assert b.ratio == pytest.approx(1.5)
