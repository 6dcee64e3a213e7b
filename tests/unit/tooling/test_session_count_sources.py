"""scripts/session_count_sources.py: each place session control could count, per second."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import session_count_sources as scs  # noqa: E402

LINK = scs.Link("s1", 2, "s2", 2)


def rec(t: float, switch: str, port: int, **counts: object) -> dict[str, object]:
    return {"t": t, "switch": switch, "port": port} | counts


def test_rates_split_the_fins_by_where_they_were_counted() -> None:
    records = [
        rec(1.0, "s1", 2, fins=30, completions=8, handshakes=9, completions_from="downstream"),
        rec(1.0, "s1", 1, fins=12),  # the servers' FINs on the way back
        rec(1.0, "s2", 1, fins=8, syn_ungated=7, syn_admitted=2),  # towards the server
        rec(1.0, "s2", 2, fins=12, syn_ungated=50),  # the link's far end: not counted
        rec(9.0, "s2", 1, fins=100),  # outside the window
        {"t": 1.0, "switch": "s1"},  # not a port record
    ]
    got = scs.rates(records, LINK, 0.0, 2.0)
    assert got["same FIN"] == 15 and got["reverse FIN"] == 6
    assert got["downstream FIN"] == 4 and got["downstream SYN"] == 4.5
    assert (got["counted F"], got["counted A"]) == (4, 4.5)
    assert got["from"] == "downstream"


def test_the_gated_link_is_read_from_the_topology() -> None:
    topo = {"links": [{"a": "s1:3", "b": "s2:4"}, {"a": "s2:2", "b": "s3:1", "admission": True}]}
    assert scs.gated_link(topo) == scs.Link("s2", 2, "s3", 1)
    assert scs.parse_link("s1:2-s2:2") == LINK
    with pytest.raises(ValueError, match="no gated link"):
        scs.gated_link({"links": []})
