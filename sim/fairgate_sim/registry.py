"""The experiments ``python -m fairgate_sim --exp NAME`` still runs as code, as ``SimLab``
builders ``(scale, smoke) -> SimLab``: only FICCRD (not an experiment file yet). Every
other experiment is a file: ``make sim EXP=<name>`` runs ``experiments/<name>.toml``
(``python -m fairgate_exp run``)."""

from __future__ import annotations

from collections.abc import Callable

from fairgate_sim import ficcrd_lab
from fairgate_sim.simlab import SimLab

Builder = Callable[[str, bool], SimLab]


def builders() -> dict[str, Builder]:
    return {"ficcrd": ficcrd_lab.ficcrd}
