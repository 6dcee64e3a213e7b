"""Compile the TNA pipeline with bf-p4c and report its resources from the compiler's logs.

``python -m fairgate_p4.tna_resources build [--variant full] [--target tofino]``
compiles p4src/tna/fairgate_tna.p4 into ``build/tna/<target>/<variant>/`` and
fails on any compiler warning. ``report`` compiles every variant (the whole
program, the base with every feature off, and the base plus one feature) and
writes the resource section of docs/hardware.md between its marker comments:
stages, SRAM and TCAM blocks, stateful and statistics ALUs, hash distribution
units and PHV bits per variant, from ``pipe/logs/resources.json``,
``metrics.json`` and ``table_summary.log``, plus the stage map of the whole
program. Nothing in that section is typed by hand. ``report --variants A B`` compiles
only A and B and reads every other row from its earlier compile's logs; it refuses
(and compiles nothing) when those logs are missing or older than a P4 file the program
includes, so the section never loses a row or shows a stale one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

P4SRC = Path(__file__).resolve().parent.parent
TOP = P4SRC.parent
PROGRAM = P4SRC / "tna" / "fairgate_tna.p4"
DOC = TOP / "docs" / "hardware.md"
BEGIN = "<!-- BEGIN tna-resources (python -m fairgate_p4.tna_resources report) -->"
END = "<!-- END tna-resources -->"
#: Stages of one Tofino pipe.
MAX_STAGES = {"tofino": 12, "tofino2": 20}
ARCH = {"tofino": "tna", "tofino2": "t2na"}
FEATURES = ("TELEMETRY", "ADMISSION", "FEEDBACK", "FICCRD", "XCP")
#: Every variant: name -> the features compiled out.
VARIANTS: dict[str, tuple[str, ...]] = {
    "full": (),
    "no-ficcrd": ("FICCRD",),
    # FICCRD's two roles on their own: an edge switch (per-flow state, window
    # rewrite, RD emission) and a core switch (MAPR, DPF, ER).
    "ficcrd-edge": ("FICCRD_CORE",),
    "ficcrd-core": ("FICCRD_EDGE",),
    "base": FEATURES,
    **{f"base+{f.lower()}": tuple(x for x in FEATURES if x != f) for f in FEATURES},
}
#: What `make build-tna` builds and the compile suite checks (fit, warnings,
#: layouts, names): the whole program, every feature on (docs/hardware.md, "Status").
DEFAULT_VARIANTS = ("full",)
MISSING_HINT = (
    "bf-p4c not found: run ../shared/toolchain/install, or build p4lang/p4c's "
    "open-source Tofino backend (backends/tofino)"
)


def bf_p4c() -> str | None:
    return shutil.which(os.environ.get("BF_P4C", "bf-p4c"))


@dataclass
class CompileResult:
    variant: str
    target: str
    out: Path
    returncode: int
    seconds: float
    stderr: str
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.warnings


def compile_variant(variant: str, target: str, out_root: Path) -> CompileResult:
    """Run bf-p4c on one variant; ``out_root/<target>/<variant>`` gets its outputs."""
    tool = bf_p4c()
    if tool is None:
        raise FileNotFoundError(MISSING_HINT)
    out = out_root / target / variant
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [
        tool,
        "--target",
        target,
        "--arch",
        ARCH[target],
        "-g",
        "--p4runtime-files",
        str(out / "fairgate_tna.p4info.txtpb"),
        *[f"-DFG_TNA_NO_{f}" for f in VARIANTS[variant]],
        "-o",
        str(out),
        str(PROGRAM),
    ]
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=TOP, check=False)
    seconds = time.monotonic() - start
    text = proc.stdout + proc.stderr
    (out / "compile.log").write_text(" ".join(cmd) + "\n" + text)
    warnings = [line for line in text.splitlines() if "warning" in line.lower()]
    return CompileResult(variant, target, out, proc.returncode, seconds, text, warnings)


# ---------------------------------------------------------------- log parsing


@dataclass
class Resources:
    variant: str
    stages: int
    ingress_stages: int
    egress_stages: int
    srams: int
    tcams: int
    map_rams: int
    stateful_alus: int
    stats_alus: int
    hash_dist_units: int
    phv_bits: int
    logical_tables: int
    compile_seconds: float = 0.0
    stage_map: list[tuple[int, str]] = field(default_factory=list)
    #: the compiler's first error (compile.log), e.g. the assembler's after placement
    error: str = ""


_STAGES = re.compile(r"Number of stages for (ingress|egress) table allocation: (\d+)")
_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*\[[^\]]*\]\s*\|\s*(\S.*?)\s*\|\s*$", re.M)
_ROUND = "Table allocation done"


def last_round(summary: str) -> str:
    """The last placement round of a table_summary.log: bf-p4c logs one section
    per round (INITIAL, NOCC_TRY1, REDO_PHV1, ...), and only the last one is the
    placement it kept."""
    start = summary.rfind(_ROUND)
    return summary if start < 0 else summary[start:]


def read_resources(out: Path, variant: str = "") -> Resources:
    """Read one compile's logs (``out/pipe/logs``)."""
    logs = out / "pipe" / "logs"
    res = json.loads((logs / "resources.json").read_text())["resources"]
    metrics = json.loads((logs / "metrics.json").read_text())
    summary = last_round((logs / "table_summary.log").read_text())
    stages = {g: int(n) for g, n in _STAGES.findall(summary)}
    mau = res["mau"]
    # Meter ALUs serve meters and stateful ALUs (RegisterActions) alike.
    meter_alus = sum(len(st["meter_alus"]["meters"]) for st in mau["mau_stages"])
    stats = sum(len(st["statistic_alus"].get("stats", [])) for st in mau["mau_stages"])
    hdu = sum(len(st["hash_distribution_units"]["units"]) for st in mau["mau_stages"])
    phv = sum(c["bits_occupied"] for kind in ("normal", "tagalong") for c in metrics["phv"][kind])
    first: dict[str, int] = {}
    for stage, name in _ROW.findall(summary):
        first.setdefault(name, int(stage))  # a table split over stages: its first
    stage_map = [(stage, name) for name, stage in first.items()]
    log = out / "compile.log"
    errors = [
        line.split("error:", 1)[1].strip()
        for line in (log.read_text().splitlines() if log.exists() else [])
        if "error:" in line
    ]
    return Resources(
        variant=variant or out.name,
        stages=max(stages.values()) if stages else 0,
        ingress_stages=stages.get("ingress", 0),
        egress_stages=stages.get("egress", 0),
        srams=metrics["mau"]["srams"],
        tcams=metrics["mau"]["tcams"],
        map_rams=metrics["mau"]["map_rams"],
        stateful_alus=meter_alus,
        stats_alus=stats,
        hash_dist_units=hdu,
        phv_bits=phv,
        logical_tables=metrics["mau"]["logical_tables"],
        compile_seconds=float(metrics.get("compilation_time", 0.0)),
        stage_map=stage_map,
        error=errors[0] if errors else "",
    )


