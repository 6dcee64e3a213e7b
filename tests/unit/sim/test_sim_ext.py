"""The compiled simulator (scripts/sim_ext.py: mypyc on the packet path, the header codec
and the host cores, from their unchanged sources) gives the same results as pure Python
on the same seed: the same-seed digests of ``test_same_seed.py``, computed in a child
process that imports the compiled build first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "scripts"))
import sim_ext  # noqa: E402

CHECK = """
import json, sys
sys.path.insert(0, {here!r})
import fairgate_hosts.sender, fairgate_sim.port
import golden_runs as g
assert fairgate_hosts.sender.__file__.endswith(".so"), fairgate_hosts.sender.__file__
assert fairgate_sim.port.__file__.endswith(".so"), fairgate_sim.port.__file__
import fairgate_sim.engine
assert fairgate_sim.engine.NATIVE  # the compiled heap (engine.push, engine.pop)
print(json.dumps({{n: g.digests(n) for n in g.RUNS}}))
"""


def test_compiled_build_same_results(tmp_path: Path) -> None:
    why = sim_ext.missing_compiler()
    if why:
        pytest.skip(f"compiled simulator: {why}")
    out = sim_ext.OUT if sim_ext.stale() is None else sim_ext.build(tmp_path / "sim-ext")
    here = str(Path(__file__).parent)
    got = subprocess.run(
        [sys.executable, "-c", CHECK.format(here=here)],
        env=sim_ext.environ(out),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    want = json.loads((Path(here) / "golden" / "digests.json").read_text())
    assert json.loads(got.strip().splitlines()[-1]) == want


def test_stale_build_is_refused(tmp_path: Path) -> None:
    assert sim_ext.stale(tmp_path) is not None  # nothing built there
    (tmp_path / "manifest.json").write_text(json.dumps({"sim/fairgate_sim/port.py": "0"}))
    assert "older than its sources" in (sim_ext.stale(tmp_path) or "")
