"""The report's "engines agree" table: an experiment file's ``[[agree]]`` checks (the
simulator against BMv2, the behavioural reference, on one figure of the same file at the
same scale), judged from each engine's newest record. No single run can judge them: a run
has one engine."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from fairgate_exp.schema import Agree

REFERENCE, OTHER = "bmv2", "sim"


def agreement_rows(
    by: dict[tuple[str, str], dict[str, Any]],
    raw: list[Any],
    fmt: Callable[[Any], str],
) -> list[str]:
    """The table of the file's ``[[agree]]`` checks (``raw``: the TOML's list) over the
    newest records ``by`` (engine, scale) -> summary; [] when the file has none."""
    if not raw:
        return []
    try:
        checks = [Agree.model_validate(a) for a in raw]
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"])
        return [
            f"Engines agree: not judged, the file's [[agree]] is invalid ({where}: "
            f"{first['msg']}; `python -m fairgate_exp check` says more).",
            "",
        ]
    scales = sorted({sc for e, sc in by if e == REFERENCE} & {sc for e, sc in by if e == OTHER})
    if not scales:
        return [
            "Engines agree: judged once both engines have a record at one scale "
            "(`make sim` and `make lab` of this file).",
            "",
        ]
    out = [
        f"| engines agree ({REFERENCE} the reference) | scale | {REFERENCE} | {OTHER} | "
        f"{OTHER} / {REFERENCE} | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for a in checks:
        groups = [[v] for v in a.variants] if a.variants else [list(a.best_of or [])]
        for names in groups:
            what = names[0] if a.variants else "best of " + ", ".join(names)
            label = f"{a.metric} ({what}) within {a.within:.0%}"
            for scale in scales:
                ref = best(by[(REFERENCE, scale)], a.tcp, names)
                other = best(by[(OTHER, scale)], a.tcp, names)
                out.append(f"| {label} | {scale} | " + _row(ref, other, a, fmt) + " |")
    return [*out, ""]


def best(summary: dict[str, Any], tcp: str | None, names: list[str]) -> tuple[float, str] | None:
    """The largest completion rate among the variants ``names`` of one record (its TCP
    generator ``tcp``, or its only one) and the variant that has it; None when the record
    has none of them."""
    found: list[tuple[float, str]] = []
    for name in names:
        gens = summary.get("results", {}).get(name, {}).get("tcp", {})
        gen = gens.get(tcp) if tcp is not None else next(iter(gens.values()), None)
        rate = (gen or {}).get("completion_rate_per_s")
        if rate is not None:
            found.append((float(rate), name))
    return max(found, default=None)


def agrees(ref: float, other: float, within: float) -> bool:
    """|other - ref| <= within x ref: ``ref`` (BMv2's value) is the reference."""
    return abs(other - ref) <= within * ref


def _row(
    ref: tuple[float, str] | None,
    other: tuple[float, str] | None,
    a: Agree,
    fmt: Callable[[Any], str],
) -> str:
    def cell(x: tuple[float, str] | None) -> str:
        if x is None:
            return "-"
        return fmt(x[0]) if a.variants else f"{fmt(x[0])} ({x[1]})"

    if ref is None or other is None or ref[0] <= 0:
        return f"{cell(ref)} | {cell(other)} | - | -"
    verdict = "pass" if agrees(ref[0], other[0], a.within) else "**FAIL**"
    return f"{cell(ref)} | {cell(other)} | {fmt(other[0] / ref[0])} | {verdict}"
