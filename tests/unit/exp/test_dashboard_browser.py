"""The dashboard in a real headless Chromium (Debian's, driven by Playwright): the live page
during a simulator run of qfcp-convergence, step mode, and replay of a stored run.
Screenshots go to build/dashboard-tests/."""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fairgate_exp.dashboard.chromium import CHROMIUM_FLAGS
from fairgate_exp.dashboard.feed import RunFeed, plan_of_run
from fairgate_exp.dashboard.serve import Served, live_engines, serve
from fairgate_exp.dashboard.server import Dashboard
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

ROOT = Path(__file__).resolve().parents[3]
SHOTS = ROOT / "build" / "dashboard-tests"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = CHROMIUM_FLAGS
PORT = "s1->s2"
TWO = """\
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
         { name = "r1", switch = "s2", ack_delay = "40ms" },
         { name = "r2", switch = "s2", ack_delay = "40ms" }]
links = [{ a = "s1", b = "s2", capacity = "45Mbit/s" }]
flows = [{ name = "flow1", src = "h1", dst = "r1" },
         { name = "flow2", src = "h2", dst = "r2", start = "2s", stop = "4s" }]
phases = [{ name = "one", start = "1s", end = "2s" }, { name = "two", start = "3s", end = "4s" },
          { name = "one-again", start = "5s", end = "6s" }]

[experiment]
duration = "6s"
warmup = "1s"

[scales.lab]
factor = 0.19872
"""
SHORT = """\
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "r1", switch = "s2", ack_delay = "40ms" }]
links = [{ a = "s1", b = "s2", capacity = "45Mbit/s" }]
flows = [{ name = "flow1", src = "h1", dst = "r1" }]

[experiment]
duration = "2s"
warmup = "1s"
algorithms = ["qfcp"]

[scales.lab]
factor = 0.19872
"""

pytestmark = pytest.mark.skipif(
    not Path(CHROMIUM).is_file(),
    reason="chromium not found: apt-get install chromium (make deps does) for the browser tests",
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(
            str(profile),
            executable_path=CHROMIUM,
            headless=True,
            args=FLAGS,
            viewport={"width": 1400, "height": 1400},
        )
        yield ctx
        ctx.close()


def wait_for(what: Callable[[], Any], timeout: float, msg: str) -> Any:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = what()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s: {msg}")


class LiveRun:
    """An experiment (QFCP only, unless told) in the simulator, its dashboard beside it."""

    def __init__(
        self, results: Path, speed: float, paused: bool, exp: str | Path, algo: str = "qfcp"
    ) -> None:
        self.plan, self.algo = load(exp), algo
        factory, self.dash = live_engines(SimEngine, self.plan, "sim", speed, paused)
        self.served: Served = serve(self.dash, say=lambda _m: None)
        self.run_dir: Path | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(factory, results), daemon=True)
        self.thread.start()

    def _run(self, factory: Any, results: Path) -> None:
        try:
            self.run_dir, _ = run(self.plan, factory, "sim", results, [self.algo], lambda _m: None)
        except BaseException as exc:  # reported by finish()
            self.error = exc

    def finish(self) -> Path:
        assert self.dash.gate is not None
        self.dash.gate.control("resume", speed=0.0)
        self.thread.join(60)
        self.served.stop()
        assert self.error is None and self.run_dir is not None
        return self.run_dir


def drawn(page: Any, chart: str) -> list[list[float | None]]:
    key = json.dumps(chart)
    return page.evaluate(f"fg.charts[{key}] ? fg.charts[{key}].data : []")


def mean_between(t: list[float], v: list[float | None], t0: float, t1: float) -> float:
    vals = [x for s, x in zip(t, v, strict=True) if t0 < s <= t1 and x is not None]
    assert vals, f"nothing drawn in ({t0}, {t1}]"
    return sum(vals) / len(vals)


