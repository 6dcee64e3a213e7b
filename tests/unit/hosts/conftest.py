"""Put the host packages and this folder on sys.path for the host-agent unit tests."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
for path in (ROOT / "hosts", ROOT / "p4src", HERE):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
