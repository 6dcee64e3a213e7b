"""The dashboard without a browser: the feed gives the numbers the run record holds, a
step runs exactly one control period, another address than loopback needs the token."""

from __future__ import annotations

import csv
import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from fairgate_exp.dashboard.feed import RunFeed, meta, plan_of_run, state_kind, state_of
from fairgate_exp.dashboard.gate import Gate
from fairgate_exp.dashboard.serve import Watched, serve
from fairgate_exp.dashboard.server import Dashboard
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import load

SMALL = """\
switches = ["s1", "s2"]
hosts = [{ name = "h1", switch = "s1" }, { name = "h2", switch = "s1" },
         { name = "r1", switch = "s2", ack_delay = "20ms" }, { name = "r2", switch = "s2" }]
links = [{ a = "s1", b = "s2", capacity = "300pkt/s" }]
flows = [{ name = "a", src = "h1", dst = "r1" },
         { name = "b", src = "h2", dst = "r2", start = "1s", stop = "3s" }]

[experiment]
duration = "4s"
warmup = "1s"
algorithms = ["qfcp", "lestas"]
"""


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("dash")
    (tmp / "small.toml").write_text(SMALL)
    run_dir, _ = run(load(tmp / "small.toml"), SimEngine, "sim", tmp / "results", None, print)
    return run_dir


def test_feed_replays_the_record_numbers(small_run: Path) -> None:
    plan = plan_of_run(small_run)
    feed = RunFeed(plan, small_run)
    events = feed.since(0)
    assert feed.done and events[-1]["k"] == "done"
    with (small_run / "flows.csv").open() as f:
        rows = list(csv.DictReader(f))
    flows = [(r["algo"], float(r["t"]), r["flow"], float(r["rate_pps"])) for r in rows]
    got = [(e["algo"], e["t"], e["flow"], round(e["pps"], 3)) for e in events if e["k"] == "flow"]
    assert sorted(got) == sorted(flows) and len(got) > 20
    with (small_run / "ports.csv").open() as f:
        ports = [(r["algo"], float(r["t"]), r["port"], float(r["util"])) for r in csv.DictReader(f)]
    got_p = [(e["algo"], e["t"], e["port"], e["util"]) for e in events if e["k"] == "port"]
    assert got_p == ports and len(got_p) > 20
    # the controller's own numbers ride along for the step view
    qfcp = [e for e in events if e["k"] == "port" and e["algo"] == "qfcp"]
    busy = [e for e in qfcp if not e["rec"].get("idle")]
    assert len(busy) > 20  # idle periods (no arrivals yet) carry the outage rule's "idle"
    assert all("N" in e["rec"] and "R_raw_Bps" in e["rec"] for e in busy)
    lestas = [e for e in events if e["k"] == "port" and e["algo"] == "lestas"]
    assert all("N_hat" in e["rec"] for e in lestas if not e["rec"].get("idle"))


def test_feed_is_incremental(small_run: Path) -> None:
    feed = RunFeed(plan_of_run(small_run), small_run)
    first = feed.since(0)
    assert feed.since(len(first)) == []


def test_replay_of_a_folder_that_is_not_a_run(tmp_path: Path) -> None:
    from fairgate_exp.__main__ import main

    assert main(["dashboard", str(tmp_path)]) == 2


def test_step_runs_exactly_one_period(tmp_path: Path) -> None:
    (tmp_path / "small.toml").write_text(SMALL)
    plan = load(tmp_path / "small.toml")
    gate = Gate(speed=0.0, paused=True)
    eng = SimEngine(gate=gate)
    eng.build(plan, "qfcp", tmp_path / "qfcp")
    for f in plan.flows:
        eng.start_flow(f)
    worker = threading.Thread(target=eng.advance, args=(2.0,), daemon=True)
    worker.start()
    measured = set(plan.measured)

    def periods() -> list[float]:
        return sorted({r["t"] for r in eng.port_records() if (r["switch"], r["port"]) in measured})

    assert periods() == []
    seen = []
    for _ in range(4):
        before = len(periods())
        gate.control("step")
        assert gate.wait_steps_done(10.0)
        worker.join(0.3)  # give a wrongly running engine time to overshoot
        now = periods()
        assert len(now) == before + 1, now
        assert gate.state()["periods"] == len(now)
        seen.append(now[-1])
    assert seen == sorted(seen) and len(set(seen)) == 4
    gate.control("resume", speed=0.0)
    worker.join(20)
    assert not worker.is_alive() and eng.now() >= 2.0
    eng.close()


