"""Every experiment ``python -m fairgate_sim --exp NAME`` runs, as a ``SimLab`` builder
``(scale, smoke) -> SimLab``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fairgate_sim import ficcrd_lab, labs, labs_cm, labs_udp, sweep, tcp_labs
from fairgate_sim.network import Network
from fairgate_sim.simlab import SimLab

Builder = Callable[[str, bool], SimLab]


def _from_labs(name: str) -> Builder:
    """The scenarios of ``labs.py`` (full length only: they have no smoke variant here)."""

    def build(scale: str, smoke: bool) -> SimLab:
        sc, lr, rtt_s = labs.LABS[name](scale)

        def run(algo: str, seed: int, records: Path | None) -> tuple[dict[str, Any], Network]:
            result, r = labs.run_lab(sc, lr, algo, rtt_s, seed, records)
            return result, r.net

        return SimLab(sc, lr.end_s, labs.scale_note(scale, lr), run)

    return build


def builders() -> dict[str, Builder]:
    out: dict[str, Builder] = {name: _from_labs(name) for name in labs.LABS}
    out |= {
        "rtt-fairness": labs_udp.rtt_fairness,
        "lestas-dynamics": labs_udp.lestas_dynamics,
        "parking-lot": labs_udp.parking_lot,
        "cm-sharing": labs_cm.cm_sharing,
        "lestas-sweep": sweep.sweep_lab,
        "session-control": tcp_labs.session_control,
        "fct": tcp_labs.fct,
        "ficcrd": ficcrd_lab.ficcrd,
    }
    return out
