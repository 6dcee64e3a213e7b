"""The test runner's strict mode (CI) fails what a user's machine would skip, naming
what is missing; without it the same run passes with skips and the summary table."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

TOP = Path(__file__).resolve().parents[3]
RUNNER = TOP / "scripts" / "run_tests.py"


def bare_env(strict: bool) -> dict[str, str]:
    """PATH without /usr/local (where the toolchain installs), so simple_switch_grpc is gone."""
    env = {k: v for k, v in os.environ.items() if k != "FAIRGATE_STRICT"}
    env["PATH"] = "/usr/sbin:/usr/bin:/sbin:/bin"
    env["SWITCH"] = "simple_switch_grpc"
    if strict:
        env["FAIRGATE_STRICT"] = "1"
    return env


def run_runner(strict: bool) -> subprocess.CompletedProcess[str]:
    assert shutil.which("simple_switch_grpc", path=bare_env(False)["PATH"]) is None
    return subprocess.run(
        [sys.executable, str(RUNNER), "--suite", "bmv2"],
        cwd=TOP,
        env=bare_env(strict),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_strict_run_fails_naming_the_missing_switch() -> None:
    proc = run_runner(strict=True)
    assert proc.returncode == 1, proc.stdout
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "0 passed, 1 failed, 0 skipped"
    row = next(line for line in lines if line.startswith("bmv2 "))
    assert "FAILED" in row
    assert "simple_switch_grpc" in row or os.geteuid() != 0


def test_plain_run_skips_with_reason_and_table() -> None:
    proc = run_runner(strict=False)
    assert proc.returncode == 0, proc.stdout
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == "0 passed, 0 failed, 1 skipped"
    assert any(line.startswith("suite ") and "wall" in line for line in lines)
    row = next(line for line in lines if line.startswith("bmv2 "))
    assert "skipped" in row
    assert "simple_switch_grpc not found" in row or "needs root" in row


SAMPLE = """
import pytest

def test_needs_tool():
    pytest.skip("frobnicator not found: apt-get install frob")

@pytest.mark.xfail(reason="known bug", strict=True)
def test_known_bug():
    assert False

def test_fine():
    assert True
"""


def run_sample(tmp_path: Path, strict: bool) -> subprocess.CompletedProcess[str]:
    shutil.copy(TOP / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = bare_env(strict)
    env["PATH"] = os.environ["PATH"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pytest_skip_becomes_failure_in_strict_mode(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, strict=True)
    assert proc.returncode == 1
    assert "1 failed, 1 passed, 1 xfailed" in proc.stdout
    assert "would have been skipped: frobnicator not found" in proc.stdout


def test_pytest_skip_stays_a_skip_without_strict_mode(tmp_path: Path) -> None:
    proc = run_sample(tmp_path, strict=False)
    assert proc.returncode == 0
    assert "1 passed, 1 skipped, 1 xfailed" in proc.stdout
