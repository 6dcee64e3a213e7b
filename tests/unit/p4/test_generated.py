"""The Python view of the P4 programs must match the P4 sources and the
committed compiler outputs (one source of truth: p4src/)."""

from __future__ import annotations

import json
import re

import pytest

from fairgate_p4 import artifacts, gen
from fairgate_p4 import generated as g


def test_generated_module_is_up_to_date() -> None:
    assert gen.OUTPUT.read_text() == gen.generate(), "run `make build` (fairgate_p4.gen)"


@pytest.mark.parametrize("program", artifacts.PROGRAMS)
def test_committed_artifacts_exist(program: str) -> None:
    assert artifacts.p4info_path(program).is_file()
    assert artifacts.bmv2_json_path(program).is_file()


@pytest.mark.parametrize("program", artifacts.PROGRAMS)
def test_header_layouts_match_compiled_json(program: str) -> None:
    """Every header type p4c compiled has the field names and widths that the
    generated Python layouts carry, in the same order."""
    compiled_types = {
        t["name"]: t["fields"]
        for t in compiled_json_types(program)
        if t["name"] in g.HEADER_LAYOUTS
    }
    assert set(compiled_types) == set(g.HEADER_LAYOUTS)
    for name, fields in compiled_types.items():
        compiled = []
        for f in fields:
            if f[1] == "*":  # varbit: BMv2 keeps the maximum in the header type
                compiled.append(
                    (
                        f[0],
                        -8
                        * next(
                            t["max_length"]
                            for t in compiled_json_types(program)
                            if t["name"] == name
                        ),
                    )
                )
            else:
                compiled.append((f[0], f[1]))
        assert compiled == list(g.HEADER_LAYOUTS[name]), name


def compiled_json_types(program: str) -> list[dict]:
    return json.loads(artifacts.bmv2_json_path(program).read_text())["header_types"]


def test_rate_header_size_matches_define() -> None:
    bits = sum(w for _, w in g.HEADER_LAYOUTS["fg_rate_t"])
    assert bits == g.FG_HEADER_BYTES * 8


def test_counter_geometry_is_consistent() -> None:
    assert 1 << g.FG_PORT_BITS == g.FG_MAX_PORTS
    assert 1 << g.FG_HIST_BUCKET_BITS == g.FG_HIST_BUCKETS
    assert g.FG_MAX_PORTS * g.FG_HIST_BUCKETS == g.FG_HIST_ENTRIES
    assert g.FG_MAX_PORTS << g.FG_SESSION_EVENT_BITS == g.FG_SESSION_ENTRIES
    assert g.FG_ANOMALY_PORT_NOT_COUNTED < g.FG_ANOMALY_ENTRIES


def test_anomaly_reasons_are_distinct_counter_indexes() -> None:
    """Every FG_ANOMALY_* reason has its own input_anomalies index (0 = none)."""
    reasons = {
        name: value
        for name, value in vars(g).items()
        if name.startswith("FG_ANOMALY_") and name != "FG_ANOMALY_ENTRIES"
    }
    assert len(reasons) >= 23  # through TRAILING_BYTES (issue #16)
    assert len(set(reasons.values())) == len(reasons)
    assert all(0 <= v < g.FG_ANOMALY_ENTRIES for v in reasons.values())
    assert reasons["FG_ANOMALY_NONE"] == 0


def _p4info_sizes(program: str) -> dict[str, int]:
    text = artifacts.p4info_path(program).read_text()
    sizes = {}
    for block in re.finditer(
        r"^(?:counters|meters) \{\n  preamble \{\n    id: \d+\n"
        r'    name: "([^"]+)".*?\n  size: (\d+)',
        text,
        re.M | re.S,
    ):
        sizes[block.group(1)] = int(block.group(2))
    return sizes


def test_counter_sizes_in_p4info_follow_defines() -> None:
    sizes = _p4info_sizes("fairgate")
    assert sizes[g.COUNTER_PORT_ARRIVALS] == g.FG_MAX_PORTS
    assert sizes[g.COUNTER_PORT_DEPARTURES] == g.FG_MAX_PORTS
    assert sizes[g.COUNTER_QUEUE_DEPTH_HIST] == g.FG_HIST_ENTRIES
    assert sizes[g.COUNTER_RTT_HIST] == g.FG_HIST_ENTRIES
    assert sizes[g.COUNTER_SESSION_EVENTS] == g.FG_SESSION_ENTRIES
    assert sizes[g.COUNTER_INPUT_ANOMALIES] == g.FG_ANOMALY_ENTRIES
    assert sizes[g.METER_SYN_METER] == g.FG_MAX_PORTS


def test_forward_program_names_are_a_subset() -> None:
    fwd = gen.parse_p4info_names(artifacts.p4info_path("forward").read_text())
    full = gen.parse_p4info_names(artifacts.p4info_path("fairgate").read_text())
    assert set(fwd.items()) <= set(full.items())
    assert "TABLE_IPV4_ROUTES" in fwd


def test_defines_parser_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="twice"):
        gen.parse_defines("#define FG_A 1\n#define FG_A 2\n")


def test_headers_parser_reads_typedefs_and_varbits() -> None:
    text = "typedef bit<9> p_t;\nheader h_t { p_t port; varbit<320> opts; bit<7> pad; }\n"
    fields = gen.parse_headers(text)["h_t"]
    assert [(f.name, f.bits, f.variable) for f in fields] == [
        ("port", 9, False),
        ("opts", 320, True),
        ("pad", 7, False),
    ]
