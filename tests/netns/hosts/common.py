"""What the namespace tests share: the environment for agent processes, the
JSONL reader and a veth lab between two namespaces of our own."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fairgate_hosts.netns import VethPair

ROOT = Path(__file__).resolve().parents[3]
ENV = dict(os.environ, PYTHONPATH=f"{ROOT / 'hosts'}:{ROOT / 'p4src'}")


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@contextmanager
def veth_lab(prefix: str) -> Iterator[VethPair]:
    """Two namespaces joined by a veth pair; both are gone afterwards."""
    pair = VethPair(prefix=f"{prefix}-{os.getpid()}")
    with pair:
        yield pair
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert pair.ns_a not in out and pair.ns_b not in out