def test_speed_must_be_a_number_at_least_zero() -> None:
    with pytest.raises(ValueError, match="speed"):
        Gate().control("resume", speed=-1.0)
    with pytest.raises(ValueError, match="unknown action"):
        Gate().control("jump")


def _get(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=5):
            return 200
    except urllib.error.HTTPError as exc:
        return exc.code


def test_other_address_needs_the_token(small_run: Path) -> None:
    lines: list[str] = []
    # 127.0.0.2 is loopback on Linux, but not the default address: the token rule applies
    dash = Dashboard(RunFeed(plan_of_run(small_run), small_run))
    served = serve(dash, "127.0.0.2", 0, lines.append)
    try:
        assert served.token and served.token in lines[0] and "token required" in lines[0]
        base = served.url.split("?")[0]
        for path in ("", "api/meta", "api/stream", "static/app.js"):
            assert _get(base + path) == 403, path
            assert _get(base + path + "?token=wrong") == 403, path
        assert _get(base + "api/meta?token=" + served.token) == 200
        assert _get(base + "static/app.js", {"Authorization": f"Bearer {served.token}"}) == 200
        with urllib.request.urlopen(base + "api/meta?token=" + served.token, timeout=5) as r:
            assert json.load(r)["experiment"] == "small"
    finally:
        served.stop()


