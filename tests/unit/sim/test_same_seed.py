"""Same seed, same results: short seeded runs (UDP QFCP / Lestas / RCP dumbbells, the
lab parking lot, Reno over droptail and FICCRD) must reproduce, bit for bit, the
digests recorded in ``golden/digests.json``: the TCP runs' by the code before the
simulator's speed-ups (issue 17), the UDP runs' when they moved to experiments run
through ``fairgate_exp`` (issue 13; the runs themselves changed: a 50 ms stagger
instead of a seeded start jitter, the file's port numbering). Every output part is
compared on its own, so a failure names the part."""

from __future__ import annotations

import json
import math

import pytest
from golden_runs import GOLDEN, RUNS, digests


@pytest.mark.parametrize("name", sorted(RUNS))
def test_same_seed_same_results(name: str) -> None:
    want = json.loads(GOLDEN.read_text())[name]
    assert digests(name) == want


def test_digest_sees_a_one_ulp_change() -> None:
    from golden_runs import digest

    assert digest({"t": [0.1]}) != digest({"t": [math.nextafter(0.1, 1.0)]})
