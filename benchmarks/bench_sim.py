"""Simulator speed (issue 17): simulated seconds per wall second and peak memory.

Cases, each in its own child process (so its peak RSS is its own):

- 50 greedy QFCP and Lestas users on one 155 Mbit/s bottleneck (1242 B frames, 40 ms
  RTT by ack delay), the controller every RTT, ``--seconds`` simulated (goal >= 2x real
  time, the slower of the two);
- 4 QFCP users at 10 Mbit/s (a small network, for scale);
- 50 QFCP users on a 1 Gbit/s single bottleneck (goal >= 0.3x);
- the paper-scale Lestas parking lot (``experiments/parking-lot-paper.toml``: 8 links
  of 155 Mbit/s, link 4 at 80, 15 ms each, 180 flows, exact-queue probe every 5 ms),
  run for its first ``--pl-seconds`` only (the full run is 31 s; every group has
  started by 1.1 s) (goal >= 0.5x).

Every case runs in pure Python and, when a C compiler is there, in the mypyc build
(scripts/sim_ext.py, built here if missing or stale; ``--pure`` skips it). Reports
simulated seconds per wall second and per CPU second of the run (the headlines: the
compiled build's, by CPU time, which on a shared machine leaves out the others' load),
simulated packets (every packet through every output port: data and acks, all hops) and
scheduled events per wall second, the child's peak resident memory (``ru_maxrss``), and
the figures of the code before issue 17 (benchmarks/sim_before.json) beside them, and
for the dumbbells each flow's mean rate over the second half over its max-min share
(``rate/fair``, the oracle's: C / N when s1 -> s2 is the bottleneck). All of
the experiment run is timed (the driver and the simulator engine of ``fairgate_exp``,
as ``make sim`` runs a file; building the network takes a few ms of it), but not the
imports of its modules (done first: a process's one-time cost). Writes
results/bench/sim.json.
Needs no switch and no root."""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import Headline, write

TOP = Path(__file__).resolve().parent.parent
#: the same cases measured on the code before issue 17 (SimPy), for the "before" column
BEFORE = Path(__file__).resolve().parent / "sim_before.json"
CASES = ("155-50-qfcp", "155-50-lestas", "10-4-qfcp", "1000-50-qfcp", "parking-lot-paper")


def _packets(net: Any) -> int:
    ports = [p for sw in net.switches.values() for p in sw.ports.values()]
    ports += [h.uplink for h in net.hosts.values()]
    return sum(p.stats.sent for p in ports)


def _timed_run(plan: Any, algo: str) -> tuple[dict[str, Any], Any, float, float]:
    """The experiment through the driver and the simulator engine (building the network
    included: a few ms), timed by the wall clock and by this process's CPU time."""
    import tempfile

    # the modules the run imports, imported before the clocks start: a process's
    # one-time cost (0.2-0.4 s), not the simulator's speed
    import fairgate_exp.driver
    import fairgate_exp.engines.sim  # noqa: F401
    from fairgate_exp.inline import run_sim

    with tempfile.TemporaryDirectory() as tmp:
        t0, c0 = time.perf_counter(), time.process_time()
        res, engine = run_sim(plan, algo, Path(tmp))
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return res, engine, wall, cpu


def bench_plan(users: int, mbps: float, seconds: float) -> Any:
    """The dumbbell cases' network: 7 host pairs, users entering over 0.1 s, receivers
    holding acks 40 ms, access links faster than the bottleneck (``inline.dumbbell``'s
    default), so the bottleneck s1 -> s2 is every flow's only one (C / N each)."""
    from fairgate_exp.inline import dumbbell, plan_of

    doc = dumbbell(users, f"{mbps:g}Mbit/s", seconds, hosts=7, stagger=f"{0.1 / users:g}s")
    return plan_of(doc, "bench-dumbbell")


