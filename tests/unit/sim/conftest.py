"""Put the simulator and the parts it drives on sys.path (the venv's .pth does too),
and this directory (``golden_runs``)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
for part in ("sim", "controller", "hosts", "p4src"):
    if str(ROOT / part) not in sys.path:
        sys.path.insert(0, str(ROOT / part))
# golden_runs.py (the same-seed runs) sits beside the tests
if str(Path(__file__).parent) not in sys.path:
    sys.path.append(str(Path(__file__).parent))
