"""Run FairGate's test suites, skip the ones whose tools are missing, summarise.

Each suite names what it needs; a missing need skips the whole suite with a
one-line reason that says how to get it. In strict mode (`--strict`,
FAIRGATE_STRICT=1, `make test STRICT=1`; CI uses it) a missing need FAILS the
suite instead, naming what was missing, and so does any single test that would
be skipped (tests/conftest.py). The run ends with one table (suite, tests run,
passed, failed, skipped and why, wall time) and the plain line
`N passed, N failed, N skipped` (a skipped suite counts as one skipped test).
Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

TOP = Path(__file__).resolve().parent.parent
TOOLCHAIN_HINT = "install p4lang's p4c/BMv2 (README: P4 toolchain)"
STRICT_ENV = "FAIRGATE_STRICT"


@dataclass
class Outcome:
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    note: str = ""


@dataclass(frozen=True)
class Suite:
    name: str
    what: str
    needs: tuple[Callable[[], str | None], ...]
    run: Callable[[Suite], Outcome]
    paths: tuple[str, ...] = field(default=())


def need_root() -> str | None:
    if os.geteuid() != 0:
        return "needs root for network namespaces and veths (run `sudo make test`)"
    if not shutil.which("ip"):
        return "needs iproute2 (`make deps`)"
    return None


def need_tool(env: str, default: str, hint: str) -> Callable[[], str | None]:
    def check() -> str | None:
        tool = os.environ.get(env, default)
        return None if shutil.which(tool) else f"{tool} not found: {hint}"

    return check


def need_mininet() -> str | None:
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet not importable: `make deps` installs Debian's mininet"
    return None


need_switch = need_tool("SWITCH", "simple_switch_grpc", TOOLCHAIN_HINT)
need_p4c = need_tool("P4C", "p4c-bm2-ss", TOOLCHAIN_HINT)
need_cli = need_tool("SWITCH_CLI", "simple_switch_CLI", TOOLCHAIN_HINT)


def run_pytest(suite: Suite) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", f"--junitxml={report}", *suite.paths]
        code = subprocess.call(cmd, cwd=TOP)
        if not report.exists():
            return Outcome(failed=1, note=f"pytest exited {code} without a report")
        root = ET.parse(report).getroot()
        totals = Outcome()
        # JUnit reports expected failures (xfail) as <skipped type="pytest.xfail">: they
        # ran and failed as expected, so they are neither passes nor skips here.
        skips = [sk for sk in root.iter("skipped") if sk.get("type") != "pytest.xfail"]
        xfailed = sum(1 for sk in root.iter("skipped") if sk.get("type") == "pytest.xfail")
        reasons = sorted({sk.get("message", "").removeprefix("Skipped: ") for sk in skips})
        notes = [r for r in reasons if r]
        if xfailed:
            notes.insert(0, f"{xfailed} expected failure(s) (xfail, known bugs)")
        totals.note = "; ".join(notes)[:160]
        for ts in root.iter("testsuite"):
            tests = int(ts.get("tests", 0))
            bad = int(ts.get("failures", 0)) + int(ts.get("errors", 0))
            totals.passed += tests - bad - int(ts.get("skipped", 0))
            totals.failed += bad
        totals.skipped = len(skips)
        if code not in (0, 5) and totals.failed == 0:
            totals.failed = 1
            totals.note = f"pytest exited {code}"
        return totals


def run_ptf(_suite: Suite) -> Outcome:
    proc = subprocess.run(
        [str(TOP / "ptf-tests" / "run-ptf")],
        cwd=TOP,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    sys.stdout.write(proc.stdout)
    ran = re.search(r"^Ran (\d+) tests?", proc.stdout, re.M)
    if not ran:
        return Outcome(failed=1, note=f"run-ptf exited {proc.returncode} before running tests")
    total = int(ran.group(1))
    failures = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", proc.stdout))
    skipped = sum(int(n) for n in re.findall(r"skipped=(\d+)", proc.stdout))
    if proc.returncode != 0 and failures == 0:
        failures = 1
    outcome = Outcome(passed=total - failures - skipped, failed=failures, skipped=skipped)
    if skipped and strict_mode():
        outcome.failed += skipped
        outcome.skipped = 0
        outcome.note = f"strict mode: {skipped} PTF test(s) skipped themselves"
    elif skipped:
        outcome.note = f"{skipped} PTF test(s) skipped themselves (see output above)"
    return outcome


SUITES = (
    Suite(
        "unit",
        "pure Python: codecs, generated code, algorithms, hosts",
        (),
        run_pytest,
        ("tests/unit",),
    ),
    Suite(
        "compile",
        "p4c --Werror and drift of the committed P4Info/JSON",
        (need_p4c,),
        run_pytest,
        ("tests/compile",),
    ),
    Suite(
        "ptf", "PTF packet tests on simple_switch_grpc", (need_root, need_switch, need_cli), run_ptf
    ),
    Suite(
        "netns",
        "host agents over veths in network namespaces",
        (need_root,),
        run_pytest,
        ("tests/netns",),
    ),
    Suite(
        "bmv2",
        "controller against simple_switch_grpc",
        (need_root, need_switch, need_cli),
        run_pytest,
        ("tests/bmv2",),
    ),
    Suite(
        "mininet",
        "Mininet end to end with BMv2 switches",
        (need_root, need_switch, need_cli, need_mininet),
        run_pytest,
        ("tests/mininet",),
    ),
)


def strict_mode() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0", "false", "no")


@dataclass
class Row:
    suite: str
    status: str
    outcome: Outcome
    seconds: float = 0.0

    @property
    def ran(self) -> int:
        return self.outcome.passed + self.outcome.failed


def print_summary(rows: list[Row]) -> Outcome:
    total = Outcome()
    print("\n=== FairGate test summary" + (" (strict mode)" if strict_mode() else ""))
    head = f"{'suite':<9} {'status':<8} {'ran':>5} {'passed':>6} {'failed':>6} {'skipped':>7}"
    print(f"{head} {'wall':>7}  note / why skipped")
    for r in rows:
        o = r.outcome
        print(
            f"{r.suite:<9} {r.status:<8} {r.ran:>5} {o.passed:>6} {o.failed:>6} {o.skipped:>7}"
            f" {r.seconds:>6.0f}s  {o.note}"
        )
        total.passed += o.passed
        total.failed += o.failed
        total.skipped += o.skipped
    wall = sum(r.seconds for r in rows)
    print(f"{'total':<9} {'':<8} {total.passed + total.failed:>5} {total.passed:>6}"
          f" {total.failed:>6} {total.skipped:>7} {wall:>6.0f}s")  # fmt: skip
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--suite",
        action="append",
        choices=[s.name for s in SUITES],
        help="run only this suite (repeatable)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"fail (not skip) anything whose tool, root or kernel feature is missing "
        f"(also {STRICT_ENV}=1)",
    )
    args = parser.parse_args(argv)
    if args.strict:
        os.environ[STRICT_ENV] = "1"  # seen by tests/conftest.py in every pytest child
    chosen = [s for s in SUITES if not args.suite or s.name in args.suite]
    rows: list[Row] = []
    for suite in chosen:
        if suite.paths and not any((TOP / p).exists() for p in suite.paths):
            rows.append(Row(suite.name, "empty", Outcome(note="no tests yet")))
            continue
        reasons = [r for r in (need() for need in suite.needs) if r]
        if reasons and strict_mode():
            print(f"\n=== {suite.name}: FAILED (strict mode): missing: {'; '.join(reasons)}")
            note = f"strict mode: missing: {'; '.join(reasons)}"
            rows.append(Row(suite.name, "FAILED", Outcome(failed=1, note=note)))
            continue
        if reasons:
            print(f"\n=== {suite.name}: SKIPPED: {reasons[0]}")
            rows.append(Row(suite.name, "skipped", Outcome(skipped=1, note=reasons[0])))
            continue
        print(f"\n=== {suite.name}: {suite.what}", flush=True)
        start = time.monotonic()
        outcome = suite.run(suite)
        status = "FAILED" if outcome.failed else "ran"
        rows.append(Row(suite.name, status, outcome, time.monotonic() - start))

    total = print_summary(rows)
    print(f"{total.passed} passed, {total.failed} failed, {total.skipped} skipped")
    return 1 if total.failed else 0


if __name__ == "__main__":
    sys.exit(main())