def test_live_fair_rate_moves_at_each_join_and_leave(browser: Any, tmp_path: Path) -> None:
    live = LiveRun(tmp_path, speed=5.0, paused=False, exp="qfcp-convergence")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(live.served.url)
        lengths = []
        while live.thread.is_alive():
            data = drawn(page, f"rate:{PORT}")
            lengths.append(len(data[0]) if data else 0)
            if len(lengths) == 20:  # mid-run
                SHOTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SHOTS / "live.png"), full_page=True)
            time.sleep(0.1)
        run_dir = live.finish()
        wait_for(lambda: page.evaluate("fg.state && fg.state.done"), 10, "page saw the run end")
        time.sleep(0.5)  # the page redraws every 200 ms
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "live-finished.png"), full_page=True)
        t, rate = drawn(page, f"rate:{PORT}")[:2]
    finally:
        page.close()
    assert not errors
    # the chart grew while the run went on, not only at the end
    growing = sorted({n for n in lengths if n})
    assert len(growing) >= 5, lengths
    # joins at 2, 4, 6 s lower the fair rate; leaves at 8, 10, 12 s raise it (QFCP, Fig. 2)
    for te, sign in ((2, -1), (4, -1), (6, -1), (8, 1), (10, 1), (12, 1)):
        before = mean_between(t, rate, te - 0.8, te)
        after = mean_between(t, rate, te + 0.6, te + 1.6)
        change = after / before - 1
        assert sign * change > 0.15, (te, before, after)
    # what was drawn is what the controller recorded
    recs = [json.loads(line) for line in (run_dir / "qfcp" / "controller.jsonl").open()]
    last = [r for r in recs if (r["switch"], r["port"]) == ("s1", 5)][-1]
    assert rate[-1] == pytest.approx(last["rate_Bps"] * 8 / 1e6, rel=1e-12)
    assert t[-1] == round(last["t"], 4)


def test_step_advances_exactly_one_period(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "short.toml").write_text(SHORT)  # the first periods of qfcp-convergence
    live = LiveRun(tmp_path, speed=0.0, paused=True, exp=tmp_path / "short.toml")
    page = browser.new_page()
    try:
        page.goto(live.served.url)
        wait_for(lambda: page.is_visible("#btn-step"), 10, "step button shown")
        wait_for(lambda: page.evaluate("fg.algo === 'qfcp'"), 10, "qfcp tab")
        # paused at time 0: nothing drawn, and nothing comes while we wait
        time.sleep(0.5)
        assert len(drawn(page, f"rate:{PORT}")[0]) == 0
        for n in range(1, 6):
            page.click("#btn-step")
            wait_for(lambda n=n: len(drawn(page, f"rate:{PORT}")[0]) >= n, 10, f"period {n} drawn")
            time.sleep(0.6)  # a running engine would overshoot in this time
            assert len(drawn(page, f"rate:{PORT}")[0]) == n
            assert page.evaluate("fg.state.gate.periods") == n
            assert page.get_attribute("#eq", "data-period") == str(n)
        eq = page.inner_text("#eq")
        minus = "\N{MINUS SIGN}"
        assert f"N = max(1, y / R(t{minus}T))" in eq
        assert f"R_raw = (C {minus} \N{GREEK SMALL LETTER BETA} q / T) / N" in eq
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "step.png"), full_page=True)
        # the equation shows the numbers of the fifth period's record
        recs = [r for r in live.dash.feed.events if r["k"] == "port"]
        assert len(recs) == 5
        fifth = recs[-1]["rec"]
        assert f"{fifth['N']:.3f}" in eq and f"{fifth['rate_Bps'] * 8e-6:.3f}" in eq
    finally:
        page.close()
        live.finish()


def table_rows(page: Any) -> list[dict[str, str]]:
    return page.evaluate(
        """[...document.querySelectorAll('#summary-table tr')].filter(r => r.dataset.window)
           .map(r => ({...r.dataset}))"""
    )


