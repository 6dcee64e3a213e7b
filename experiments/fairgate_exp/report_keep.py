"""``make report`` never drops silently what the previous docs/results.md showed.

A section of the previous document whose records are not on this machine (neither in the
local results folder nor in the committed archive, docs/records/) and whose new version
would lose something it showed (a column ``<engine> <scale> <algo>``, its sweep, or every
record) is kept verbatim, with one note line after its heading naming the absent records.
Sections are delimited by their ``## ... (`<experiment>`)`` headings; nothing is merged
inside a section. ``drop`` names experiments whose new version is wanted anyway.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fairgate_exp.report import Section

NOTE = "> Kept from the previous report:"
HEADING = re.compile(r"^## .*\(`([^`]+)`\)$")
RECORD = re.compile(r"`results/([^`/]+)/([^`/]+)` \([^,()]+, scale \S+ x")
SWEEP = re.compile(r"^Sweep record `results/([^`/]+)/(sweep-[^`/]+)`")
EXPECT = "| expectation | "


@dataclass
class Cited:
    """What one previous section showed: its records, its columns, whether a sweep."""

    records: list[tuple[str, str]] = field(default_factory=list)  # (experiment, folder)
    columns: list[str] = field(default_factory=list)
    sweep: bool = False


@dataclass
class Kept:
    """A previous section kept verbatim: its records that are absent, and the records on
    this machine its new version would have shown instead (not shown)."""

    name: str
    absent: list[str]
    unshown: list[str]
    present: list[tuple[str, str]]


def previous_sections(text: str, begin: str, end: str) -> dict[str, list[str]]:
    """experiment -> the previous document's section lines (heading to the line before
    the next heading or the end marker)."""
    lines = text.splitlines()
    if begin not in lines or end not in lines:
        return {}
    start = lines.index(begin) + 1
    out: dict[str, list[str]] = {}
    name: str | None = None
    for line in lines[start : lines.index(end, start)]:
        m = HEADING.match(line)
        if m:
            name = m.group(1)
            out[name] = []
        if name is not None:
            out[name].append(line)
    return out


def cited(lines: Iterable[str]) -> Cited:
    """The records named on a section's ``Records:`` or ``Sweep record`` line and the
    columns of its expectation table."""
    out = Cited()
    for line in lines:
        if line.startswith("Records: "):
            out.records += [(e, r) for e, r in RECORD.findall(line)]
        m = SWEEP.match(line)
        if m:
            out.records.append((m.group(1), m.group(2)))
            out.sweep = True
        if line.startswith(EXPECT) and not out.columns:
            out.columns = [c.strip() for c in line.strip().strip("|").split("|")[1:]]
    return out


def loses(new: Section, old: Cited) -> bool:
    """Whether the new section shows less than the previous one: its sweep, one of its
    columns, or (no expectation table to compare) every record."""
    if old.sweep:
        return not new.sweep and not new.columns
    if new.sweep:
        return False
    if old.columns:
        return bool(set(old.columns) - set(new.columns))
    return bool(old.records) and not new.columns


def note(kept: Kept) -> str:
    """The one line a kept section carries after its heading."""
    names = ", ".join(f"`{a}`" for a in kept.absent)
    why = (
        f"records {names} are not on this machine"
        if kept.absent
        else f"`experiments/{kept.name}.toml` could not be read"
    )
    return f"{NOTE} {why} (docs/experiments.md, The report)."


def kept_lines(old: list[str], kept: Kept) -> list[str]:
    """The previous section verbatim, its old note (if it was kept before) replaced."""
    body: list[str] = []
    skip = False
    for line in old[1:]:
        if line.startswith(NOTE):
            skip = True
            continue
        if skip and line == "":
            skip = False
            continue
        skip = False
        body.append(line)
    return [old[0], "", note(kept), "", *(body[1:] if body[:1] == [""] else body)]


@dataclass
class Merged:
    """The sections to write, the previous ones kept, the previous ones removed."""

    sections: list[Section]
    kept: list[Kept]
    removed: list[str]


def merge(
    new: Sequence[Section],
    previous: dict[str, list[str]],
    dirs: Collection[tuple[str, str]],
    files: Collection[str],
    drop: Collection[str] = (),
) -> Merged:
    """Each new section, or the previous one kept when its records are absent and the new
    one would lose something; a previous section with no new one is kept when its
    experiment file still exists (unreadable: the report cannot tell what it loses) and
    removed (named in ``removed``) when the file is gone."""
    from fairgate_exp.report import Section

    out: list[Section] = []
    kept: list[Kept] = []
    removed: list[str] = []
    by_name = {s.name: s for s in new}
    for name in sorted(set(by_name) | set(previous)):
        sec, old = by_name.get(name), previous.get(name)
        if old is None or name in drop:
            if sec is not None:
                out.append(sec)
            continue
        c = cited(old)
        absent = [f"results/{e}/{r}" for e, r in c.records if (e, r) not in dirs]
        if sec is None and name not in files:
            removed.append(name)
            continue
        if sec is not None and (not absent or not loses(sec, c)):
            out.append(sec)
            continue
        shown = set(c.records)
        unshown = [
            f"results/{d.parent.name}/{d.name}"
            for kind, d in (sec.used if sec is not None else [])
            if kind != "point" and (d.parent.name, d.name) not in shown
        ]
        present = [(e, r) for e, r in c.records if (e, r) in dirs]
        k = Kept(name, absent, unshown, present)
        kept.append(k)
        out.append(Section(name, kept_lines(old, k)))
    return Merged(out, kept, removed)


def experiment_names(experiments: Path | None) -> set[str]:
    """The experiment files that exist (readable or not)."""
    return {p.stem for p in experiments.glob("*.toml")} if experiments is not None else set()