def stages_from_log(text: str) -> dict[str, int]:
    """Stages per gress from the compiler's table_summary.log text (its last round)."""
    return {g: int(n) for g, n in _STAGES.findall(last_round(text))}


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def p4_sources(program: Path = PROGRAM) -> list[Path]:
    """The P4 files a TNA compile reads: ``program`` and every file it includes with
    ``#include "..."`` (relative to the including file), followed through; the
    compiler's own ``<...>`` headers are not ours."""
    seen: dict[Path, None] = {}
    todo = [program.resolve()]
    while todo:
        f = todo.pop()
        if f in seen or not f.exists():
            continue
        seen[f] = None
        todo += [(f.parent / name).resolve() for name in _INCLUDE.findall(f.read_text())]
    return sorted(seen, key=str)


def unusable_logs(
    variants: list[str], target: str, out_root: Path, sources: list[Path]
) -> dict[str, str]:
    """Why each of ``variants`` has no logs a report can use: none at all, or logs
    older than the newest of ``sources`` (a row from them would describe old code)."""
    times = {f: f.stat().st_mtime for f in sources}
    newest = max(times, key=times.__getitem__, default=None)
    why: dict[str, str] = {}
    for variant in variants:
        metrics = out_root / target / variant / "pipe" / "logs" / "metrics.json"
        if not metrics.exists():
            why[variant] = f"no logs ({metrics} missing)"
        elif newest is not None and metrics.stat().st_mtime < times[newest]:
            rel = newest.relative_to(TOP) if newest.is_relative_to(TOP) else newest
            why[variant] = f"compiled before {rel} changed"
    return why