def measure(users: int, mbps: float, seconds: float, algo: str) -> dict[str, Any]:
    from fairgate_exp.metrics import mean_in
    from fairgate_exp.oracle import maxmin_pps

    plan = bench_plan(users, mbps, seconds)
    res, engine, wall, cpu = _timed_run(plan, algo)
    # each flow against its max-min share (the oracle's, over every port of the plan: a
    # network whose bottleneck is not s1 -> s2 cannot pass as C / N)
    fair = maxmin_pps(plan)
    tail = [(mean_in(r, seconds / 2, seconds) or 0.0) / fair[f] for f, r in res["rates"].items()]
    return {
        "case": f"{users} users {mbps:g} Mbit/s {algo}",
        "users": users,
        "bottleneck_mbps": mbps,
        "algo": algo,
        "rate_over_fair_min": round(min(tail), 3),
        "rate_over_fair_max": round(max(tail), 3),
        **_speed(engine.net, seconds, wall, cpu),
    }


def measure_parking_lot(seconds: float) -> dict[str, Any]:
    """experiments/parking-lot-paper.toml, stopped at ``seconds``."""
    import tomllib

    from fairgate_exp.inline import plan_of
    from fairgate_exp.load import resolve_path

    doc = tomllib.loads(resolve_path("parking-lot-paper").read_text())
    doc["experiment"] |= {"duration": f"{seconds:g}s", "warmup": "0s"}
    doc.pop("expect", None)
    plan = plan_of(doc, "parking-lot-paper")
    _res, engine, wall, cpu = _timed_run(plan, "lestas")
    return {
        "case": "parking lot, paper (lestas)",
        "users": len(plan.flows),
        "bottleneck_mbps": 155.0,
        "algo": "lestas",
        "links": sum(1 for p in plan.ports.values() if p.peer in plan.switches) // 2,
        **_speed(engine.net, seconds, wall, cpu),
    }


def _speed(net: Any, seconds: float, wall: float, cpu: float) -> dict[str, Any]:
    """Speed by the wall clock and by this process's CPU time (less sensitive to other
    load on a shared machine)."""
    packets = _packets(net)
    return {
        "simulated_s": seconds,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "sim_s_per_wall_s": round(seconds / wall, 3),
        "sim_s_per_cpu_s": round(seconds / cpu, 3),
        "packet_hops": packets,
        "packet_hops_per_wall_s": round(packets / wall),
        "events": net.clock.events,
        "events_per_wall_s": round(net.clock.events / wall),
    }


def run_case(case: str, seconds: float, pl_seconds: float) -> dict[str, Any]:
    if case == "parking-lot-paper":
        row = measure_parking_lot(pl_seconds)
    else:
        mbps, users, algo = case.split("-")
        row = measure(int(users), float(mbps), seconds, algo)
    # ru_maxrss is in KiB on Linux
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    return row


