"""The experiments ``python -m fairgate_sim --exp NAME`` still runs as code, as ``SimLab``
builders ``(scale, smoke) -> SimLab``: the Lestas sweep (the full paper-scale grid;
``experiments/lestas-{capacity,delay,users}.toml`` are its files). Every other experiment
is a file: ``make sim EXP=<name>`` runs ``experiments/<name>.toml``
(``python -m fairgate_exp run``)."""

from __future__ import annotations

from collections.abc import Callable

from fairgate_sim import sweep
from fairgate_sim.simlab import SimLab

Builder = Callable[[str, bool], SimLab]


def builders() -> dict[str, Builder]:
    return {"lestas-sweep": sweep.sweep_lab}
