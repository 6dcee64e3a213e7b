"""The old scenario runner, kept only for FICCRD (``make lab EXP=ficcrd``) until it is an
experiment file; every other experiment runs from its file (``python -m fairgate_exp``).
``python -m fairgate_topo.lab --exp ficcrd [--algo A] [--smoke]``.

For each algorithm: builds the scenario's network (BMv2 switches in Mininet),
runs it (controller and host agents as tracked processes), tears it all down;
then writes ``results/<name>/<run-id>/summary.json`` and PNG plots next to the
raw logs (``<algo>/``). Ctrl-C or SIGTERM stops every process it started (by
PID) and the network (``net.stop()``), and still writes what was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from fairgate_topo.scenarios import registry
from fairgate_topo.scenarios.base import Scenario
from fairgate_topo.scenarios.common import RTT_EMULATION, LabContext


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def parser(names: list[str]) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fairgate_topo.lab", description=__doc__)
    p.add_argument("--exp", required=True, choices=names, help="scenario")
    p.add_argument(
        "--algo",
        default="all",
        help="rate algorithm(s), comma-separated, or 'all' (the scenario's list)",
    )
    p.add_argument("--smoke", action="store_true", help="the seconds-long variant")
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder")
    p.add_argument("--run-id", default=None, help="default: date-time")
    return p


def check_environment() -> str | None:
    if os.geteuid() != 0:
        return "labs need root (Mininet, namespaces): run with sudo"
    switch = os.environ.get("SWITCH", "simple_switch_grpc")
    if shutil.which(switch) is None:
        return f"{switch} not found: install p4lang's BMv2 (README: The P4 toolchain)"
    if shutil.which(os.environ.get("SWITCH_CLI", "simple_switch_CLI")) is None:
        return "simple_switch_CLI not found: install p4lang's BMv2 (README)"
    try:
        import mininet.net  # noqa: F401
    except ImportError:
        return "Mininet not importable: make deps"
    return None


def run_one(scenario: Scenario, algo: str, smoke: bool, run_dir: Path) -> dict[str, Any]:
    from fairgate_topo.labnet import LabNet
    from fairgate_topo.procs import ProcessGroup

    run_dir.mkdir(parents=True, exist_ok=True)
    procs = ProcessGroup(run_dir / "logs")
    net = LabNet(scenario.topology(smoke), run_dir, host_sysctls=scenario.host_sysctls())
    print(f"[{scenario.name}/{algo}] building the network ({run_dir})", flush=True)
    try:
        with net:
            ctx = LabContext(
                scenario.name,
                algo,
                run_dir,
                net,
                procs,
                say=lambda m: print(m, flush=True),
                smoke=smoke,
            )
            try:
                result = scenario.run(ctx)
            finally:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # teardown is not interruptible
                procs.stop_all()
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    (run_dir / "result.json").write_text(json.dumps(result) + "\n")
    return result


def main(argv: list[str] | None = None) -> int:
    scenarios = registry()
    args = parser(sorted(scenarios)).parse_args(argv)
    scenario = scenarios[args.exp]()
    default = scenario.smoke_algos() if args.smoke else scenario.algos
    algos = list(default) if args.algo == "all" else args.algo.split(",")
    bad = [a for a in algos if a not in scenario.allowed]
    if bad:
        print(f"lab: {args.exp} runs with {', '.join(scenario.allowed)}, not {bad}")
        return 2
    problem = check_environment()
    if problem:
        print(f"lab: {problem}", file=sys.stderr)
        return 2
    run_id = args.run_id or time.strftime("%Y%m%d-%H%M%S") + ("-smoke" if args.smoke else "")
    run_dir = args.results / args.exp / run_id
    signal.signal(signal.SIGTERM, _raise_interrupt)
    runs: dict[str, dict[str, Any]] = {}
    interrupted = False
    started = time.monotonic()
    try:
        for algo in algos:
            runs[algo] = run_one(scenario, algo, args.smoke, run_dir / algo)
    except KeyboardInterrupt:
        interrupted = True
        print("lab: interrupted; everything started was stopped", file=sys.stderr)
    if not runs:
        return 130
    summary: dict[str, Any] = {
        "experiment": scenario.name,
        "paper": scenario.paper,
        "run_id": run_id,
        "smoke": args.smoke,
        "algos": list(runs),
        "interrupted": interrupted,
        "elapsed_s": round(time.monotonic() - started, 1),
        "rtt_emulation": RTT_EMULATION,
        "scaling": scenario.scaling(args.smoke),
        **scenario.summarize(runs, args.smoke),
    }
    summary["plots"] = [str(p.name) for p in scenario.plot(run_dir, runs)]
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k in runs}, indent=1))
    print(f"lab: results in {run_dir}")
    return 130 if interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
