"""Put the experiment runner and the parts it drives on sys.path (the venv's .pth does too)."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
for part in ("experiments", "sim", "controller", "hosts", "p4src"):
    if str(ROOT / part) not in sys.path:
        sys.path.insert(0, str(ROOT / part))
