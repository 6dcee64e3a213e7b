"""Put the host packages on sys.path for the namespace tests."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
for path in (ROOT / "hosts", ROOT / "p4src"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
