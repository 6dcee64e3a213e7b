"""Control-loop cost per switch on BMv2: one period of the real agent
(SwitchAgent.step: one Read of every counter cell the agent uses, compute every
port, records to a JSONL file, one Write of every rate and the admit meter).
Every period writes every port's rate and the gated port's meter (the worst case:
the bench makes each admit rate count as changed). Runs 1 switch with 4, 8 and 15
ports (15: the data plane's most, port numbers 1..FG_MAX_PORTS-1) and 4 and 8
switches of 8 ports driven by one controller process, each on its own timer.
Prints p50/p99/max of the period and its parts, CPU time per period (this process
and the switches), the load average, and each part of a period alone
(the breakdown). Headline: 1 switch, 8 ports, p99. Needs root and simple_switch_grpc.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import finsy as fy
from benchlib import Headline, missing_switch, skip, write
from finsy import p4entity
from finsy.proto import p4r

from fairgate_controller import entities as ent
from fairgate_controller.agent import ControlConfig, SwitchAgent
from fairgate_controller.records import Recorder
from fairgate_controller.telemetry import counter_deltas
from fairgate_controller.topology import parse
from fairgate_controller.wire import CounterReader
from fairgate_p4 import artifacts
from fairgate_p4 import generated as g
from fairgate_topo.netns_switch import NetnsSwitch

TOP = Path(__file__).resolve().parent.parent
HEADLINE = (1, 8)  # switches, ports
GRID = ((1, 4), (1, 8), (1, g.FG_MAX_PORTS - 1), (4, 8), (8, 8))
PARTS = ("read", "compute", "write", "period")
CPU = "cpu"  # this process's CPU time during the period (1 switch: the period's own)
GOAL_MS = 5.0


def topology(names_addrs: list[tuple[str, str]], ports: int) -> dict[str, Any]:
    """Switches with `ports` hosts each (port 1 SYN-gated), not linked."""
    hosts = [
        {
            "name": f"h{s}_{i}",
            "ip": f"10.{s}.{i}.1",
            "mac": f"00:00:00:00:{s:02x}:{i:02x}",
            "switch": name,
            "port": i,
            "capacity_kbps": 10_000,
            "admission": i == 1,
        }
        for s, (name, _addr) in enumerate(names_addrs)
        for i in range(1, ports + 1)
    ]
    switches = [
        {"name": name, "grpc_addr": addr, "device_id": 0, "mac": f"02:fa:00:00:00:{s + 1:02x}"}
        for s, (name, addr) in enumerate(names_addrs)
    ]
    return {"switches": switches, "hosts": hosts}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process `pid` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


@dataclass
class Run:
    switches: int
    ports: int
    periods: int
    times: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in (*PARTS, CPU)})
    cpu_ms: float = 0.0  # this process, per switch-period
    switch_cpu_ms: float = 0.0  # the BMv2 processes, per switch-period
    records: int = 0  # JSON lines written
    cells: int = 0  # counter cells per Read
    updates: int = 0  # updates per Write
    load_before: list[float] = field(default_factory=list)
    load_after: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, dict[str, float]]:
        return {
            k: {
                "p50_ms": round(statistics.median(v), 3),
                "p99_ms": round(pct(v, 0.99), 3),
                "max_ms": round(max(v), 3),
            }
            for k, v in self.times.items()
        }

    def record(self) -> dict[str, Any]:
        doc = asdict(self)
        del doc["times"]
        return {**doc, "summary_ms": self.summary()}


def options() -> fy.SwitchOptions:
    return fy.SwitchOptions(
        p4info=artifacts.p4info_path(), p4blob=artifacts.bmv2_json_path(), device_id=0
    )


async def drive(
    agent: SwitchAgent, sw: fy.Switch, periods: int, period_s: float, offset_s: float, run: Run
) -> None:
    """`periods` periods of one switch on its own timer, after `offset_s`."""
    await asyncio.sleep(offset_s)
    gated = list(agent.windows)
    for i in range(-3, periods):  # 3 periods of warm-up (the first is the baseline)
        for port in gated:  # every admit rate counts as changed: a meter write each period
            agent.admit[port] = -1.0
        before = agent.periods
        cpu0 = time.process_time()
        await agent.step(sw)
        cpu = time.process_time() - cpu0
        t0, t1, t2, t3 = agent.times
        if i >= 0:
            if agent.periods != before + 1 or agent.updates != len(agent.ports) + len(gated):
                raise RuntimeError("a period did not control and write every port")
            for key, dt in zip(PARTS, (t1 - t0, t2 - t1, t3 - t2, t3 - t0), strict=True):
                run.times[key].append(dt * 1e3)
            run.times[CPU].append(cpu * 1e3)
        await asyncio.sleep(period_s)


async def measure(
    switches: list[NetnsSwitch],
    ports: int,
    periods: int,
    period_s: float,
    records: Path,
    profiler: cProfile.Profile | None = None,
) -> tuple[Run, dict[str, dict[str, float]] | None]:
    names = [(f"s{i + 1}", sw.grpc_address) for i, sw in enumerate(switches)]
    config = ControlConfig(
        algo="qfcp",
        session="strategy1",
        period_s=period_s,
        session_window_s=period_s / 10,
        session_completions="reverse",  # each switch is a network of its own: no neighbour
    )
    recorder = Recorder(records)
    agents = []
    for name, addr in names:  # each switch is a network of its own
        topo = parse(topology([(name, addr)], ports))
        agents.append(SwitchAgent(topo.switches[name], topo, config, recorder))
    run = Run(len(switches), ports, periods, load_before=load())
    pids = [sw.proc.pid for sw in switches if sw.proc is not None]
    breakdown = None
    async with AsyncExitStack() as stack:
        fsws = [
            await stack.enter_async_context(fy.Switch(name, addr, options()))
            for name, addr in names
        ]
        for agent, fsw in zip(agents, fsws, strict=True):
            await agent.install(fsw)
        c0, s0 = time.process_time(), sum(cpu_s(pid) for pid in pids)
        if profiler is not None:
            profiler.enable()
        await asyncio.gather(
            *(
                drive(agent, fsw, periods, period_s, i * period_s / len(agents), run)
                for i, (agent, fsw) in enumerate(zip(agents, fsws, strict=True))
            )
        )
        if profiler is not None:
            profiler.disable()
        n = periods * len(agents)
        run.cpu_ms = round((time.process_time() - c0) / n * 1e3, 3)
        run.switch_cpu_ms = round((sum(cpu_s(pid) for pid in pids) - s0) / n * 1e3, 3)
        run.load_after = load()
        assert agents[0].prev is not None
        run.cells = sum(len(cells) for cells in agents[0].prev.values())
        run.updates = agents[0].updates
        if (run.switches, run.ports) == HEADLINE:
            breakdown = await parts(agents[0], fsws[0], records.with_suffix(".parts.jsonl"))
    recorder.close()
    run.records = sum(1 for _ in records.open())
    return run, breakdown


async def timed(
    what: Callable[[], Awaitable[Any]] | Callable[[], Any], reps: int
) -> dict[str, float]:
    """p50 and p99 wall time and the mean CPU time of `what` (µs)."""
    walls = []
    c0 = time.process_time()
    for _ in range(reps):
        t0 = time.perf_counter()
        out = what()
        if asyncio.iscoroutine(out):
            await out
        walls.append((time.perf_counter() - t0) * 1e6)
    cpu = (time.process_time() - c0) / reps * 1e6
    return {
        "p50_us": round(statistics.median(walls), 1),
        "p99_us": round(pct(walls, 0.99), 1),
        "cpu_us": round(cpu, 1),
    }


async def parts(
    agent: SwitchAgent, sw: fy.Switch, records: Path, reps: int = 300
) -> dict[str, dict[str, float]]:
    """Each part of a period alone, on the same switch and agent: where the time goes."""
    wire = agent._wire(sw)
    client = sw._p4client
    assert wire is not None and client is not None and agent.prev is not None
    reader, encoder = wire
    whole = CounterReader(sw.p4info, sw.device_id, agent.counters, {})  # every array whole
    replies = [r async for r in client.request_iter(reader.request)]
    whole_replies = [r async for r in client.request_iter(whole.request)]

    async def read_before() -> None:
        whole.decode([r async for r in client.request_iter(whole.request)])

    snap = await reader.read(client)
    delta, _ = counter_deltas(agent.prev, snap)
    quiet = Recorder()
    file_rec = Recorder(records)
    real = agent.recorder
    agent.recorder = quiet
    writes, _meters = agent.compute(delta, agent.config.period_s or 0.01)
    entities = writes + [ent.meter_entry(p, 100.0, agent.config.meter_burst) for p in agent.windows]
    latest = list(quiet.latest.values())
    request = p4r.WriteRequest(device_id=sw.device_id, updates=encoder.modify(entities))

    def records_to_file() -> None:
        for rec in latest:
            file_rec.write(rec)
        file_rec.flush()

    cells = sum(len(c) for c in snap.values())
    out = {
        "gRPC floor: empty RPC round trip (Capabilities)": await timed(
            lambda: client.request(p4r.CapabilitiesRequest()), reps
        ),
        f"Read: RPC + decode, {cells} cells, request serialized once (now)": await timed(
            lambda: reader.read(client), reps
        ),
        "Read: RPC + decode, every array whole, finsy's client (before)": await timed(
            read_before, reps
        ),
        f"  of which decode into a Snapshot ({cells} cells)": await timed(
            lambda: reader.decode(replies), reps
        ),
        f"  of which decode ({sum(len(r.entities) for r in whole_replies)} cells, before)": (
            await timed(lambda: whole.decode(whole_replies), reps)
        ),
        "counter deltas": await timed(lambda: counter_deltas(agent.prev or {}, snap), reps),
        f"measure + QFCP + session, {len(agent.ports)} ports (no records)": await timed(
            lambda: agent.compute(delta, 0.01), reps
        ),
        f"records: {len(latest)} JSON lines to a file": await timed(records_to_file, reps),
        f"encode {len(entities)} updates (cached P4Info lookups)": await timed(
            lambda: encoder.modify(entities), reps
        ),
        f"encode {len(entities)} updates with finsy (before)": await timed(
            lambda: [
                p4r.Update(type=p4r.Update.MODIFY, entity=e)
                for e in p4entity.encode_entities(entities, sw.p4info)
            ],
            reps,
        ),
        f"Write RPC, {len(entities)} updates (gRPC + BMv2)": await timed(
            lambda: client.request(request), reps
        ),
    }
    agent.recorder = real
    file_rec.close()
    return out


def print_runs(runs: list[Run], period_ms: float) -> None:
    print(f"control loop on BMv2, one controller process, period {period_ms:g} ms (ms per period)")
    head = f"{'switches':>8} {'ports':>5} {'periods':>7} {'cells':>5} {'updates':>7}"
    for k in PARTS:
        head += f" {k + ' p50':>11} {k + ' p99':>11}"
    head += f" {'max':>7} {'cpu p50':>7} {'cpu p99':>7} {'cpu mean':>8} {'bmv2 cpu':>8}"
    head += f" {'load after':>16}"
    print(head)
    for r in runs:
        s = r.summary()
        line = f"{r.switches:>8} {r.ports:>5} {r.periods:>7} {r.cells:>5} {r.updates:>7}"
        for k in PARTS:
            line += f" {s[k]['p50_ms']:>11.2f} {s[k]['p99_ms']:>11.2f}"
        line += f" {s['period']['max_ms']:>7.2f} {s[CPU]['p50_ms']:>7.2f} {s[CPU]['p99_ms']:>7.2f}"
        line += f" {r.cpu_ms:>8.2f} {r.switch_cpu_ms:>8.2f}"
        line += f" {' '.join(f'{x:.2f}' for x in r.load_after):>16}"
        print(line)
    print(
        "cpu p50/p99: this process's CPU time during a period (gRPC's threads included; with "
        "several switches, others' work interleaves); cpu mean: the process's CPU time over "
        "the run per switch-period; bmv2 cpu: the switches' CPU time per switch-period"
    )


def print_parts(breakdown: dict[str, dict[str, float]]) -> None:
    print("one period's parts alone (1 switch, 8 ports; microseconds)")
    print(f"{'part':<62} {'p50':>8} {'p99':>8} {'cpu':>8}")
    for name, t in breakdown.items():
        print(f"{name:<62} {t['p50_us']:>8.1f} {t['p99_us']:>8.1f} {t['cpu_us']:>8.1f}")
    print("cpu: this process's mean CPU time per call (gRPC's threads included)")


def print_profile(profiler: cProfile.Profile, periods: int, top: int = 18) -> None:
    """The functions with the most own time in the headline run's periods."""
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:top]
    total = sum(v[2] for v in stats.values())
    print(
        f"cProfile of the headline run: own time per period (us; total {total / periods * 1e6:.0f})"
    )
    for (path, line, func), (_cc, calls, tottime, _ct, _callers) in rows:
        where = f"{Path(path).parent.name}/{Path(path).name}:{line}" if line else path
        share = 100 * tottime / total
        print(
            f"{tottime / periods * 1e6:>8.1f} {share:>5.1f}% {calls / periods:>7.1f}/period"
            f"  {func} ({where})"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--periods", type=int, default=500, help="per run (and per switch)")
    parser.add_argument("--period-ms", type=float, default=10.0, help="each switch's timer")
    parser.add_argument(
        "--runs",
        default=",".join(f"{n}x{p}" for n, p in GRID),
        help="switches x ports of each run, comma-separated (the headline 1x8 always runs)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="cProfile the headline run's periods"
    )
    parser.add_argument("--out", type=Path, default=TOP / "results" / "bench" / "control_loop.json")
    args = parser.parse_args()
    logging.getLogger("finsy").setLevel(logging.ERROR)
    reason = missing_switch()
    if reason:
        return skip("control_loop", reason, args.out)
    try:
        grid = [tuple(int(x) for x in r.split("x")) for r in args.runs.split(",")]
    except ValueError:
        parser.error(f"--runs: expected e.g. 1x8,4x8, got {args.runs!r}")
    if any(len(r) != 2 or r[0] < 1 or not 1 <= r[1] < g.FG_MAX_PORTS for r in grid):
        parser.error(f"--runs: switches >= 1, ports 1..{g.FG_MAX_PORTS - 1}")
    if HEADLINE not in grid:
        grid.insert(0, HEADLINE)
    runs: list[Run] = []
    breakdown: dict[str, dict[str, float]] | None = None
    profiler = cProfile.Profile() if args.profile else None
    start_load = load()
    print(f"load average at start: {start_load}")
    with tempfile.TemporaryDirectory() as tmp:
        for switches, ports in grid:
            with ExitStack() as stack:
                sws = [
                    stack.enter_context(
                        NetnsSwitch(
                            log_dir=Path(tmp) / f"{switches}x{ports}-{i}",
                            ports=ports,
                            tag=f"cl{os.getpid() % 100000}x{i}",
                        )
                    )
                    for i in range(switches)
                ]
                run, parts_of = asyncio.run(
                    measure(
                        sws,
                        ports,
                        args.periods,
                        args.period_ms / 1e3,
                        Path(tmp) / f"{switches}x{ports}.jsonl",
                        profiler if (switches, ports) == HEADLINE else None,
                    )
                )
            runs.append(run)
            breakdown = parts_of or breakdown
            print(
                f"  {switches} switch(es) x {ports} ports: period p99 "
                f"{run.summary()['period']['p99_ms']:.2f} ms, load {run.load_after}",
                flush=True,
            )
    print_runs(runs, args.period_ms)
    if breakdown:
        print_parts(breakdown)
    if profiler is not None:
        print_profile(profiler, args.periods)
    head = next(r for r in runs if (r.switches, r.ports) == HEADLINE)
    p99 = head.summary()["period"]["p99_ms"]
    verdict = "met" if p99 <= GOAL_MS else "MISSED"
    print(
        f"goal control period p99, 1 switch, 8 ports: <= {GOAL_MS:g} ms: {p99:.2f} ms, {verdict} "
        f"(p50 {head.summary()['period']['p50_ms']:.2f} ms; CPU per period p50 "
        f"{head.summary()[CPU]['p50_ms']:.2f} / p99 {head.summary()[CPU]['p99_ms']:.2f} ms here "
        f"+ {head.switch_cpu_ms:.2f} ms mean in BMv2)"
    )
    print(f"load average at the end: {load()}")
    write(
        "control_loop",
        {
            "period_ms": args.period_ms,
            "load_average_at_start": start_load,
            "runs": [r.record() for r in runs],
            "parts_us": breakdown,
            "summary_ms": head.summary(),
            "shortest_sustainable_period_ms": p99,
        },
        args.out,
        [Headline("control period p99, 1 switch, 8 ports", p99, "ms", GOAL_MS, False)],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
