"""Where the committed compiler outputs of the P4 programs live.

``make build`` compiles ``p4src/<program>.p4`` with p4c into ``build/`` and
refreshes ``p4src/compiled/``; tests and the controller read the committed
copies, so they work on a machine without p4c. tests/unit/p4 checks that the
copies match a fresh compile wherever p4c exists.
"""

from __future__ import annotations

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
