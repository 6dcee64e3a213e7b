"""Strict mode for every pytest suite: with FAIRGATE_STRICT=1 (CI, `make test STRICT=1`)
a test that would be skipped for a missing tool, root or kernel feature FAILS instead,
naming what was missing. Expected failures (xfail) are left as they are."""

from __future__ import annotations

import os
from collections.abc import Generator

import pytest

STRICT_ENV = "FAIRGATE_STRICT"


def strict() -> bool:
    return os.environ.get(STRICT_ENV, "") not in ("", "0", "false", "no")


def _skip_reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if strict() and report.skipped and not hasattr(report, "wasxfail"):
        reason = _skip_reason(report)
        report.outcome = "failed"
        report.longrepr = f"strict mode ({STRICT_ENV}=1): would have been skipped: {reason}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if strict() and report.skipped:
        reason = _skip_reason(report)
        report.outcome = "failed"
        report.longrepr = f"strict mode ({STRICT_ENV}=1): module skipped: {reason}"
