"""fairgate_p4.tna_resources reads the placement bf-p4c kept: the last round of
table_summary.log, not the first (which may have failed)."""

from __future__ import annotations

import json
from pathlib import Path

from fairgate_p4 import tna_resources as t


def _round(n: int, state: str, stages: tuple[int, int], rows: list[tuple[int, str]]) -> str:
    lines = [
        f"Table allocation done {n} time(s), state = {state}",
        f"Number of stages in table allocation: {max(stages)}",
        f"  Number of stages for ingress table allocation: {stages[0]}",
        f"  Number of stages for egress table allocation: {stages[1]}",
        "Critical path length through the table dependency graph: 3",
        "+-------+-----------------+------------+",
        "| Stage | Min / Max Stage | Table Name |",
        "+-------+-----------------+------------+",
    ]
    lines += [f"|   {s}   |    [ 0, 9 ]     |  {name}  |" for s, name in rows]
    return "\n".join([*lines, "+-------+-----------------+------------+", ""])


SUMMARY = _round(1, "INITIAL", (14, 18), [(0, ".a"), (15, ".b"), (17, "tbl_c")]) + _round(
    2, "NOCC_TRY1", (10, 12), [(0, ".a"), (3, ".b"), (3, ".b"), (11, "tbl_c")]
)


def test_stages_are_the_last_rounds() -> None:
    assert t.stages_from_log(SUMMARY) == {"ingress": 10, "egress": 12}
    assert t.last_round("no rounds") == "no rounds"


def test_stage_map_is_the_last_rounds(tmp_path: Path) -> None:
    logs = tmp_path / "pipe" / "logs"
    logs.mkdir(parents=True)
    (logs / "table_summary.log").write_text(SUMMARY)
    stage = {
        "meter_alus": {"meters": []},
        "statistic_alus": {},
        "hash_distribution_units": {"units": []},
    }
    resources = {"resources": {"mau": {"mau_stages": [stage]}}}
    (logs / "resources.json").write_text(json.dumps(resources))
    mau = {"srams": 1, "tcams": 2, "map_rams": 3, "logical_tables": 3}
    metrics = {"mau": mau, "phv": {"normal": [], "tagalong": []}}
    (logs / "metrics.json").write_text(json.dumps(metrics))
    res = t.read_resources(tmp_path, "x")
    assert (res.stages, res.ingress_stages, res.egress_stages) == (12, 10, 12)
    assert sorted(res.stage_map) == [(0, ".a"), (3, ".b"), (11, "tbl_c")]
