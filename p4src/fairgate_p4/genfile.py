"""The command line of a generator that writes one P4 include from Python (the TNA
tables of ``tna_math`` and ``tna_xcp``): write it, or with ``--check`` exit 1 when the
committed file differs from what would be written."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def write_or_check(argv: list[str] | None, out: Path, text: str, module: str) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=f"write {out}")
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is stale")
    args = parser.parse_args(argv)
    if args.check:
        if not out.exists() or out.read_text() != text:
            print(f"{out} is stale: run `python -m {module}`", file=sys.stderr)
            return 1
        return 0
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0
