"""Control-loop cost per switch on BMv2 with 8 ports: one period = read every
counter array (one Read request) + compute every port + write every rate (one
batched MODIFY). Prints p50/p99 of the period's work and of its parts, and
the shortest sustainable period (the p99). Needs root and simple_switch_grpc.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

import finsy as fy
from benchlib import Headline, missing_switch, skip, write

from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.telemetry import counter_deltas
from fairgate_controller.topology import parse
from fairgate_p4 import artifacts
from fairgate_topo.netns_switch import NetnsSwitch

TOP = Path(__file__).resolve().parent.parent
PORTS = 8


def topology(grpc_addr: str) -> dict:
    return {
        "switches": [
            {"name": "s1", "grpc_addr": grpc_addr, "device_id": 0, "mac": "02:fa:00:00:00:01"}
        ],
        "hosts": [
            {
                "name": f"h{i}",
                "ip": f"10.0.{i}.1",
                "mac": f"00:00:00:00:00:{i:02x}",
                "switch": "s1",
                "port": i,
                "capacity_kbps": 10_000,
                "admission": i == 1,
            }
            for i in range(1, PORTS + 1)
        ],
    }


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(address: str, periods: int) -> dict[str, list[float]]:
    topo = parse(topology(address))
    agent = SwitchAgent(
        topo.switches["s1"], topo, ControlConfig(algo="qfcp", session="strategy1"), Recorder()
    )
    opts = fy.SwitchOptions(
        p4info=artifacts.p4info_path(), p4blob=artifacts.bmv2_json_path(), device_id=0
    )
    times: dict[str, list[float]] = {"read": [], "compute": [], "write": [], "period": []}
    async with fy.Switch("s1", address, opts) as sw:
        await agent.install(sw)
        agent.prev = await agent.read_snapshot(sw)
        agent.prev_t = time.monotonic()
        for _ in range(periods):
            await asyncio.sleep(0.01)
            t0 = time.perf_counter()
            snap = await agent.read_snapshot(sw)
            t1 = time.perf_counter()
            delta, _reset = counter_deltas(agent.prev, snap)
            now = time.monotonic()
            writes, meters = agent.compute(delta, now - agent.prev_t)
            agent.prev, agent.prev_t = snap, now
            t2 = time.perf_counter()
            await sw.modify(writes + meters)
            t3 = time.perf_counter()
            for key, dt in (
                ("read", t1 - t0),
                ("compute", t2 - t1),
                ("write", t3 - t2),
                ("period", t3 - t0),
            ):
                times[key].append(dt * 1e3)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=500)
    parser.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "control_loop.json")
    args = parser.parse_args()
    logging.getLogger("finsy").setLevel(logging.ERROR)
    reason = missing_switch()
    if reason:
        return skip("control_loop", reason, args.out)
    with tempfile.TemporaryDirectory() as tmp, NetnsSwitch(log_dir=Path(tmp), ports=PORTS) as sw:
        times = asyncio.run(measure(sw.grpc_address, args.periods))
    summary = {
        k: {"p50_ms": statistics.median(v), "p99_ms": pct(v, 0.99), "max_ms": max(v)}
        for k, v in times.items()
    }
    print(f"control loop, 1 switch, {PORTS} ports, {args.periods} periods (ms)")
    print(f"{'part':<8} {'p50':>7} {'p99':>7} {'max':>7}")
    for k, s in summary.items():
        print(f"{k:<8} {s['p50_ms']:>7.2f} {s['p99_ms']:>7.2f} {s['max_ms']:>7.2f}")
    shortest = summary["period"]["p99_ms"]
    print(f"shortest sustainable period ~ {shortest:.1f} ms (p99 of the work; goal p99 <= 5 ms)")
    write(
        "control_loop",
        {
            "ports": PORTS,
            "periods": args.periods,
            "summary_ms": summary,
            "shortest_sustainable_period_ms": shortest,
        },
        args.out,
        [Headline(f"control period p99, 1 switch, {PORTS} ports", shortest, "ms", 5.0, False)],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
