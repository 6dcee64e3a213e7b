"""Dashboard load (issue #18): a live simulator run with 50 QFCP flows over 16 measured
ports (a chain of 9 switches), watched in headless Chromium. Reports the page's redraws
per second, the redraw time, the renderer's main-thread CPU (Chrome DevTools
Performance.getMetrics TaskDuration over wall time), events received per second and the
simulated seconds per wall second the run kept with the dashboard on.
Writes results/bench/dashboard.json. Needs Debian's chromium; no root, no switch."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchlib import Headline, skip, write

from fairgate_exp.dashboard.chromium import CHROMIUM_FLAGS
from fairgate_exp.dashboard.serve import live_engines, serve
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

TOP = Path(__file__).resolve().parent.parent
SWITCHES = 9  # 8 links, both directions limited: 16 measured ports
FLOWS = 50
FLAGS = CHROMIUM_FLAGS


def experiment(seconds: float) -> str:
    n = SWITCHES
    hosts = [f'{{ name = "h{i}", switch = "s{i}" }}' for i in range(1, n + 1)]
    hosts += [f'{{ name = "r{i}", switch = "s{i}", ack_delay = "20ms" }}' for i in range(1, n + 1)]
    links = [
        f'{{ a = "s{i}", b = "s{i + 1}", capacity = "{10 + i}Mbit/s", '
        f'reverse_capacity = "{10 + i}Mbit/s" }}'
        for i in range(1, n)
    ]
    flows = []
    for k in range(FLOWS):
        a = k % (n - 1) + 1
        b = min(n, a + 1 + (k // 8) % 3)
        src, dst = (f"h{a}", f"r{b}") if k % 2 == 0 else (f"h{b}", f"r{a}")
        start = (k % 10) * 0.5
        flows.append(f'{{ name = "f{k:02d}", src = "{src}", dst = "{dst}", start = "{start}s" }}')
    switches = ", ".join(f'"s{i}"' for i in range(1, n + 1))
    return (
        f"switches = [{switches}]\nhosts = [{', '.join(hosts)}]\nlinks = [{', '.join(links)}]\n"
        f"flows = [{', '.join(flows)}]\n\n[experiment]\n"
        f'title = "dashboard load: {FLOWS} flows, 16 ports"\nduration = "{seconds}s"\n'
        f'warmup = "{seconds / 2}s"\nalgorithms = ["qfcp"]\n'
    )


def measure(seconds: float, speed: float, chromium: str, tmp: Path) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    (tmp / "load.toml").write_text(experiment(seconds))
    plan = load(tmp / "load.toml")
    assert len(plan.measured) == 16 and len(plan.flows) == FLOWS
    factory, dash = live_engines(SimEngine, plan, "sim", speed, paused=True)
    served = serve(dash, say=lambda _m: None)
    result: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: result.update(
            run=run(plan, factory, "sim", tmp / "results", ["qfcp"], lambda _m: None)
        ),
        daemon=True,
    )
    worker.start()
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(tmp / "profile"),
            executable_path=chromium,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1000},
        )
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        cdp.send("Performance.enable")
        page.goto(served.url)
        page.wait_for_function("fg.algo === 'qfcp'", timeout=20000)

        def task_s() -> float:
            metrics = cdp.send("Performance.getMetrics")["metrics"]
            return next(m["value"] for m in metrics if m["name"] == "TaskDuration")

        assert dash.gate is not None
        cpu0, up0, ev0, wall0 = task_s(), page.evaluate("fg.updates"), 0, time.perf_counter()
        dash.gate.control("resume")
        while worker.is_alive() and dash.gate.state()["sim_t"] < seconds:
            time.sleep(0.1)
        wall = time.perf_counter() - wall0  # the simulated run, not the plots after it
        cpu = task_s() - cpu0
        updates = page.evaluate("fg.updates") - up0
        events = page.evaluate("fg.events") - ev0
        redraw = page.evaluate("fg.redrawMs")
        worker.join(600)
        ctx.close()
    served.stop()
    ms = sorted(redraw)
    return {
        "flows": FLOWS,
        "ports": 16,
        "simulated_s": seconds,
        "speed_asked": speed,
        "wall_s": round(wall, 2),
        "sim_s_per_wall_s": round(seconds / wall, 3),
        "redraws": updates,
        "redraws_per_s": round(updates / wall, 2),
        "redraw_ms_p50": round(statistics.median(ms), 1),
        "redraw_ms_p95": round(ms[int(0.95 * (len(ms) - 1))], 1),
        "events": events,
        "events_per_s": round(events / wall),
        "renderer_cpu_pct": round(100 * cpu / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seconds", type=float, default=10.0, help="simulated seconds")
    p.add_argument("--speed", type=float, default=1.0, help="sim s per wall s (0: flat out)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        return skip("dashboard", "chromium not found: apt-get install chromium", args.out)
    with tempfile.TemporaryDirectory() as tmp:
        row = measure(args.seconds, args.speed, chromium, Path(tmp))
    print(f"dashboard: {FLOWS} flows, 16 ports, {args.seconds:g} sim s at speed {args.speed:g}")
    for k, v in row.items():
        print(f"  {k:<18} {v}")
    heads = [
        Headline("redraws per second", row["redraws_per_s"], "1/s", 2.0, True),
        Headline("redraw time p95", row["redraw_ms_p95"], "ms", 100.0, False),
        Headline("renderer main-thread CPU", row["renderer_cpu_pct"], "%", 50.0, False),
    ]
    write("dashboard", row, args.out, heads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
