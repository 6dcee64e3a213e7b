"""Every control-plane name of the v1model program (P4Info tables, actions,
counters, meters, registers) is declared with the same @name in the TNA
program (p4src/tna/), or docs/hardware.md's "Names that differ" table lists it.
No compiler needed: tests/compile/test_tna.py checks bf-p4c's own P4Info."""

from __future__ import annotations

import re

from fairgate_p4 import artifacts

TNA = artifacts.P4SRC / "tna"
DOC = artifacts.P4SRC.parent / "docs" / "hardware.md"
_ENTITY = re.compile(
    r"^(tables|actions|counters|meters|registers) \{\n  preamble \{\n"
    r'    id: \d+\n    name: "([^"]+)"',
    re.M,
)
_NAME = re.compile(r'@name\("\.([A-Za-z0-9_]+)"\)')


def _v1model_names() -> set[str]:
    text = artifacts.p4info_path("fairgate").read_text()
    return {name for _kind, name in _ENTITY.findall(text) if name != "NoAction"}


def _tna_names() -> set[str]:
    return {n for path in TNA.glob("*.p4") for n in _NAME.findall(path.read_text())}


def _differ_table() -> str:
    doc = DOC.read_text()
    start = doc.index("## Names that differ")
    end = doc.index("\n## ", start + 1)
    return doc[start:end]


def test_v1model_names_exist_in_tna_or_are_documented() -> None:
    table = _differ_table()
    missing = sorted(n for n in _v1model_names() - _tna_names() if f"`{n}`" not in table)
    assert missing == [], f"v1model names absent from p4src/tna and from the docs: {missing}"


def test_tna_only_names_are_documented() -> None:
    table = _differ_table()
    extra = sorted(n for n in _tna_names() - _v1model_names() if f"`{n}`" not in table)
    assert extra == [], f"TNA-only names not in docs/hardware.md: {extra}"


def test_shared_names_cover_the_controller_tables() -> None:
    shared = _v1model_names() & _tna_names()
    for name in ("ipv4_routes", "port_feedback", "admission_ports", "ficcrd_dpf", "syn_meter"):
        assert name in shared
