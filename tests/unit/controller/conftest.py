"""Make the controller package and this folder's helpers (fluid, synthetic) importable."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_CONTROLLER = _HERE.parents[2] / "controller"
for _path in (_HERE, _CONTROLLER):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
