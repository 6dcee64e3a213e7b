"""With p4c here: both programs compile under --Werror, and the committed
P4Info/JSON in p4src/compiled/ are exactly what p4c produces now."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fairgate_p4 import artifacts

P4C = os.environ.get("P4C", "p4c-bm2-ss")
TOP = artifacts.P4SRC.parent

pytestmark = pytest.mark.skipif(
    shutil.which(P4C) is None, reason=f"{P4C} not found: install p4lang's p4c (README)"
)


@pytest.mark.parametrize("program", artifacts.PROGRAMS)
def test_compiles_cleanly_and_artifacts_do_not_drift(program: str, tmp_path: Path) -> None:
    out_json = tmp_path / f"{program}.json"
    out_info = tmp_path / f"{program}.p4info.txtpb"
    proc = subprocess.run(
        [
            P4C,
            "--arch",
            "v1model",
            "--Werror",
            "-I",
            "p4src",
            "-o",
            str(out_json),
            "--p4runtime-files",
            str(out_info),
            f"p4src/{program}.p4",
        ],
        cwd=TOP,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == "", f"p4c printed warnings:\n{proc.stderr}"
    assert out_info.read_text() == artifacts.p4info_path(program).read_text(), (
        f"p4src/compiled/{program}.p4info.txtpb is stale: run `make build`"
    )
    fresh = artifacts.normalize_bmv2_json(out_json.read_text())
    assert fresh == artifacts.bmv2_json_path(program).read_text(), (
        f"p4src/compiled/{program}.json is stale: run `make build`"
    )
