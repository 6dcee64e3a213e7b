"""Shared skips for the Mininet suite: root, Mininet and BMv2."""

from __future__ import annotations

import os
import shutil

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = None
    if os.geteuid() != 0:
        reason = "needs root (sudo make test)"
    elif shutil.which(os.environ.get("SWITCH", "simple_switch_grpc")) is None:
        reason = "simple_switch_grpc not found: install p4lang's BMv2 (README)"
    elif shutil.which("nft") is None:
        reason = "nft not found: make deps (installs nftables, which isolates switch ports)"
    else:
        try:
            import mininet.net  # noqa: F401
        except ImportError:
            reason = "Mininet not importable: make deps"
    if reason:
        for item in items:
            item.add_marker(pytest.mark.skip(reason=reason))
