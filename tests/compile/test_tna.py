"""With bf-p4c here: the TNA pipeline compiles without warnings, fits one Tofino
pipe, shares its header layouts with the v1model program, and uses the same
control-plane names (or docs/hardware.md lists the difference)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fairgate_p4 import artifacts, tna_resources

pytestmark = pytest.mark.skipif(
    tna_resources.bf_p4c() is None,
    reason="bf-p4c not found: run ../shared/toolchain/install (p4lang/p4c's open-source "
    "Tofino backend, backends/tofino)",
)

#: What `make test` compiles: the variants `make build-tna` builds
#: (tna_resources.DEFAULT_VARIANTS: `full`, every feature with both FICCRD
#: roles, docs/hardware.md "Status").
VARIANTS = tna_resources.DEFAULT_VARIANTS
#: Wire headers both programs declare from p4src/include/headers.p4.
WIRE_HEADERS = ("ethernet_t", "ipv4_t", "tcp_t", "udp_t", "fg_rate_t", "fg_rd_t", "fg_xcp_t")
DOC = artifacts.P4SRC.parent / "docs" / "hardware.md"


@pytest.fixture(scope="module", params=VARIANTS)
def compiled(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tna_resources.CompileResult:
    return tna_resources.compile_variant(request.param, "tofino", tmp_path_factory.mktemp("tna"))


def test_compiles_without_warnings(compiled: tna_resources.CompileResult) -> None:
    assert compiled.returncode == 0, compiled.stderr[-3000:]
    assert compiled.warnings == [], "\n".join(compiled.warnings)


def test_fits_one_pipe(compiled: tna_resources.CompileResult) -> None:
    res = tna_resources.read_resources(compiled.out, compiled.variant)
    assert 0 < res.stages <= tna_resources.MAX_STAGES["tofino"], (
        f"{compiled.variant} needs {res.stages} stages (ingress {res.ingress_stages}, "
        f"egress {res.egress_stages}); one Tofino pipe has 12"
    )


def _v1model_headers() -> dict[str, list[tuple[str, int]]]:
    data = json.loads(artifacts.bmv2_json_path("fairgate").read_text())
    return {
        h["name"]: [(f[0], f[1]) for f in h["fields"] if not f[0].startswith("_padding")]
        for h in data["header_types"]
    }


def _tna_headers(out: Path) -> dict[str, list[tuple[str, int]]]:
    """Header types as bf-p4c's front end saw them (frontend-ir.json)."""
    ir = json.loads((out / "frontend-ir.json").read_text())
    typedefs: dict[str, dict] = {}
    headers: dict[str, list] = {}
    by_id: dict[int, dict] = {}

    def walk(node: object) -> None:
        if isinstance(node, dict):
            kind = node.get("Node_Type")
            if kind is not None:
                by_id[node["Node_ID"]] = node
            if kind == "Type_Typedef":
                typedefs[node["name"]] = node["type"]
            if kind == "Type_Header":
                headers[node["name"]] = node["fields"]["vec"]
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(ir)

    def width(t: dict) -> int:
        t = by_id[t["Node_ID"]]  # repeated nodes are stored once, then by id
        if t["Node_Type"] == "Type_Bits":
            return t["size"]
        return width(typedefs[t["path"]["name"]])

    return {
        name: [(f["name"], width(f["type"])) for f in fields]
        for name, fields in headers.items()
        if name in WIRE_HEADERS
    }


def test_header_layouts_match_v1model(compiled: tna_resources.CompileResult) -> None:
    v1 = _v1model_headers()
    tna = _tna_headers(compiled.out)
    for name in WIRE_HEADERS:
        assert name in tna, f"{name} missing from the TNA program"
        assert tna[name] == v1[name], f"{name}: TNA {tna[name]} != v1model {v1[name]}"


_P4INFO_NAME = re.compile(
    r'^(tables|actions|counters|meters) \{\n  preamble \{\n    id: \d+\n    name: "([^"]+)"', re.M
)
#: TNA counters and meters are P4Info externs (extern_type_name Counter/Meter).
_EXTERN = re.compile(r'extern_type_name: "(Counter|Meter)"(.*?)(?=\nexterns|\Z)', re.S)
_INSTANCE = re.compile(r'    name: "([^"]+)"')


def _names(p4info: str) -> set[tuple[str, str]]:
    """(kind, name) of tables, actions, counters and meters; bf-p4c's "pipe."
    prefix (the Pipeline instance) and p4c's leading "." are dropped."""
    names = {(kind, name) for kind, name in _P4INFO_NAME.findall(p4info)}
    for kind, body in _EXTERN.findall(p4info):
        names |= {(kind.lower() + "s", n) for n in _INSTANCE.findall(body)}
    return {(kind, name.removeprefix("pipe.").lstrip(".")) for kind, name in names}


def test_control_plane_names_match_or_are_documented(
    compiled: tna_resources.CompileResult,
) -> None:
    v1 = _names(artifacts.p4info_path("fairgate").read_text())
    tna = _names((compiled.out / "fairgate_tna.p4info.txtpb").read_text())
    assert tna, "bf-p4c wrote no P4Info entities"
    doc = DOC.read_text()
    table = doc[doc.index("## Names that differ") :]
    undocumented = sorted(
        name for kind, name in (v1 ^ tna) if name != "NoAction" and f"`{name}`" not in table
    )
    assert undocumented == [], f"names on one target only, not in docs/hardware.md: {undocumented}"
    shared = {n for k, n in v1 & tna}
    assert {
        "ipv4_routes",
        "port_feedback",
        "port_arrivals",
        "syn_meter",
        "build_rd",
        "xcp_factors",
        "set_xcp_factors",
        "xcp_ratio_buckets",
        "xcp_ratio_hist",
        "ficcrd_sources",
        "ficcrd_edges",
        "ficcrd_dpf",
        "turn_rd",
        "rewrite_window",
        "ficcrd_edge_events",
        "ficcrd_core_events",
    } <= shared
