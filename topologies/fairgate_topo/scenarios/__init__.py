"""The last lab scenario class (``make lab EXP=ficcrd``, run by ``fairgate_topo.lab``):
FICCRD, until it is an experiment file; every other experiment is a file in
``experiments/`` run by ``python -m fairgate_exp`` (docs/experiments.md)."""

from __future__ import annotations

from fairgate_topo.scenarios.base import Scenario


def registry() -> dict[str, type[Scenario]]:
    from fairgate_topo.scenarios.ficcrd import Ficcrd

    return {Ficcrd.name: Ficcrd}