def test_loopback_needs_no_token(small_run: Path) -> None:
    served = serve(Dashboard(RunFeed(plan_of_run(small_run), small_run)), say=lambda _m: None)
    try:
        assert served.token is None and served.url.startswith("http://127.0.0.1:")
        assert _get(served.url + "api/meta") == 200
        # a replay cannot be stepped
        req = urllib.request.Request(
            served.url + "api/control", data=b'{"action": "step"}', method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(req, timeout=5)
        assert err.value.code == 409
    finally:
        served.stop()


class FakeBmv2:
    """What the wrapper needs of the BMv2 engine: wall-clock t0, growing receiver samples."""

    name = "bmv2"

    def __init__(self) -> None:
        self.t0 = 1000.0
        self.t = 0.0

    def build(self, plan: object, algo: str, run_dir: Path) -> None:
        rec = {"t": self.t0 + 0.5, "switch": "s1", "port": 3, "period_s": 0.1}
        rec |= {"capacity_Bps": 1000.0, "y_Bps": 500.0, "departure_Bps": 400.0}
        rec |= {"queue_mean_bytes": 0.0, "drop_pkts": 0, "arrival_pkts": 5, "departure_pkts": 4}
        (run_dir / "controller.jsonl").write_text(json.dumps(rec) + "\n")

    def now(self) -> float:
        return self.t

    def advance(self, until_s: float) -> None:
        self.t = until_s

    def flow_samples(self) -> dict[str, list[tuple[float, int]]]:
        n = int(self.t / 0.5)
        return {"a": [(0.5 * i, 10 * i) for i in range(1, n + 1)]}


def test_bmv2_wrapper_copies_samples_and_t0(tmp_path: Path) -> None:
    from fairgate_exp.dashboard.serve import Watched

    (tmp_path / "small.toml").write_text(SMALL)
    plan = load(tmp_path / "small.toml")
    feed = RunFeed(plan)
    eng = Watched(FakeBmv2(), feed)
    eng.build(plan, "qfcp", tmp_path / "run" / "qfcp")
    assert feed.run_dir == tmp_path / "run"
    assert json.loads((tmp_path / "run" / "qfcp" / "t0.json").read_text()) == {"t0": 1000.0}
    eng.advance(1.0)
    eng.advance(2.0)
    lines = (tmp_path / "run" / "qfcp" / "flows.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == [
        {"t": 0.5 * i, "flow": "a", "rx_pkts": 10 * i} for i in range(1, 5)
    ]
    events = feed.since(0)
    flows = [e for e in events if e["k"] == "flow"]
    assert [(e["t"], e["pps"]) for e in flows] == [(1.0, 20.0), (1.5, 20.0), (2.0, 20.0)]
    ports = [e for e in events if e["k"] == "port"]
    assert [(e["t"], e["port"], e["util"]) for e in ports] == [(0.5, "s1->s2", 0.4)]


def test_wall_clock_records_without_t0_are_placed_by_ports_csv(
    small_run: Path, tmp_path: Path
) -> None:
    """A BMv2 record from before t0.json: controller times are wall clock."""
    import shutil

    copy = tmp_path / "run"
    shutil.copytree(small_run, copy)
    for algo in ("qfcp", "lestas"):
        path = copy / algo / "controller.jsonl"
        recs = [json.loads(x) for x in path.read_text().splitlines()]
        path.write_text("".join(json.dumps({**r, "t": r["t"] + 1.7e9}) + "\n" for r in recs))
    events = RunFeed(plan_of_run(copy), copy).since(0)
    got = sorted((e["algo"], e["port"], e["util"], e["t"]) for e in events if e["k"] == "port")
    with (copy / "ports.csv").open() as f:
        want = sorted(
            (r["algo"], r["port"], float(r["util"]), float(r["t"])) for r in csv.DictReader(f)
        )
    assert len(got) == len(want) > 20
    for g, w in zip(got, want, strict=True):
        assert g[:3] == w[:3] and g[3] == pytest.approx(w[3], abs=2e-4)


def test_speed_paces_simulated_time(tmp_path: Path) -> None:
    import time

    (tmp_path / "small.toml").write_text(SMALL)
    plan = load(tmp_path / "small.toml")
    eng = SimEngine(gate=Gate(speed=2.0))
    eng.build(plan, "qfcp", tmp_path / "qfcp")
    for f in plan.flows:
        eng.start_flow(f)
    t0 = time.perf_counter()
    eng.advance(1.0)  # 1 simulated second at 2 sim s per wall s: at least 0.5 s
    paced = time.perf_counter() - t0
    eng.gate.control("speed", speed=0.0)
    t1 = time.perf_counter()
    eng.advance(2.0)  # flat out: this small net simulates far faster than real time
    flat = time.perf_counter() - t1
    eng.close()
    assert paced >= 0.5 * 0.95 and paced < 3.0
    assert flat < paced


XCP_SMALL = SMALL.replace('algorithms = ["qfcp", "lestas"]', 'algorithms = ["xcp"]')


def test_xcp_state_rides_on_the_port_events(tmp_path: Path) -> None:
    """XCP's per-interval update (phi, h, xi_p, xi_n) reaches the page from the record."""
    (tmp_path / "x.toml").write_text(XCP_SMALL)
    run_dir, _ = run(load(tmp_path / "x.toml"), SimEngine, "sim", tmp_path, None, print)
    plan = plan_of_run(run_dir)
    assert meta(plan, run_dir)["kinds"]["xcp"] == "xcp"
    events = RunFeed(plan, run_dir).since(0)
    assert {"k": "algo", "algo": "xcp", "kind": "xcp"} in events
    ports = [e for e in events if e["k"] == "port" and e["algo"] == "xcp"]
    keys = {"xcp_phi_bytes", "xcp_h_bytes", "xcp_xi_p", "xcp_xi_n"}
    assert ports and all(set(e["state"]) == keys for e in ports)
    updated = [e for e in ports if e["state"]["xcp_phi_bytes"] is not None]
    # the bottleneck's d is ~0.1 s, the period 0.1 s: most periods carry an update
    assert len(updated) > len(ports) / 3, (len(updated), len(ports))
    for e in updated:
        for key in keys:
            assert e["state"][key] == e["rec"][key]
        # the record's numbers are XCP's equations (the page shows them in the step view)
        r = e["rec"]
        phi = 0.4 * r["xcp_d_s"] * (r["capacity_Bps"] - r["xcp_y_Bps"]) - 0.226 * r["xcp_q_bytes"]
        assert r["xcp_phi_bytes"] == pytest.approx(phi, rel=1e-9, abs=1e-6)
        h = max(0.0, 0.1 * r["xcp_y_Bps"] * r["xcp_d_s"] - abs(phi))
        assert r["xcp_h_bytes"] == pytest.approx(h, rel=1e-9, abs=1e-6)
    # a port with traffic both ways round: phi goes negative while the queue is high
    assert any(e["state"]["xcp_phi_bytes"] < 0 for e in updated)
    assert any(e["state"]["xcp_phi_bytes"] > 0 for e in updated)


def _session_rec(t: float, admit: float | None) -> dict[str, object]:
    rec: dict[str, object] = {
        "t": t, "switch": "s1", "port": 2, "period_s": 0.1, "capacity_Bps": 750000.0,
        "y_Bps": 7260.0, "departure_Bps": 7260.0, "arrival_pkts": 11, "departure_pkts": 11,
        "drop_pkts": 5, "queue_mean_bytes": 6918.5, "queue_min_bytes": 6470.3,
        "queue_overflow_pkts": 0, "rtt_mean_s": None, "syn_admitted": 1, "syn_dropped": 3,
        "syn_ungated": 1, "fins": 7, "rsts": 0, "completions": 7,
    }  # fmt: skip
    if admit is not None:  # the session controller's update (every window, not every period)
        rec.update(admit_fps=admit, window_completions_fps=admit - 2, window_admitted_fps=admit)
    return rec


def test_session_control_variants_get_admit_and_completion_rates(tmp_path: Path) -> None:
    """A session-control run's variant folders (records written here, in the format the
    session controller writes) show admit rate and completion rate per gated port."""
    plan = load("session-control")
    kinds = meta(plan, None)["kinds"]
    assert meta(plan, None)["duration_s"] == 153.0  # the longest variant (all run 153 s)
    assert kinds["strategy2"] == kinds["static-50"] == "session" and kinds["qfcp"] == "qfcp"
    (tmp_path / "experiment.json").write_text("{}")
    (tmp_path / "strategy2").mkdir()
    recs = [_session_rec(0.1, None), _session_rec(0.2, 40.0), _session_rec(0.3, 44.5)]
    (tmp_path / "strategy2" / "controller.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in recs)
    )
    events = RunFeed(plan, tmp_path).since(0)
    assert {"k": "algo", "algo": "strategy2", "kind": "session"} in events
    got = [(e["t"], e["state"]) for e in events if e["k"] == "port"]
    keys = ("admit_fps", "window_completions_fps", "window_admitted_fps")
    assert got == [
        (0.1, dict.fromkeys(keys)),
        (0.2, {"admit_fps": 40.0, "window_completions_fps": 38.0, "window_admitted_fps": 40.0}),
        (0.3, {"admit_fps": 44.5, "window_completions_fps": 42.5, "window_admitted_fps": 44.5}),
    ]


def test_ficcrd_state_is_its_core_counters_mapr_and_dpf() -> None:
    """FICCRD's records (controller.ficcrd) carry per-period counts of the core queue's
    MAPR updates and of explicit rates lowered by DPF x MAPR, and the switch's MAPR and
    DPF (left out when the registers were not read): those are its state charts."""
    rec = {"t": 60.9, "mapr_updated": 11, "mapr_held": 6, "er_lowered": 11, "er_kept": 1}
    rec |= {"ficcrd_mapr_kbps": 457, "ficcrd_dpf": 1.125, "ficcrd_q0_pkts": 100.0}
    assert state_of(state_kind("ficcrd", []), rec) == {
        "mapr_updated": 11.0,
        "mapr_held": 6.0,
        "er_lowered": 11.0,
        "er_kept": 1.0,
        "ficcrd_mapr_kbps": 457.0,
        "ficcrd_dpf": 1.125,
        "ficcrd_queue_pkts": None,
        "ficcrd_q0_pkts": 100.0,
    }
    assert state_of(state_kind("none", []), rec) == {}
    assert state_kind("none", ["none", "strategy1"]) == "session"  # session-control's "none"


def test_watched_engine_offers_the_inner_engines_tcp_and_cm() -> None:
    """A live session-control (TCP) run called Watched.start_tcp, which it lacked."""

    class Inner:
        name = "sim"

        def __init__(self) -> None:
            self.started: list[str] = []

        def start_tcp(self, gen: str) -> None:
            self.started.append(gen)

    inner = Inner()
    watched = Watched(inner, RunFeed(load("session-control")))
    watched.start_tcp("uploads")
    assert inner.started == ["uploads"]