# ---------------------------------------------------------------- report


def render(rows: list[Resources], failed: dict[str, str], target: str) -> str:
    limit = MAX_STAGES[target]
    out = [
        BEGIN,
        "",
        f"Measured by `python -m fairgate_p4.tna_resources report` (bf-p4c, `--target {target}`),",
        "from each compile's `pipe/logs/resources.json`, `metrics.json` and `table_summary.log`.",
        f"One {target} pipe has {limit} MAU stages; ingress and egress share them.",
        "`base` is sanity + routing + classification + the anomaly counter (every",
        "feature compiled out); `base+X` adds feature X; `full` is everything;",
        "`ficcrd-edge` / `ficcrd-core` are `full` with only FICCRD's edge or core role.",
        "A variant that does not fit fails in placement or in the assembler (its first",
        "error from `compile.log` is shown); its row is what the compiler logged up to",
        "then. `backend s` is `compilation_time` from `metrics.json`.",
        "",
        "| variant | fits | stages (ingress / egress) | SRAM | TCAM | map RAM | stateful+meter ALUs"
        " | stats ALUs | hash dist units | PHV bits | logical tables | backend s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    base = next((r for r in rows if r.variant == "base"), None)
    for r in rows:
        fits = "yes" if r.stages <= limit else f"**no** ({r.stages} > {limit})"
        if r.error:
            fits = f"**no**: {r.error}"
        out.append(
            f"| {r.variant} | {fits} | {r.stages} ({r.ingress_stages} / {r.egress_stages}) "
            f"| {r.srams} | {r.tcams} | {r.map_rams} | {r.stateful_alus} | {r.stats_alus} "
            f"| {r.hash_dist_units} | {r.phv_bits} | {r.logical_tables} "
            f"| {r.compile_seconds:.0f} |"
        )
    for name, why in failed.items():
        out.append(f"| {name} | compile failed: {why} | | | | | | | | | | |")
    if base is not None:
        out += [
            "",
            "What each feature adds to `base` (difference of the rows above):",
            "",
            "| feature | stages | SRAM | TCAM | map RAM | stateful+meter ALUs | stats ALUs"
            " | hash dist units | PHV bits |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            if r.variant.startswith("base+"):
                out.append(
                    f"| {r.variant[5:]} | {r.stages - base.stages:+d} | {r.srams - base.srams:+d} "
                    f"| {r.tcams - base.tcams:+d} | {r.map_rams - base.map_rams:+d} "
                    f"| {r.stateful_alus - base.stateful_alus:+d} "
                    f"| {r.stats_alus - base.stats_alus:+d} "
                    f"| {r.hash_dist_units - base.hash_dist_units:+d} "
                    f"| {r.phv_bits - base.phv_bits:+d} |"
                )
    fitting = [r for r in rows if r.stages <= limit and r.stage_map and not r.error]
    shown = max(fitting, key=lambda r: r.logical_tables, default=None)
    if shown is not None:
        out += [
            "",
            f"Stage map of `{shown.variant}`, the largest variant that fits (table_summary.log;",
            "`.name` = a control-plane table, `tbl_<control>_<action>` and `tbl_<file><line>` =",
            "the compiler's wrapper of an action or a `RegisterAction` call at that source",
            "line, `*checksum*` = a deparser checksum condition; gateways (`cond-*`) left out):",
            "",
            "| stage | tables and register actions |",
            "|---|---|",
        ]
        by_stage: dict[int, list[str]] = {}
        for stage, name in shown.stage_map:
            if not name.startswith("cond-"):
                by_stage.setdefault(stage, []).append(name)
        for stage in sorted(by_stage):
            names = sorted(by_stage[stage])
            out.append(f"| {stage} | {', '.join(f'`{n}`' for n in names)} |")
    out += ["", END]
    return "\n".join(out)


def write_doc(section: str, doc: Path = DOC) -> None:
    text = doc.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{doc}: markers {BEGIN!r} / {END!r} not found")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    doc.write_text(head + section + tail)


def build_one(variant: str, target: str, out: Path) -> int:
    """Compile one variant; 1 (and why, on stderr) when it fails or warns, else 0."""
    res = compile_variant(variant, target, out)
    sys.stdout.write(res.stderr)
    if res.returncode != 0:
        print(f"bf-p4c failed ({res.returncode}) for {variant}", file=sys.stderr)
        return 1
    if res.warnings:
        print(f"bf-p4c printed {len(res.warnings)} warning(s) for {variant}", file=sys.stderr)
        return 1
    stages = stages_from_log((res.out / "pipe/logs/table_summary.log").read_text())
    print(
        f"{target}/{variant}: {max(stages.values())} stages "
        f"(ingress {stages.get('ingress')}, egress {stages.get('egress')}), "
        f"{res.seconds:.0f} s -> {res.out}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile one variant; fail on errors or warnings")
    b.add_argument(
        "--variant",
        nargs="+",
        default=list(DEFAULT_VARIANTS),
        choices=sorted(VARIANTS),
        help="one or more (default: %(default)s)",
    )
    b.add_argument("--target", default="tofino", choices=sorted(ARCH))
    b.add_argument("--out", type=Path, default=TOP / "build" / "tna")
    r = sub.add_parser("report", help="compile every variant and write docs/hardware.md")
    r.add_argument("--target", default="tofino", choices=sorted(ARCH))
    r.add_argument("--out", type=Path, default=TOP / "build" / "tna")
    r.add_argument("--doc", type=Path, default=DOC)
    r.add_argument("--no-compile", action="store_true", help="read existing logs only")
    r.add_argument(
        "--variants",
        nargs="+",
        choices=sorted(VARIANTS),
        help="compile only these; every other row comes from its earlier compile's logs "
        "(default: compile every variant)",
    )
    args = parser.parse_args(argv)
    if args.cmd == "report" and args.no_compile and args.variants:
        parser.error("--variants names what to compile; --no-compile compiles nothing")
    if bf_p4c() is None and not getattr(args, "no_compile", False):
        print(MISSING_HINT, file=sys.stderr)
        return 2
    if args.cmd == "build":
        failures = 0
        for variant in args.variant:
            failures += build_one(variant, args.target, args.out)
        return 1 if failures else 0
    return report(args.target, args.out, args.doc, to_compile=compile_only(args))


def compile_only(args: argparse.Namespace) -> list[str]:
    """The variants a report compiles: none, the named ones, or every one."""
    if args.no_compile:
        return []
    return list(args.variants) if args.variants else list(VARIANTS)


def report(target: str, out_root: Path, doc: Path, to_compile: list[str]) -> int:
    """Compile ``to_compile``, then write every variant's row (the others from their
    logs); 2 without compiling anything when another variant's logs cannot be used."""
    kept = [v for v in VARIANTS if v not in to_compile]
    unusable = unusable_logs(kept, target, out_root, p4_sources())
    if unusable:
        print(
            f"{doc.name}'s resource section lists every variant, and these have no "
            "usable logs to read their rows from:",
            file=sys.stderr,
        )
        for variant, why in unusable.items():
            print(f"  {variant}: {why}", file=sys.stderr)
        print(
            "compile them too (add them to --variants, or drop --variants to compile "
            "every one); nothing was compiled or written",
            file=sys.stderr,
        )
        return 2
    rows: list[Resources] = []
    failed: dict[str, str] = {}
    for variant in VARIANTS:
        out = out_root / target / variant
        if variant in to_compile:
            res = compile_variant(variant, target, out_root)
            print(f"{variant}: rc {res.returncode}, {res.seconds:.0f} s", flush=True)
        try:
            row = read_resources(out, variant)
        except (FileNotFoundError, KeyError) as exc:
            failed[variant] = f"no logs ({exc.__class__.__name__})"
            continue
        rows.append(row)
    write_doc(render(rows, failed, target), doc)
    print(f"wrote the resource section of {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
