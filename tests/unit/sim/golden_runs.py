"""Short seeded simulator runs whose every output is fingerprinted, so a change to the
simulator's speed can be checked to change no result (``test_same_seed.py``).

Each run's outputs (per-flow rate series, the controller's per-port records, every
port's and switch's counters, the number of scheduled events, TCP/FICCRD results) are
turned into canonical JSON (floats as ``repr``, so bit-exact) and hashed per part, so a
failure says which part changed. ``python tests/unit/sim/golden_runs.py --write``
records the current code's digests in ``golden/digests.json``; do that only for a
change that is *meant* to alter results, and say why in the commit.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).resolve().parent / "golden" / "digests.json"


def _canon(obj: Any) -> Any:
    """JSON-able, order-fixed form (dict keys as strings, tuples as lists, objects as dicts)."""
    if isinstance(obj, dict):
        return {str(k): _canon(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_canon(v) for v in obj]
    if isinstance(obj, float):
        return repr(obj)  # bit-exact
    if obj is None or isinstance(obj, bool | int | str):
        return obj
    if hasattr(obj, "__dataclass_fields__"):
        return {f: _canon(getattr(obj, f)) for f in obj.__dataclass_fields__}
    return repr(obj)


def digest(obj: Any) -> str:
    text = json.dumps(_canon(obj), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _net_state(net: Any) -> dict[str, Any]:
    ports = {f"{s}:{p}": out.stats for s, sw in net.switches.items() for p, out in sw.ports.items()}
    ports |= {f"{h}:up": host.uplink.stats for h, host in net.hosts.items()}
    switches = {s: {"stats": sw.stats, "snapshot": sw.snapshot()} for s, sw in net.switches.items()}
    return {
        "ports": ports,
        "switches": switches,
        "now": net.clock.now,
        "events": net.clock.events,
    }


def _core_state(core: Any) -> dict[str, Any]:
    """A sender core's scalar state (window, granted rate, counters, timers)."""
    values = {k: getattr(core, k, None) for k in dir(core) if not k.startswith("__")}
    return {k: v for k, v in values.items() if isinstance(v, int | float | str)}


def udp_dumbbell(algo: str) -> dict[str, Any]:
    """12 users over a 20 Mbit/s dumbbell, 40 ms of ack delay, staggered 50 ms, 2.5 s (an
    inline experiment through the experiment driver and the simulator engine)."""
    from fairgate_exp.inline import dumbbell, plan_of, run_sim

    doc = dumbbell(12, "20Mbit/s", 2.5, buffer="80pkt", stagger="0.05s", algorithm=algo)
    doc["experiment"]["seed"] = 7
    with tempfile.TemporaryDirectory() as tmp:
        res, engine = run_sim(plan_of(doc), algo, Path(tmp))
    return {
        "series": res["rates"],
        "records": engine.port_records(),
        "net": _net_state(engine.net),
        "senders": {n: _core_state(tx.core) for n, tx in engine.senders.items()},
    }


def parking_lot_lab() -> dict[str, Any]:
    """experiments/parking-lot.toml (lab scale, lestas) cut to its first 3 s."""
    import tomllib

    from fairgate_exp.inline import plan_of, run_sim
    from fairgate_exp.load import resolve_path

    doc = tomllib.loads(resolve_path("parking-lot").read_text())
    doc["experiment"] |= {"duration": "3s", "warmup": "1s"}
    doc.pop("expect", None)
    doc.pop("phases", None)
    with tempfile.TemporaryDirectory() as tmp:
        res, engine = run_sim(plan_of(doc, "parking-lot"), "lestas", Path(tmp))
    return {"result": {"rates": res["rates"], "rows": res["rows"]}, "net": _net_state(engine.net)}


def ficcrd_tcp(algo: str, tmp: Path) -> dict[str, Any]:
    """Ten Reno uploads, droptail or FICCRD: experiments/ficcrd.toml at lab scale, 2 s."""
    from dataclasses import replace

    from fairgate_exp.engines.sim import SimEngine
    from fairgate_exp.load import load

    plan = replace(load("ficcrd", "lab"), duration_s=2.0, warmup_s=0.5)
    engine = SimEngine()
    engine.build(plan, algo, tmp)
    for gen in plan.tcp:
        if gen.start_s > engine.now():
            engine.advance(gen.start_s)
        engine.start_tcp(gen)
    engine.advance(plan.duration_s)
    assert engine.net is not None
    return {
        "samples": engine.flow_samples(),
        "retransmits": engine.tcp_retransmits(),
        "records": engine.port_records(),
        "net": _net_state(engine.net),
    }


def _in_tmp(run: Callable[[Path], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    def go() -> dict[str, Any]:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            return run(Path(tmp))

    return go


RUNS: dict[str, Callable[[], dict[str, Any]]] = {
    "udp-qfcp": lambda: udp_dumbbell("qfcp"),
    "udp-lestas": lambda: udp_dumbbell("lestas"),
    "udp-rcp": lambda: udp_dumbbell("rcp"),
    "udp-parking-lot": parking_lot_lab,
    "tcp-droptail": _in_tmp(lambda tmp: ficcrd_tcp("none", tmp)),
    "tcp-ficcrd": _in_tmp(lambda tmp: ficcrd_tcp("ficcrd", tmp)),
}


def digests(name: str) -> dict[str, str]:
    out = RUNS[name]()
    return {part: digest(value) for part, value in sorted(out.items())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--write", action="store_true", help=f"record the digests in {GOLDEN}")
    args = p.parse_args(argv)
    got = {name: digests(name) for name in RUNS}
    print(json.dumps(got, indent=2))
    if args.write:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