def _child(
    case: str, seconds: float, pl_seconds: float, env: dict[str, str] | None = None
) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--case", case, "--seconds", str(seconds)]
    cmd += ["--pl-seconds", str(pl_seconds)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def _compiled_env() -> tuple[dict[str, str] | None, str]:
    """The environment of the mypyc build (scripts/sim_ext.py), built here when missing
    or stale; None and the reason when it cannot be built."""
    sys.path.insert(0, str(TOP / "scripts"))
    import sim_ext

    why = sim_ext.missing_compiler()
    if why:
        return None, why
    if sim_ext.stale():
        print("bench_sim: building the compiled simulator (scripts/sim_ext.py build)", flush=True)
        sim_ext.build()
    return sim_ext.environ(), "mypyc build: " + ", ".join(sim_ext.COMPILED)


def _engine() -> str:
    from fairgate_sim import engine

    return str(getattr(engine, "ENGINE", "SimPy"))  # the code before issue 17 used SimPy


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=5.0, help="simulated s (dumbbells)")
    p.add_argument("--pl-seconds", type=float, default=4.0, help="simulated s (parking lot)")
    p.add_argument("--pure", action="store_true", help="measure pure Python only (no mypyc)")
    p.add_argument("--case", choices=CASES, help="run one case here and print its row (JSON)")
    p.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "sim.json")
    args = p.parse_args(argv)
    if args.case:
        print(json.dumps(run_case(args.case, args.seconds, args.pl_seconds)))
        return 0
    rows = {c: _child(c, args.seconds, args.pl_seconds) for c in CASES}
    env, compiled_note = (None, "--pure") if args.pure else _compiled_env()
    compiled = {}
    if env is not None:
        compiled = {c: _child(c, args.seconds, args.pl_seconds, env) for c in CASES}
        for r in compiled.values():
            r["case"] += " [mypyc]"
    before = json.loads(BEFORE.read_text())["cases"] if BEFORE.exists() else {}
    print(
        f"{'case':38} {'sim s':>5} {'sim s/wall s':>12} {'sim s/cpu s':>11} {'pkt-hops/s':>11}"
        f" {'events/s':>9}"
        f" {'peak MB':>8} {'rate/fair':>11}"
    )
    for r in [*rows.values(), *compiled.values()]:
        fair = (
            f"{r['rate_over_fair_min']:.2f}-{r['rate_over_fair_max']:.2f}"
            if "rate_over_fair_min" in r
            else "-"
        )
        print(
            f"{r['case']:38} {r['simulated_s']:5g} {r['sim_s_per_wall_s']:12.2f}"
            f" {r['sim_s_per_cpu_s']:11.2f} {r['packet_hops_per_wall_s']:11,d}"
            f" {r['events_per_wall_s']:9,d}"
            f" {r['peak_rss_mb']:8.1f} {fair:>11}"
        )
    print(f"\nbefore issue 17 (SimPy; {BEFORE.name}: {len(before)} cases), x real time by CPU s:")
    for c, r in [*rows.items(), *compiled.items()]:
        b = before.get(c)
        if b is not None and b["simulated_s"] == r["simulated_s"]:
            print(
                f"  {r['case']:38} before {b['sim_s_per_cpu_s']:6.3f}"
                f"  now {r['sim_s_per_cpu_s']:6.3f}"
                f"  ({r['sim_s_per_cpu_s'] / b['sim_s_per_cpu_s']:.2f}x);"
                f" peak MB {b['peak_rss_mb']:.0f} -> {r['peak_rss_mb']:.0f}"
            )
    if not compiled:
        print(f"compiled build not measured: {compiled_note}")
    # The headlines: the compiled build when there is one (pure Python is the fallback),
    # simulated s per CPU s of the run: on an idle machine that is the wall clock's figure
    # (the run is one CPU-bound thread), on a shared one it leaves out the others' load.
    best = compiled or rows
    unit = "x real time, CPU" + (" (mypyc)" if compiled else " (pure Python)")
    key = "sim_s_per_cpu_s"
    slower = min(best["155-50-qfcp"], best["155-50-lestas"], key=lambda r: r[key])
    heads = [
        Headline(
            "simulator, 155 Mbit/s, 50 users (QFCP, Lestas: slower)",
            slower[key],
            unit,
            2.0,
            True,
        ),
        Headline(
            "simulator, paper parking lot (8 x 155 Mbit/s, 180 flows)",
            best["parking-lot-paper"][key],
            unit,
            0.5,
            True,
        ),
        Headline(
            "simulator, 1 Gbit/s, 50 users (QFCP)",
            best["1000-50-qfcp"][key],
            unit,
            0.3,
            True,
        ),
    ]
    for h, r in zip(heads, (slower, best["parking-lot-paper"], best["1000-50-qfcp"]), strict=True):
        print(
            f"goal {h.measure}: >= {h.goal:g} {h.unit}: {h.value:.2f}, "
            + ("met" if h.met else "MISSED")
            + f" (by the wall clock: {r['sim_s_per_wall_s']:.2f})"
        )
    load = [round(x, 2) for x in os.getloadavg()]
    print(f"load average after the run: {load}")
    doc = {
        "load_average": load,
        "engine": _engine(),
        "python": sys.version.split()[0],
        "machine": platform.machine(),
        "rows": list(rows.values()),
        "compiled_rows": list(compiled.values()),
        "compiled": compiled_note,
        "before": before,
    }
    out = write("sim", doc, args.out, heads)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
