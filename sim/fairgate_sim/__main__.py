"""``python -m fairgate_sim --exp NAME [--scale lab|paper] [--algo A,B] --out DIR``.

Runs a lab scenario in the simulator and writes ``summary.json`` (the BMv2 lab's
keys) and PNG plots into ``DIR``; per algorithm the controller's records go to
``DIR/<algo>/controller.jsonl``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from fairgate_sim import registry


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fairgate_sim", description=__doc__)
    p.add_argument("--exp", required=True, choices=sorted(registry.builders()), help="scenario")
    p.add_argument("--scale", choices=("lab", "paper"), default="lab")
    p.add_argument("--algo", default="all", help="comma-separated, or 'all' (the lab's list)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--smoke", action="store_true", help="the lab's seconds-long variant")
    p.add_argument("--out", type=Path, default=None, help="default results/sim/<exp>-<scale>")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    lab = registry.builders()[args.exp](args.scale, args.smoke)
    sc = lab.sc
    algos = list(sc.algos) if args.algo == "all" else args.algo.split(",")
    bad = [a for a in algos if a not in sc.allowed]
    if bad:
        print(f"sim: {args.exp} runs with {', '.join(sc.allowed)}, not {bad}", file=sys.stderr)
        return 2
    out = args.out or Path("results") / "sim" / f"{args.exp}-{args.scale}"
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, dict[str, Any]] = {}
    perf: dict[str, Any] = {}
    started = time.monotonic()
    for algo in algos:
        t0 = time.perf_counter()
        (out / algo).mkdir(exist_ok=True)
        records = out / algo / "controller.jsonl"
        records.unlink(missing_ok=True)
        result, net = lab.run(algo, args.seed, records)
        wall = time.perf_counter() - t0
        runs[algo] = result
        perf[algo] = {
            "wall_s": round(wall, 2),
            "simulated_s": round(net.clock.now, 3),  # runs of one lab may differ
            "events": net.clock.events,
            "realtime_factor": round(net.clock.now / wall, 2),
        }
        (out / algo / "result.json").write_text(json.dumps(result) + "\n")
        print(f"[{args.exp}/{algo}] {net.clock.now:.0f} simulated s in {wall:.1f} s", flush=True)
    summary: dict[str, Any] = {
        "experiment": sc.name,
        "paper": sc.paper,
        "run_id": f"sim-{args.scale}-seed{args.seed}",
        "smoke": lab.smoke,
        "algos": list(runs),
        "interrupted": False,
        "elapsed_s": round(time.monotonic() - started, 1),
        "rtt_emulation": lab.rtt_emulation,
        "engine": "simulator",
        "scale": args.scale,
        "seed": args.seed,
        "scaling": {**sc.scaling(lab.smoke), **lab.note},
        "simulator": perf,
        **sc.summarize(runs, lab.smoke),
    }
    summary["plots"] = [str(p.name) for p in sc.plot(out, runs)]
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k in runs}, indent=1))
    print(f"sim: results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