def test_replay_draws_the_summary_values(browser: Any, tmp_path: Path) -> None:
    (tmp_path / "two.toml").write_text(TWO)
    plan = load(tmp_path / "two.toml")
    algos = ["qfcp", "lestas"]
    run_dir, summary = run(plan, SimEngine, "sim", tmp_path, algos, lambda _m: None)
    served = serve(Dashboard(RunFeed(plan_of_run(run_dir), run_dir)), say=lambda _m: None)
    page = browser.new_page()
    tables: dict[str, list[dict[str, str]]] = {}
    try:
        page.goto(served.url)
        wait_for(lambda: page.evaluate("fg.state && fg.state.done"), 15, "replay done")
        for algo in algos:
            page.click(f"#algo-tabs [data-algo={algo}]")
            wait_for(lambda: page.locator("#summary-table tr[data-flow]").count() > 0, 5, "table")
            time.sleep(0.5)
            tables[algo] = table_rows(page)
            page.screenshot(path=str(SHOTS / f"replay-{algo}.png"), full_page=True)
        # the topology marks the one bottleneck the oracle names
        assert page.locator("#topo line.bottleneck").count() == 1
        assert "bottleneck" in (page.get_attribute('#topo [data-link="s1-s2"]', "class") or "")
        eq = page.inner_text("#eq")  # lestas: its equation with numbers, none missing
        assert "LESTAS" in eq and "NaN" not in eq and "\N{EN DASH}" not in eq, eq
        if "outage rule" in eq:  # the run's last period can be idle: every flow has stopped
            assert "y = 0" in eq and "holds R =" in eq, eq
        else:
            assert "N\N{COMBINING CIRCUMFLEX ACCENT} = N\N{COMBINING CIRCUMFLEX ACCENT}(t" in eq
    finally:
        page.close()
        served.stop()
    for algo in algos:
        windows = summary["results"][algo]["windows"]
        compared = 0
        for r in tables[algo]:
            w = windows[r["window"]]
            if "flow" in r:
                want = w["flows"][r["flow"]]
                assert float(r["mean"]) == want["mean_pps"], (algo, r)
                assert float(r["maxmin"]) == want["maxmin_pps"], (algo, r)
            else:
                # both round the same mean to 4 digits, JS half-up and Python on the binary
                # value: a mean ending in 5 can differ in the last digit (0.97605)
                assert float(r["util"]) == pytest.approx(
                    w["ports"][r["port"]]["util"], abs=1.01e-4
                ), (algo, r)
            compared += 1
        expected = sum(len(w["flows"]) + len(w["ports"]) for w in windows.values())
        assert compared == expected and compared >= 7


def page_number(x: float) -> str:
    """app.js's f3: how the equation panel prints a number."""
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if abs(x) >= 1000 or abs(x) < 0.01:
        return f"{x:.5g}".replace("e+0", "e+").replace("e-0", "e-")
    return f"{x:.3f}"


