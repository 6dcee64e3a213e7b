"""What BMv2 does to bench_pipeline's packet, read from the compiled JSON: the
conditions it evaluates, the tables it applies (hidden ones too), the field
writes and expression operators of their actions, and the fields and headers
it resets for every packet. No switch, no root: a walk of the program's
control flow with the packet's header values, and the benchmark's entries
(bench_pipeline.configure) for the tables it fills; every other table runs
its default action.

On BMv2 each of these costs: every metadata field and every header's
validity bit is reset per packet, every operator of an expression is a GMP
operation, every field write exports the value to bytes (docs/performance.md
"Pipeline"). Unlike packets per second, these counts do not depend on the
load of the machine.

    pipeline_path.py [--xcp] [-v] [JSON ...]   (default: both committed programs)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_pipeline import SWITCH_MAC, frame

from fairgate_p4 import artifacts, xcp_math

# table -> (action, parameters) of bench_pipeline's entries for its packet
ENTRIES: dict[str, tuple[str, list[int]]] = {
    "ipv4_routes": ("forward", [2, int(SWITCH_MAC.replace(":", ""), 16), 2]),
    "port_feedback": ("set_port_feedback", [10_000, 1]),
    "queue_buckets": ("set_queue_bucket", [0]),  # an idle queue
    "rtt_buckets": ("set_rtt_bucket", [4]),  # 20 000 us in 5 000 us buckets
    # --xcp: both terms computed (the mantissa tables' const entries run as their
    # default, the same action: the counts are right, the mantissas are not)
    "xcp_factors": ("set_xcp_factors", [xcp_math.encode_factor(1.8e6) & 0xFFFF, 256]),
}
# headers bench_pipeline's frames carry, in order (fg_xcp on XCP data)
FRAME_HEADERS = ("ethernet", "ipv4", "udp", "fg", "fg_xcp")

BINARY: dict[str, Callable[[int, int], int | bool]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "<<": lambda a, b: a << b,
    ">>": lambda a, b: a >> b,
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "and": lambda a, b: bool(a and b),
    "or": lambda a, b: bool(a or b),
    "two_comp_mod": lambda a, b: ((a + (1 << (b - 1))) % (1 << b)) - (1 << (b - 1)),
}


@dataclass
class Counts:
    conditions: int = 0
    tables: int = 0
    hidden_tables: int = 0
    primitives: int = 0
    field_writes: int = 0
    operators: int = 0


@dataclass
class Walk:
    doc: dict[str, Any]
    values: dict[tuple[str, str], int]
    valid: set[str]
    counts: Counts = field(default_factory=Counts)
    trace: list[str] = field(default_factory=list)

    def width(self, header: str, name: str) -> int:
        htype = next(h["header_type"] for h in self.doc["headers"] if h["name"] == header)
        fields = next(t["fields"] for t in self.doc["header_types"] if t["name"] == htype)
        return next(f[1] for f in fields if f[0] == name)

    def value(self, e: dict[str, Any], params: list[int]) -> Any:
        kind, v = e["type"], e["value"]
        if kind == "expression":
            return self.operator(v, params) if "op" in v else self.value(v, params)
        if kind == "field":
            header, name = v
            if name == "$valid$":
                return int(header in self.valid)
            return self.values.get((header, name), 0)
        if kind == "hexstr":
            return int(v, 16)
        if kind == "bool":
            return bool(v)
        if kind in ("local", "runtime_data"):
            return params[v]
        if kind == "header":
            return v
        raise ValueError(f"expression {e}")

    def operator(self, v: dict[str, Any], params: list[int]) -> Any:
        self.counts.operators += 1
        op = v["op"]
        if op == "?":
            return self.value(v["left"] if self.value(v["cond"], params) else v["right"], params)
        right = self.value(v["right"], params)
        if op == "valid":
            return right in self.valid
        if op == "d2b":
            return right != 0
        if op == "b2d":
            return int(bool(right))
        if op == "not":
            return not right
        if op == "~":
            return ~right
        return BINARY[op](self.value(v["left"], params), right)

    def action(self, action_id: int, params: list[int]) -> None:
        action = next(a for a in self.doc["actions"] if a["id"] == action_id)
        for prim in action["primitives"]:
            self.counts.primitives += 1
            args = prim["parameters"]
            if prim["op"] == "assign":
                header, name = args[0]["value"]
                value = int(self.value(args[1], params))
                # a field keeps its width's low bits, as BMv2 stores it
                self.values[(header, name)] = value & ((1 << self.width(header, name)) - 1)
                self.counts.field_writes += 1
                continue
            for arg in args:
                if arg["type"] in ("expression", "field", "local", "runtime_data"):
                    self.value(arg, params)

    def pipeline(self, pipe: dict[str, Any]) -> None:
        tables = {t["name"]: t for t in pipe["tables"]}
        conditions = {c["name"]: c for c in pipe["conditionals"]}
        actions = {a["id"]: a["name"] for a in self.doc["actions"]}
        node = pipe["init_table"]
        while node:
            if node in conditions:
                cond = conditions[node]
                before = self.counts.operators
                taken = bool(self.value(cond["expression"], []))
                self.counts.conditions += 1
                self.trace.append(f"  if {node} ({self.counts.operators - before} ops): {taken}")
                node = cond["true_next"] if taken else cond["false_next"]
                continue
            table = tables[node]
            self.counts.tables += 1
            self.counts.hidden_tables += not table["key"]
            by_name = {actions[i]: i for i in table["action_ids"]}
            if table["name"] in ENTRIES:
                name, params = ENTRIES[table["name"]]
                hit = True
            else:
                default = table["default_entry"]
                name = actions[default["action_id"]]
                params = [int(x, 16) for x in default["action_data"]]
                hit = False
            before = (self.counts.operators, self.counts.field_writes)
            self.action(by_name[name], params)
            ops, writes = (self.counts.operators - before[0], self.counts.field_writes - before[1])
            self.trace.append(f"  apply {table['name']}: {name} ({ops} ops, {writes} writes)")
            nexts = table["next_tables"]
            if "__HIT__" in nexts:
                node = nexts["__HIT__" if hit else "__MISS__"]
            else:
                node = nexts.get(name, table.get("base_default_next"))
        if pipe["name"] == "ingress":
            port = self.values.get(("standard_metadata", "egress_spec"), 0)
            self.values[("standard_metadata", "egress_port")] = port


def parse(doc: dict[str, Any], data: bytes) -> tuple[dict[tuple[str, str], int], set[str]]:
    """The frame's header fields by the JSON's layouts (the benchmark's frames
    carry exactly FRAME_HEADERS, in order, fg_xcp only on XCP data)."""
    types = {t["name"]: t["fields"] for t in doc["header_types"]}
    instances = {h["name"]: h["header_type"] for h in doc["headers"]}
    bits = int.from_bytes(data, "big")
    left = len(data) * 8
    values: dict[tuple[str, str], int] = {}
    valid: set[str] = set()
    for header in FRAME_HEADERS:
        fields = types[instances[header]]
        size = sum(f[1] for f in fields)
        if header == "fg_xcp" and values[("fg", "kind")] != 7:
            continue
        valid.add(header)
        for name, width, *_ in fields:
            left -= width
            values[(header, name)] = (bits >> left) & ((1 << width) - 1)
        assert size % 8 == 0
    values[("standard_metadata", "ingress_port")] = 1
    values[("standard_metadata", "packet_length")] = len(data)
    return values, valid


def fields_and_headers(doc: dict[str, Any]) -> tuple[int, int]:
    sizes = {t["name"]: len(t["fields"]) for t in doc["header_types"]}
    metadata = sum(sizes[h["header_type"]] for h in doc["headers"] if h["metadata"])
    return metadata, sum(1 for h in doc["headers"] if not h["metadata"])


def walk(path: Path, config: str) -> Walk:
    doc = json.loads(path.read_text())
    values, valid = parse(doc, frame(config))
    w = Walk(doc, values, valid)
    for pipe in doc["pipelines"]:
        w.trace.append(pipe["name"])
        w.pipeline(pipe)
    return w


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", nargs="*", type=Path, help="compiled BMv2 JSON")
    parser.add_argument("--xcp", action="store_true", help="XCP data (bench_pipeline --xcp)")
    parser.add_argument("-v", action="store_true", help="list every condition and table")
    args = parser.parse_args()
    paths = args.json or [artifacts.bmv2_json_path(p) for p in ("forward", "fairgate")]
    config = "fairgate-xcp" if args.xcp else "fairgate"
    head = ["fields", "headers", "conditions", "tables", "hidden", "writes", "operators"]
    print(f"{'program':<24} " + " ".join(f"{h:>10}" for h in head))
    for path in paths:
        w = walk(path, config)
        doc = json.loads(path.read_text())
        c = w.counts
        row = [*fields_and_headers(doc), c.conditions, c.tables, c.hidden_tables]
        row += [c.field_writes, c.operators]
        if args.v:
            print("\n".join(w.trace))
        print(f"{path.stem:<24} " + " ".join(f"{n:>10}" for n in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
