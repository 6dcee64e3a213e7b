"""Where the committed compiler outputs of the P4 programs live.

``make build`` compiles ``p4src/<program>.p4`` with p4c into ``build/`` and
refreshes ``p4src/compiled/``; tests and the controller read the committed
copies, so they work on a machine without p4c. tests/unit/p4 checks that the
copies match a fresh compile wherever p4c exists.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

P4SRC = Path(__file__).resolve().parent.parent
COMPILED = P4SRC / "compiled"
PROGRAMS = ("forward", "fairgate")


def p4info_path(program: str = "fairgate") -> Path:
    _check(program)
    return COMPILED / f"{program}.p4info.txtpb"


def bmv2_json_path(program: str = "fairgate") -> Path:
    _check(program)
    return COMPILED / f"{program}.json"


def _check(program: str) -> None:
    if program not in PROGRAMS:
        raise ValueError(f"unknown P4 program {program!r}; known: {', '.join(PROGRAMS)}")


_COMPILER_META = re.compile(r',\s*"compiler"\s*:\s*"[^"]*"')


def normalize_bmv2_json(text: str) -> str:
    """p4c's BMv2 JSON without its informational ``__meta__.compiler`` URL, which
    BMv2 never reads; the committed copies are stored normalised."""
    return _COMPILER_META.sub("", text, count=1)


def main(argv: list[str]) -> int:
    """``python -m fairgate_p4.artifacts FILE...``: normalise BMv2 JSON files in place."""
    for name in argv:
        path = Path(name)
        path.write_text(normalize_bmv2_json(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
