"""The named lab scenarios (``make lab EXP=<name>``)."""

from __future__ import annotations

from fairgate_topo.scenarios.base import Scenario


def registry() -> dict[str, type[Scenario]]:
    from fairgate_topo.scenarios.cm_sharing import CmSharing
    from fairgate_topo.scenarios.convergence import Convergence
    from fairgate_topo.scenarios.fct import Fct
    from fairgate_topo.scenarios.lestas_dynamics import LestasDynamics
    from fairgate_topo.scenarios.parking_lot import ParkingLot
    from fairgate_topo.scenarios.rtt_fairness import RttFairness
    from fairgate_topo.scenarios.session_control import SessionControl
    from fairgate_topo.scenarios.two_bottleneck import TwoBottleneck

    classes: list[type[Scenario]] = [TwoBottleneck, Convergence, SessionControl, RttFairness]
    classes += [LestasDynamics, ParkingLot, CmSharing, Fct]
    return {c.name: c for c in classes}
