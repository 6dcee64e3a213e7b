"""Pure controller algorithms: rate controllers (QFCP, RCP, Lestas), XCP and session control.

No I/O, no clock, no threads: time and measurements are inputs.
"""

from .changedetect import RelativeCusum
from .common import RateController, RateDecision, RateLimits
from .idle import HoldWhenIdle
from .lestas import LestasController
from .measure import PortMeasurement
from .qfcp import QfcpController
from .rcp import RcpController
from .session import Phase, ProbeResult, SessionController, SessionParams, StaticGate
from .xcp import XcpController, XcpDecision
from .xcp_types import XcpSample

__all__ = [
    "HoldWhenIdle",
    "LestasController",
    "Phase",
    "PortMeasurement",
    "ProbeResult",
    "QfcpController",
    "RateController",
    "RateDecision",
    "RateLimits",
    "RcpController",
    "RelativeCusum",
    "SessionController",
    "SessionParams",
    "StaticGate",
    "XcpController",
    "XcpDecision",
    "XcpSample",
]
