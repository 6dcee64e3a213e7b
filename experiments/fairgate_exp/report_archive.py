"""The committed archive of the records docs/results.md cites (docs/records/).

``make report`` refreshes it with exactly the record files the document it wrote was made
from, under the records' own names (``<experiment>/<run-id>/``, ``<experiment>/sweep-*/``):
a cited run's ``summary.json`` and ``experiment.json`` (its variants), a sweep's
``sweep.json`` and each point's ``summary.json``; raw logs, CSVs and plots stay in the
results folder. Files of records no longer cited are removed; a folder holding anything
else (a full run record) is never touched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

FILES = {
    "run": ("summary.json", "experiment.json"),
    "point": ("summary.json",),
    "sweep": ("sweep.json",),
}
ARCHIVED = frozenset(f for names in FILES.values() for f in names)


@dataclass
class Refreshed:
    """Files written (new or changed) and removed, as ``<experiment>/<folder>/<file>``."""

    written: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)


def _only_archived(d: Path) -> bool:
    return all(p.is_file() and p.name in ARCHIVED for p in d.iterdir())


def refresh(archive: Path, used: Sequence[tuple[str, Path]]) -> Refreshed:
    """Copies each used record's files into ``archive`` and removes the archived files of
    every record not used."""
    want: dict[tuple[str, str], set[str]] = {}
    source: dict[tuple[str, str], Path] = {}
    for kind, d in used:
        key = (d.parent.name, d.name)
        want.setdefault(key, set()).update(FILES[kind])
        source[key] = d
    out = Refreshed()
    for (exp, name), files in sorted(want.items()):
        dest = archive / exp / name
        for f in sorted(files):
            src = source[(exp, name)] / f
            if not src.is_file():
                continue
            data = src.read_bytes()
            if (dest / f).is_file() and (dest / f).read_bytes() == data:
                continue
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f).write_bytes(data)
            out.written.append(f"{exp}/{name}/{f}")
        for f in sorted(ARCHIVED - files):
            if (dest / f).is_file() and _only_archived(dest):
                (dest / f).unlink()
                out.removed.append(f"{exp}/{name}/{f}")
    for d in sorted(archive.glob("*/*")):
        if not d.is_dir() or d.is_symlink() or (d.parent.name, d.name) in want:
            continue
        if not _only_archived(d):
            continue
        for old in sorted(d.iterdir()):
            old.unlink()
            out.removed.append(f"{d.parent.name}/{d.name}/{old.name}")
        d.rmdir()
    for d in sorted(archive.glob("*")):
        if d.is_dir() and not d.is_symlink() and not any(d.iterdir()):
            d.rmdir()
    return out
