"""How the tests and the benchmark start Debian's chromium for the dashboard page:
headless, no sandbox (root in CI), nothing that reaches the network on its own."""

from __future__ import annotations

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
