"""What each place session control could count says, against the flows the hosts completed,
per search variant of a run, over its TCP measurement window: the FINs leaving the gated
port ("same"), those leaving the gated switch's other ports ("reverse", the servers'),
the FINs and SYNs the next switch passed on towards the servers ("downstream"), and the
counts the controller used (its ``completions_from``). From the controller's records
(``controller.jsonl``: every port's ``fins``, ``syn_ungated`` and ``syn_admitted`` per
period) and tcp.csv; rates in events per second. Records since the switch's FIN filter
(2026-11-29) count a FIN's first copy in ``fins`` (so "reverse" is then what the default
``servers`` counts); older ones count every copy.

``python scripts/session_count_sources.py /work/results/session-control/<run> [variants...]``
(the gated link from each variant's topology.json, BMv2 runs; ``--link s1:2-s2:2`` else)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fairgate_exp.records import read_t0, read_tcp_run


@dataclass(frozen=True, slots=True)
class Link:
    switch: str
    port: int
    far_switch: str
    far_port: int


def parse_link(text: str) -> Link:
    a, b = text.split("-")
    (sa, pa), (sb, pb) = a.split(":"), b.split(":")
    return Link(sa, int(pa), sb, int(pb))


def gated_link(topo: dict[str, Any]) -> Link:
    """The first link marked for admission, gated at its "a" end."""
    for link in topo["links"]:
        if link.get("admission"):
            return parse_link(f"{link['a']}-{link['b']}")
    raise ValueError("no gated link in topology.json")


def rates(records: list[dict[str, Any]], link: Link, lo: float, hi: float) -> dict[str, float]:
    """Events per second in [lo, hi) (record times relative to the run's start)."""
    n: Counter[str] = Counter()
    source = ""
    for r in records:
        if "port" not in r or not lo <= r["t"] < hi:
            continue
        sw, port = r["switch"], r["port"]
        if sw == link.switch and port == link.port:
            n["same FIN"] += r.get("fins", 0)
            n["counted F"] += r.get("completions", 0)
            n["counted A"] += r.get("handshakes", 0)
            source = r.get("completions_from") or source
        elif sw == link.switch:
            n["reverse FIN"] += r.get("fins", 0)
        elif sw == link.far_switch and port != link.far_port:
            n["downstream FIN"] += r.get("fins", 0)
            n["downstream SYN"] += r.get("syn_ungated", 0) + r.get("syn_admitted", 0)
    out = {k: v / (hi - lo) for k, v in n.items()}
    out["from"] = source  # type: ignore[assignment]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run_dir", type=Path)
    p.add_argument("variants", nargs="*", help="default: every search variant")
    p.add_argument("--link", type=parse_link, help="gated link a-b, e.g. s1:2-s2:2")
    args = p.parse_args(argv)
    try:
        summary, _rows = read_tcp_run(args.run_dir)
    except (OSError, ValueError, KeyError) as exc:
        print(f"session_count_sources: {exc}", file=sys.stderr)
        return 2
    variants = args.variants or [
        v for v in summary["results"] if (args.run_dir / v / "controller.jsonl").exists()
    ]
    cols = ["same FIN", "reverse FIN", "downstream FIN", "downstream SYN", "counted F", "counted A"]
    print("variant     completed | " + " | ".join(cols) + " | from")
    for v in variants:
        vdir = args.run_dir / v
        t0 = read_t0(vdir) or 0.0
        topo_path = vdir / "topology.json"
        if args.link is not None:
            link = args.link
        elif topo_path.exists():
            link = gated_link(json.loads(topo_path.read_text()))
        else:
            print(f"session_count_sources: {v}: no topology.json, give --link", file=sys.stderr)
            return 2
        records = []
        for line in (vdir / "controller.jsonl").open():
            r = json.loads(line)
            r["t"] = r.get("t", 0.0) - t0
            records.append(r)
        tcp = next(iter(summary["results"][v]["tcp"].values()))
        lo, hi = tcp["window_s"]
        got = rates(records, link, lo, hi)
        done = tcp["completion_rate_per_s"]
        cells = " | ".join(f"{got.get(c, 0.0):6.1f}" for c in cols)
        print(f"{v:11s} {done:9.1f} | {cells} | {got['from'] or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