def test_live_xcp_draws_its_aggregate_feedback(browser: Any, tmp_path: Path) -> None:
    """A short XCP run: the port's phi / h chart fills while the run goes on, with the
    record's numbers, and the step view shows XCP's equations with them."""
    (tmp_path / "short.toml").write_text(SHORT.replace('["qfcp"]', '["xcp"]'))
    live = LiveRun(tmp_path, speed=2.0, paused=False, exp=tmp_path / "short.toml", algo="xcp")
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    chart = f"state:{PORT}:0"
    try:
        page.goto(live.served.url)
        drawn_live = 0
        while live.thread.is_alive():
            data = drawn(page, chart)
            if data and live.thread.is_alive():
                drawn_live = max(drawn_live, sum(x is not None for x in data[1]))
            time.sleep(0.1)
        run_dir = live.finish()
        wait_for(lambda: page.evaluate("fg.state && fg.state.done"), 10, "page saw the run end")
        time.sleep(0.5)  # the page redraws every 200 ms
        t, phi, h = drawn(page, chart)
        xi_t, xi_p, xi_n = drawn(page, f"state:{PORT}:1")
        title = page.evaluate(f"fg.charts[{json.dumps(chart)}].root.innerText")
        eq = page.inner_text("#eq")
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / "live-xcp.png"), full_page=True)
    finally:
        page.close()
    assert not errors
    assert drawn_live >= 3, drawn_live  # phi was drawn before the run ended
    assert "aggregate feedback phi" in title
    recs = [json.loads(line) for line in (run_dir / "xcp" / "controller.jsonl").open()]
    (key,) = [k for k in live.plan.measured if live.plan.ports[k].label == PORT]
    mine = [r for r in recs if (r["switch"], r["port"]) == key]
    assert t == [round(r["t"], 4) for r in mine] and xi_t == t
    assert phi == [r.get("xcp_phi_bytes") for r in mine]
    assert h == [r.get("xcp_h_bytes") for r in mine]
    assert xi_p == [r.get("xcp_xi_p") for r in mine]
    assert xi_n == [r.get("xcp_xi_n") for r in mine]
    assert sum(x is not None for x in phi) >= 8
    last = [r for r in mine if r.get("xcp_phi_bytes") is not None][-1]
    assert "\N{GREEK SMALL LETTER PHI} = \N{GREEK SMALL LETTER ALPHA} d S" in eq, eq
    for key in ("xcp_phi_bytes", "xcp_h_bytes", "xcp_d_s", "xcp_q_bytes"):
        assert f" {page_number(last[key])} " in eq, (key, last[key], eq)
    assert "NaN" not in eq


def test_replay_of_session_control_draws_admit_and_completion_rates(
    browser: Any, tmp_path: Path
) -> None:
    """A session-control variant folder (records in the session controller's format, written
    here): its chart draws the admit rate (null = no gating, a gap), the window's completions
    and admitted SYNs, and the step view names the admit rate in force."""
    plan = load("session-control")
    base = {
        "switch": "s1", "port": 2, "period_s": 0.1, "capacity_Bps": 62100.0, "y_Bps": 600.0,
        "departure_Bps": 600.0, "arrival_pkts": 10, "departure_pkts": 10, "drop_pkts": 0,
        "queue_mean_bytes": 0.0, "queue_min_bytes": 0.0, "queue_overflow_pkts": 0,
        "rtt_mean_s": None, "syn_admitted": 3, "syn_dropped": 2, "syn_ungated": 0, "fins": 4,
        "rsts": 0, "completions": 4,
    }  # fmt: skip
    admit = [None, None, 30.0, 30.0, 24.5, None]
    window = {2: (41.0, 250.0), 5: (28.0, 31.0)}  # t index -> (completions, admitted) /s
    folder = tmp_path / "strategy2"
    folder.mkdir()
    with (folder / "controller.jsonl").open("w") as f:
        for i, a in enumerate(admit):
            rec = base | {"t": round(0.1 * (i + 1), 1), "admit_fps": a}
            if i in window:
                rec |= {"window_completions_fps": window[i][0], "window_admitted_fps": window[i][1]}
            f.write(json.dumps(rec) + "\n")
    (tmp_path / "summary.json").write_text("{}")
    served = serve(Dashboard(RunFeed(plan, tmp_path)), say=lambda _m: None)
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(served.url)
        wait_for(lambda: page.evaluate("fg.state && fg.state.done"), 10, "replay done")
        wait_for(lambda: page.evaluate("fg.algo === 'strategy2'"), 5, "strategy2 tab")
        time.sleep(0.5)
        t, a, done, admitted = drawn(page, f"state:{PORT}:0")
        title = page.evaluate(f"fg.charts[{json.dumps(f'state:{PORT}:0')}].root.innerText")
        eq = page.inner_text("#eq")
    finally:
        page.close()
        served.stop()
    assert not errors
    assert "session control: admit rate" in title
    assert t == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    assert a == admit
    assert done == [None, None, 41.0, None, None, 28.0]
    assert admitted == [None, None, 250.0, None, None, 31.0]
    assert "admit rate in force: none (no gating)" in eq, eq  # the last record: null
    assert "completion rate F = FINs / window = 28 flows/s" in eq, eq
    assert "then set the admit rate to none (no gating)" in eq, eq
