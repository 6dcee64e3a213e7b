"""Session control on synthetic completion-rate curves (tests/unit/controller/synthetic.py)."""

import math
import statistics
from collections.abc import Callable
from dataclasses import replace

import pytest
from synthetic import Driver, collapse, flat, lab, lab_flows, piecewise, table1

from fairgate_controller.algorithms import (
    Phase,
    PortMeasurement,
    ProbeResult,
    RelativeCusum,
    SessionController,
    SessionParams,
    StaticGate,
)
from fairgate_controller.algorithms.session import clearly_better, pooled

SEEDS = range(5)


def _centre_median(driver: Driver, controller: SessionController, windows: int) -> float:
    centres = []
    for _ in range(windows):
        driver.step()
        if controller.best_admit_fps is not None:
            centres.append(controller.best_admit_fps)
    assert centres, "never settled on a gated operating point"
    return statistics.median(centres)


def test_starts_ungated_and_measures_the_baseline_first():
    c = SessionController()
    assert c.admit_fps is None and c.phase is Phase.BASELINE
    for _ in range(3):  # measure_windows = 3, no settle for the first baseline
        out = c.update(admitted_syns=1000, completions=40, window_s=1.0, offered_syns=1000)
    assert c.baseline is not None and c.baseline.completion_fps == 40
    assert c.phase is Phase.SEARCH and out is not None and out < 1000


@pytest.mark.parametrize("seed", SEEDS)
def test_strategy1_finds_sharp_optimum_within_5_percent(seed):
    c = SessionController(SessionParams(strategy=1))
    d = Driver(c, collapse(250.0), offered_fps=1000.0, seed=seed)
    d.run(80)  # baseline + golden-section search fit in 80 windows
    assert c.phase is Phase.TRACK
    assert _centre_median(d, c, 120) == pytest.approx(250.0, rel=0.05)


@pytest.mark.parametrize("seed", SEEDS)
def test_strategy1_on_table1_curve_stays_on_the_plateau(seed):
    # the 100-250 flows/s plateau is only 7 % high: average 6 windows per probe to see it
    c = SessionController(SessionParams(strategy=1, measure_windows=6))
    curve = table1()
    d = Driver(c, curve, offered_fps=1000.0, seed=seed)
    d.run(130)
    # Table I's 100-250 flows/s plateau is 7 % high, close to the noise: ask for 93 % of the
    # best completion rate (no gating completes 41 %)
    assert curve(_centre_median(d, c, 150)) >= 0.93 * 107.1


@pytest.mark.parametrize("seed", SEEDS)
def test_strategy1_finds_the_optimum_again_after_shifts(seed):
    c = SessionController(SessionParams(strategy=1))
    d = Driver(c, collapse(250.0), offered_fps=1000.0, seed=seed)
    d.run(150)
    d.curve = collapse(125.0)  # e.g. capacity halves
    d.run(100)
    assert _centre_median(d, c, 60) == pytest.approx(125.0, rel=0.10)
    d.curve = collapse(400.0)  # more capacity
    d.run(100)
    assert _centre_median(d, c, 60) == pytest.approx(400.0, rel=0.10)


def test_change_in_offered_load_restarts_the_search():
    c = SessionController()
    d = Driver(c, collapse(100.0), offered_fps=1000.0, seed=3)
    d.run(150)
    restarts = c.restarts
    d.offered_fps = 300.0
    d.curve = collapse(100.0)
    d.run(40)
    assert c.restarts > restarts


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("tolerance", [0.0, 0.2])
def test_strategy2_settles_where_it_admits_as_fast_as_flows_complete(seed, tolerance):
    # Table I's curve has no SYN retries (F = A up to the knee, 100 flows/s): with no
    # tolerance strategy 2 settles at the knee; with the default one (for the retries the
    # simulator and the lab admit) where the admit rate is 1 + tol times the completion
    # rate, 121 flows/s here; strategy 1 would sit near 250 (completing 107/s)
    p = SessionParams(strategy=2, admit_tolerance=tolerance)
    c = SessionController(p)
    curve = table1()
    d = Driver(c, curve, offered_fps=1000.0, seed=seed)
    d.run(360)
    installed = [s for s in d.settings[-240:] if s is not None]
    ratios = [a / curve(a) for a in installed]  # admit rate over the completion rate it gets
    assert statistics.median(ratios) == pytest.approx(1.0 + tolerance, abs=0.015)
    if tolerance == 0.0:
        assert statistics.median(installed) == pytest.approx(100.0, rel=0.10)
    # the balance's steps (at most 2 x probe_offset) average the noise: excursions stay rare
    assert sum(r > 1.0 + tolerance + p.probe_offset for r in ratios) <= 0.1 * len(ratios)


def _strategy2_on_lab(params: SessionParams, seed: int) -> tuple[float, float]:
    """Mean completion rate (fraction of the peak) and median A/F over 2 minutes, after
    3 minutes of searching, on the lab's curve (2 s windows, Poisson-like 10 % noise)."""
    curve = lab()
    c = SessionController(params)
    d = Driver(c, curve, offered_fps=900.0, window_s=2.0, noise=0.1, seed=seed)
    d.run(150)
    installed = [900.0 if s is None else min(s, 900.0) for s in d.settings[-60:]]
    got = statistics.mean(curve(a) for a in installed) / curve(75.0)
    return got, statistics.median(a / curve(a) for a in installed)


@pytest.mark.parametrize("seed", SEEDS)
def test_strategy2_reaches_the_lab_knee_without_outrunning_completions(seed):
    # The climb / hold / project rules (balance_gain 0). On the lab's curve 7 % of the
    # admitted SYNs at 50/s are retries: projecting onto F itself (not F (1 + tol)) and
    # climbing only when A <= F exactly, with a 3 % tolerance, stopped strategy 2 at
    # 69-88 % of the peak; the boundary projection, the climb margin and an 8 % tolerance
    # reach 90-96 % at A / F <= 1 + tol.
    p = SessionParams(strategy=2, balance_gain=0.0, admit_tolerance=0.08)
    got, ratio = _strategy2_on_lab(p, seed)
    old = replace(p, admit_tolerance=0.03, project_to_boundary=False, climb_fraction=0.0)
    got_old, _ = _strategy2_on_lab(old, seed)
    assert got >= 0.88, got
    assert got >= got_old + 0.03, (got, got_old)
    assert ratio <= 1.0 + p.admit_tolerance + p.noise_z / (45.0 * 12.0) ** 0.5


def _strategy2_on_lab_flows(params: SessionParams, seed: int) -> tuple[float, float, float]:
    """Mean completion rate (fraction of the best static gate, 75/s), connected /
    completed flows and admitted SYNs / completed flows over 2 minutes, after 3 minutes of
    searching, on the lab-scale simulator's curves with connections measured (2 s windows,
    10 % noise on F, Poisson noise on the connections)."""
    completed, connected = lab_flows()
    c = SessionController(params)
    d = Driver(
        c, completed, offered_fps=655.0, window_s=2.0, noise=0.1, seed=seed, connected=connected
    )
    d.run(150)
    installed = [655.0 if s is None else min(s, 655.0) for s in d.settings[-60:]]
    f = statistics.mean(completed(a) for a in installed)
    return (
        f / completed(75.0),
        statistics.mean(connected(a) for a in installed) / f,
        statistics.mean(installed) / f,
    )


def test_strategy2_admits_no_faster_than_flows_complete_on_the_lab_flows():
    # Connections balance completions (no pile-up) at every meter rate up to 60/s, so the
    # balance of connections against completions settled anywhere up to 60/s, where 29 %
    # of the admitted SYNs are retries and FCTs are long (the lab-scale simulator: mean
    # FCT 3.7 s for the flows arriving at a static 60/s gate against 1.7-2.1 s at 50/s).
    # Bounding the admitted SYNs by the completions (within the 20 % tolerance for retries)
    # settles near 52/s: no pile-up, at most 1 + tol, and still 93 % of the best static
    # gate on these curves (whose 50/s point, 44.2 flows/s, is the lowest the simulator
    # measured; it completed 45.5-46.6 in three other seeds).
    p = SessionParams(strategy=2)
    runs = [_strategy2_on_lab_flows(p, seed) for seed in SEEDS]
    assert statistics.median(got for got, _, _ in runs) >= 0.92, runs
    assert max(piled for _, piled, _ in runs) <= 1.01, runs
    assert statistics.mean(admitted for _, _, admitted in runs) <= 1.0 + p.admit_tolerance, runs


def test_strategy2_search_penalises_syns_outrunning_completions():
    # One search probe of BMv2's lab (run 20261128T124920Z-bmv2-file-741efe8): the gate
    # admitted 77 SYNs/s, 53.3 flows/s connected (the queue behind the gate dropped a
    # third of the SYNs) and 51.9 completed. Connections kept pace with completions, so a
    # penalty on connections never fired and the search settled there; strategy 2 bounds
    # the admit rate, SYNs admitted, by the completions (within the admit tolerance).
    p = SessionParams(strategy=2, settle_windows=0, measure_windows=1)
    c = SessionController(p)
    c.update(admitted_syns=316.0, completions=28.2, window_s=1.0, offered_syns=316.0)
    assert c.phase is Phase.SEARCH
    c.update(
        admitted_syns=77.0, completions=51.9, window_s=1.0, offered_syns=316.0, connections=53.3
    )
    excess = 77.0 - 51.9 * (1.0 + p.admit_tolerance + p.noise_z * (1 / 51.9 + 1 / 53.3) ** 0.5)
    assert c.evaluations[-1].objective == pytest.approx(51.9 - p.penalty * excess)
    assert c.evaluations[-1].objective < 0.0
    # within the tolerance the objective is the completions the probe sustains
    c.update(
        admitted_syns=55.0, completions=48.0, window_s=1.0, offered_syns=316.0, connections=47.0
    )
    assert c.evaluations[-1].objective == pytest.approx(47.0)


@pytest.mark.parametrize("seed", SEEDS)
def test_strategy2_search_ends_where_syns_keep_pace_with_completions(seed):
    # On the lab-scale simulator's curves flows connect as fast as they complete up to
    # 60-65 SYNs/s, where 29-40 % of the admitted SYNs are retries: the search that
    # penalised connections ended at up to 66/s (A/F 1.43). It now ends within the
    # admit tolerance plus the windows' 10 % noise.
    completed, connected = lab_flows()
    p = SessionParams(strategy=2)
    c = SessionController(p)
    d = Driver(
        c, completed, offered_fps=655.0, window_s=2.0, noise=0.1, seed=seed, connected=connected
    )
    while c.last_search_fps is None:
        d.run(1)
    end = c.last_search_fps
    assert end / completed(end) <= 1.0 + p.admit_tolerance + 0.1, end


def _strategy2_tracking(gain: float = 0.5) -> SessionController:
    """Strategy 2 tracking after a search and confirm on F = 50 flows/s (1 s windows)."""
    c = SessionController(
        SessionParams(strategy=2, balance_gain=gain, settle_windows=0, measure_windows=1)
    )
    c.update(500.0, 20.0, 1.0, 500.0, 500.0)  # baseline: ungated
    while c.phase is not Phase.TRACK:  # search and confirm on F = 50, A = F
        c.update(c.admit_fps or 500.0, 50.0, 1.0, 500.0, 50.0)
    return c


def test_strategy2_balance_step_follows_the_admit_rate_over_the_completion_rate():
    # one pair admitting SYNs 30 % faster than flows complete (10 % over the 20 %
    # tolerance): the centre falls by gain x 10 %; 10 % faster (10 % under it): it rises
    # as much; a large excess is capped at 2 offsets
    def centre_after(
        ratio: float, gain: float = 0.5, connected: float | None = 1.0, completed: float = 1.0
    ) -> float:
        """Log-move of the centre after one pair admitting ``ratio`` x F SYNs, completing
        ``completed`` x F and connecting ``connected`` x F (None: not measured)."""
        c = _strategy2_tracking(gain)
        before = c.best_admit_fps
        assert before is not None
        f = before / ratio
        conn = None if connected is None else connected * f
        c.update(before, completed * f, 1.0, 500.0, conn)  # lower probe
        c.update(before, completed * f, 1.0, 500.0, conn)  # upper probe: the pair is judged
        after = c.best_admit_fps
        assert after is not None
        return math.log(after / before)

    # no noise allowance: the step's mean is zero exactly where A = F (1 + tol)
    assert centre_after(1.3) == pytest.approx(-0.05, abs=1e-9)
    assert centre_after(1.1) == pytest.approx(0.05, abs=1e-9)
    assert centre_after(2.0) == pytest.approx(-0.1, abs=1e-9)  # capped at 2 x 0.05
    assert centre_after(1.3, gain=1.0) == pytest.approx(-0.1, abs=1e-9)
    # A counts the SYNs admitted, retries included: flows that connect as fast as they
    # complete do not make 30 % more SYNs feasible (the balance of connections did)
    assert centre_after(1.3, connected=1.0) == pytest.approx(-0.05, abs=1e-9)
    # F is capped at the connections: completions beyond them (a backlog draining, or
    # BMv2's FINs counted twice) do not let the gate admit faster
    assert centre_after(1.3, completed=1.25) == pytest.approx(-0.05, abs=1e-9)
    # without connections measured the same balance (not the climb / hold / project rules)
    assert centre_after(1.3, connected=None) == pytest.approx(-0.05, abs=1e-9)
    assert centre_after(1.1, connected=None) == pytest.approx(0.05, abs=1e-9)


@pytest.mark.parametrize("check", [True, False])
def test_strategy2_distrusts_connections_once_completions_exceed_them(check):
    # a completion counter that over-counts (BMv2: retransmitted server FINs) makes the
    # completions counted since the start exceed the connections; every flow connects
    # before it completes, so the connections are then not comparable with it
    c = SessionController(SessionParams(strategy=2, check_connections=check))
    for _ in range(20):  # 60 connect, 50 complete per window: consistent
        c.update(100.0, 50.0, 1.0, 500.0, 60.0)
    assert c.connections_trusted
    assert all(r.connected_fps is not None for r in c.evaluations)
    for _ in range(20):  # now 90 FINs per 60 SYN-ACKs: the totals cross after 7 windows
        c.update(100.0, 90.0, 1.0, 500.0, 60.0)
    assert c.connections_trusted is not check
    latest = c.evaluations[-1]
    assert (latest.connected_fps is None) is check
    for _ in range(10):  # consistent again: the distrust stays (the counter's flaw does)
        c.update(100.0, 10.0, 1.0, 500.0, 60.0)
    assert c.connections_trusted is not check


def test_pooled_pair_sums_counts_and_averages_rates():
    a = ProbeResult(40.0, 38.0, 40.0, 800.0, 1.0, completions=228.0)
    b = ProbeResult(42.0, 40.0, 42.0, None, 2.0, completions=240.0)
    both = pooled(a, b)
    assert (both.admit_fps, both.objective) == (42.0, 2.0)
    assert (both.completion_fps, both.admitted_fps, both.completions) == (39.0, 41.0, 468.0)
    assert both.offered_fps is None
    assert pooled(a, a).offered_fps == 800.0


def test_strategy2_projects_onto_completion_rate_when_admissions_outrun():
    p = SessionParams(strategy=2)
    c = SessionController(p)
    d = Driver(c, table1(), offered_fps=1000.0, noise=0.0, seed=0)
    d.run(150)
    centre = c.best_admit_fps
    assert centre is not None
    d.curve = table1(0.7)  # capacity falls: completions drop below the admit rate
    d.run(60)
    assert c.best_admit_fps is not None and c.best_admit_fps <= 0.75 * centre


@pytest.mark.parametrize("strategy", [1, 2])
def test_floor_holds_when_gating_harder_always_looks_better(strategy):
    # completions grow as admissions fall (collapse everywhere): the search runs into the floor.
    # The curve completes more than it admits below 20 flows/s, which the drain correction
    # reads as a backlog draining (not sustainable), so it is off here.
    p = SessionParams(strategy=strategy, floor_fps=5.0, low_fraction=1e-3, drain_correction=False)
    c = SessionController(p)
    d = Driver(c, lambda a: 200.0 / (1.0 + a / 10.0), offered_fps=1000.0, seed=2)
    d.run(300)
    gated = [s for s in d.settings if s is not None]
    assert gated and min(gated) >= 5.0
    assert min(gated) <= 6.0  # and it does get (close) to it


@pytest.mark.parametrize("strategy", [1, 2])
@pytest.mark.parametrize("seed", SEEDS)
def test_no_gating_when_gating_does_not_help(strategy, seed):
    c = SessionController(SessionParams(strategy=strategy))
    d = Driver(c, flat(300.0), offered_fps=300.0, seed=seed)
    d.run(100)
    assert c.phase is Phase.UNGATED
    d.run(50)
    assert all(s is None for s in d.settings[-40:])


def test_ungated_restarts_when_load_changes():
    c = SessionController()
    d = Driver(c, flat(300.0), offered_fps=300.0, seed=1)
    d.run(100)
    assert c.phase is Phase.UNGATED
    d.offered_fps = 1000.0
    d.curve = collapse(150.0)
    d.run(120)
    assert c.restarts >= 1 and c.phase is Phase.TRACK


def test_periodic_research_from_ungated():
    c = SessionController(SessionParams(research_every_windows=30))
    d = Driver(c, flat(300.0), offered_fps=300.0, noise=0.0, seed=1)
    d.run(200)
    assert c.restarts >= 2


def test_update_from_port_measurement():
    c = SessionController()
    m = PortMeasurement(period_s=2.0, capacity_Bps=1.0, syn_ungated=100, fins=30)
    for _ in range(3):
        c.update_from(m)
    assert c.baseline is not None
    assert c.baseline.completion_fps == 15.0 and c.baseline.offered_fps == 50.0


def test_deterministic():
    def run() -> list[float | None]:
        d = Driver(SessionController(), table1(), offered_fps=1000.0, seed=7)
        d.run(200)
        return d.settings

    assert run() == run()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"strategy": 3},
        {"floor_fps": 0.0},
        {"measure_windows": 0},
        {"settle_windows": -1},
        {"step_min": 0.2, "step_initial": 0.1},
        {"capacity_hint_fps": -5.0},
        {"research_every_windows": -1},
    ],
)
def test_params_validation(kwargs):
    with pytest.raises(ValueError):
        SessionParams(**kwargs)


@pytest.mark.parametrize(
    "args", [(-1, 0, 1.0, None), (0, -1, 1.0, None), (0, 0, 0.0, None), (0, 0, 1.0, -3)]
)
def test_update_rejects_bad_windows(args):
    with pytest.raises(ValueError):
        SessionController().update(*args)


def test_capacity_hint_narrows_the_search():
    hint = SessionController(SessionParams(capacity_hint_fps=100.0))
    d = Driver(hint, collapse(180.0), offered_fps=1000.0, seed=4)
    d.run(60)
    probed = [r.admit_fps for r in hint.evaluations if r.admit_fps is not None]
    assert probed and min(probed) >= 50.0 - 1e-9 and max(probed) <= 400.0 + 1e-9


def test_cusum_alarms_on_shift_not_on_noise():
    cusum = RelativeCusum(drift=0.1, threshold=0.3)
    assert not any(cusum.update(x) for x in [100, 104, 97, 102, 99, 103, 96, 101] * 5)
    assert cusum.alarm is None
    assert cusum.update(50.0)  # a 50 % drop alarms at once
    assert cusum.alarm == "fall"
    cusum.reset()
    cusum.update(100.0)
    alarms = [cusum.update(122.0) for _ in range(3)]
    assert alarms == [False, False, True]  # a 22 % rise adds 0.12 per sample over the drift
    assert cusum.alarm == "rise"
    assert not cusum.update(100.0) and cusum.alarm is None  # the next sample: a reference


def test_cusum_band_absorbs_a_move_and_judges_beyond_it():
    # the band reference x [low, high]: a sample inside it adds nothing but the drift's
    # credit; below low, the lower sum grows as far below reference x low as it is
    banded = RelativeCusum(drift=0.1, threshold=0.3)
    banded.update(100.0)
    assert not any(banded.update(80.0, low=0.8) for _ in range(10))  # F followed a 0.8x move
    assert not any(banded.update(125.0, high=1.25) for _ in range(10))
    assert banded.update(40.0, low=0.8)  # 0.5 of the band's low edge: at once
    plain = RelativeCusum(drift=0.1, threshold=0.3)
    plain.update(100.0)
    assert [plain.update(80.0) for _ in range(4)] == [False, False, False, True]
    for low, high in [(0.0, 1.0), (1.2, 1.5), (0.5, 0.9)]:
        with pytest.raises(ValueError, match="need 0 < low <= 1 <= high"):
            plain.update(100.0, low=low, high=high)


def test_strategy1_steps_do_not_hide_a_capacity_halving():
    # Completions fall over two pairs (the capacity halves while a pair runs). Strategy 1's
    # steps on a flat top grow x1.5 while they repeat (0.05, 0.075, 0.1125 in log); the
    # third is larger than the CUSUM's drift, and re-learning the reference there (the code
    # until 2026-11-29) made the halved rate the new normal: session-control-capacity, lab
    # scale with delayed acks, detected the halving 92 s late. The reference now stays,
    # widened by how far the centre moved, and the collapse alarms one pair later.
    c = SessionController(SessionParams(strategy=1, settle_windows=0, measure_windows=1))
    c.update(500.0, 20.0, 1.0, 500.0)  # baseline: ungated
    while c.phase is not Phase.TRACK:  # search and confirm: F = a up to 100 flows/s
        c.update(c.admit_fps or 500.0, min(c.admit_fps or 500.0, 100.0), 1.0, 500.0)
    start = c.best_admit_fps
    assert start is not None and start > 80.0

    def pair(f: float) -> None:  # both probes complete f flows/s (a flat top)
        for _ in range(2):
            c.update(c.admit_fps or 0.0, f, 1.0, 500.0)

    restarts = c.restarts
    pair(40.0)  # the reference
    pair(40.0)
    pair(28.0)  # straddles the halving
    centre = c.best_admit_fps
    assert centre is not None and math.log(start / centre) == pytest.approx(0.2375, abs=1e-6)
    assert c.restarts == restarts  # the three steps down were the search's own
    pair(18.0)
    assert c.restarts == restarts + 1


def test_a_climb_past_the_reference_span_does_not_hide_a_halving():
    # The pair that straddles the halving runs its upper probe first, before it (60
    # flows/s), and its lower probe after (15): the upper looks clearly better, the centre
    # climbs, and the climb takes it past ``reference_span`` from where the completion
    # reference was learned. Re-learning the reference there made the halved rate the new
    # normal and the halving was never detected (BMv2, session-control-capacity, lab scale:
    # detected 147 s late, run 20261129T122943Z-bmv2-lab-b149b1f). While the detector holds
    # evidence of a drop the reference stays, and the next pair alarms.
    c = SessionController(SessionParams(strategy=1, settle_windows=0, measure_windows=1))
    c.update(500.0, 20.0, 1.0, 500.0)  # baseline: ungated
    while c.phase is not Phase.TRACK:  # search and confirm: F = a up to 100 flows/s
        c.update(c.admit_fps or 500.0, min(c.admit_fps or 500.0, 100.0), 1.0, 500.0)
    start, restarts = c.best_admit_fps, c.restarts
    assert start is not None
    probes: list[tuple[bool, float]] = []  # (upper, completions/s) per probe
    for i in range(12):
        centre, admit = c.best_admit_fps, c.admit_fps
        if centre is None or admit is None:
            break
        upper = admit > centre
        f = (60.0 if upper else 40.0) if i < 7 else 15.0  # the halving after probe 6
        probes.append((upper, f))
        c.update(admit, f, 1.0, 500.0)
        if c.restarts > restarts:
            break
    # the climb: upper probes clearly better, the centre 0.406 above its start in log by
    # the straddling pair (more than reference_span, 0.3)
    assert probes[6] == (True, 60.0) and probes[7] == (False, 15.0)
    assert c.restarts == restarts + 1 and len(probes) == 10  # the pair after it alarms


@pytest.mark.parametrize("strategy", [1, 2])
@pytest.mark.parametrize(("drain", "expected"), [(True, 20.0), (False, 80.0)])
def test_drain_correction_counts_at_most_the_admissions(strategy, drain, expected):
    # a probe right after a cut completes the backlog of earlier admissions: 80 flows/s
    # complete while 20/s are admitted; only 20 of them are the probe's own (strategy 2
    # too: without it its search on BMv2 took such a probe for the best and gated at a
    # third below the knee)
    p = SessionParams(
        strategy=strategy, settle_windows=0, measure_windows=1, drain_correction=drain
    )
    c = SessionController(p)
    c.update(admitted_syns=200.0, completions=20.0, window_s=1.0, offered_syns=200.0)
    assert c.phase is Phase.SEARCH and c.admit_fps is not None
    c.update(admitted_syns=20.0, completions=80.0, window_s=1.0, offered_syns=200.0)
    assert c.evaluations[-1].objective == pytest.approx(expected)


def test_confirm_does_not_reopen_the_gate_unless_asked():
    # after the search, the winner is compared with the baseline: no ungated probe
    c = SessionController(SessionParams(strategy=1))
    d = Driver(c, table1(), offered_fps=1000.0, noise=0.0, seed=0)
    d.run(120)
    assert c.phase is Phase.TRACK
    first_gate = next(i for i, s in enumerate(d.settings) if s is not None)
    assert all(s is not None for s in d.settings[first_gate:])
    c2 = SessionController(SessionParams(strategy=1, confirm_ungated=True))
    d2 = Driver(c2, table1(), offered_fps=1000.0, noise=0.0, seed=0)
    d2.run(120)
    first_gate = next(i for i, s in enumerate(d2.settings) if s is not None)
    assert any(s is None for s in d2.settings[first_gate:])


def _tracking_on_collapse(
    params: SessionParams, seed: int = 2
) -> tuple[SessionController, Driver, float]:
    """A controller tracking a sharp optimum at 250 flows/s (1000 offered), its centre."""
    c = SessionController(params)
    d = Driver(c, collapse(250.0), offered_fps=1000.0, seed=seed)
    d.run(150)
    assert c.phase is Phase.TRACK
    centre = c.best_admit_fps
    assert centre is not None
    return c, d, centre


@pytest.mark.parametrize("warm", [True, False])
def test_change_detected_in_track_searches_again_around_the_centre(warm):
    # a change while tracking (capacity halves: the optimum 250 -> 125): the warm restart
    # searches centre x e^(+-restart_span) at once and never opens the gate for a baseline
    # (at the paper's scale an ungated baseline let ~12 000 SYNs in); cold opens it
    c, d, centre = _tracking_on_collapse(SessionParams(strategy=1, warm_restart=warm))
    restarts, n = c.restarts, len(d.settings)
    d.curve = collapse(125.0)
    d.run(100)
    after = d.settings[n:]
    assert c.restarts > restarts
    if warm:
        assert all(s is not None for s in after)
        span = math.exp(c.params.restart_span)
        assert centre / span * 0.99 <= min(after) and max(after) <= centre * span * 1.01
        assert _centre_median(d, c, 60) == pytest.approx(125.0, rel=0.10)
    else:
        assert None in after


@pytest.mark.parametrize("below", [True, False])
def test_a_fall_of_completions_alone_searches_below_the_centre(below):
    # the capacity halves (optimum 250 -> 125) at the same offered load: the completion
    # rate falls and the offered rate does not, so the optimum did not rise and the warm
    # search keeps to [centre / e^1.1, centre]. Its upper half overloads the halved
    # network: in the paper-scale simulator the probes after such a probe were measured in
    # its wake and the search ended at 0.82 of the best static gate.
    c, d, centre = _tracking_on_collapse(SessionParams(strategy=1, below_after_fall=below))
    restarts, n = c.restarts, len(d.settings)
    d.curve = collapse(125.0)
    while c.restarts == restarts:
        d.step()
    assert len(d.settings) - n < 40  # detected within a few pairs
    restart_at = len(d.settings)
    d.run(40)  # the warm search's probes
    probes = d.settings[restart_at:]
    assert None not in probes
    if below:
        assert max(probes) <= centre * (1.0 + 1e-9)
        assert min(probes) >= centre / math.exp(c.params.restart_span) * (1.0 - 1e-9)
        assert _centre_median(d, c, 60) == pytest.approx(125.0, rel=0.10)
    else:
        assert max(probes) > centre * 1.2  # the full warm bracket's upper point


def test_a_fall_of_the_offered_load_searches_the_whole_warm_bracket():
    # the offered rate falls too (section V's 1000 -> 500 flows/s): a change of load, not of
    # the network, so the search keeps the bracket above the centre as well
    c, d, centre = _tracking_on_collapse(SessionParams(strategy=1))
    restarts = c.restarts
    d.offered_fps = 600.0
    d.curve = collapse(200.0)
    while c.restarts == restarts:
        d.step()
    restart_at = len(d.settings)
    d.run(40)
    probes = [s for s in d.settings[restart_at:] if s is not None]
    assert probes and max(probes) > centre * 1.1  # above it: never with the narrowed bracket


def test_warm_restart_brackets_the_centre_however_many_syns_are_offered():
    # while gated, the offered SYN rate counts every retry of a dropped SYN (1500 flows/s
    # offered read as ~7000 SYNs/s in the paper-scale simulator): 5 % of it as the warm
    # bracket's low end put the search at 350-430 flows/s, above the optimum (150-250)
    c = SessionController(SessionParams(strategy=1))
    d = Driver(c, collapse(250.0), offered_fps=1000.0, seed=2)
    d.run(150)
    assert c.phase is Phase.TRACK
    restarts = c.restarts
    d.offered_fps = 7000.0
    d.run(100)
    assert c.restarts > restarts
    assert c.last_search_fps is not None
    assert c.last_search_fps == pytest.approx(250.0, rel=0.15)  # 365 with the old low end


def test_warm_restart_falls_back_to_a_baseline_when_the_load_leaves_the_bracket():
    # the offered load falls below a third of the centre: nothing left to search near it,
    # so the restart measures no gating afresh (and stays ungated: gating cannot help)
    c = SessionController(SessionParams(strategy=1))
    d = Driver(c, collapse(250.0), offered_fps=1000.0, seed=4)
    d.run(150)
    assert c.phase is Phase.TRACK
    n = len(d.settings)
    d.offered_fps = 60.0
    d.curve = flat(60.0)
    d.run(120)
    assert None in d.settings[n:]
    assert c.phase is Phase.UNGATED


def test_periodic_research_from_track_is_cold():
    c = SessionController(SessionParams(strategy=1, research_every_windows=60))
    d = Driver(c, collapse(250.0), offered_fps=1000.0, noise=0.0, seed=1)
    d.run(100)
    assert c.phase is Phase.TRACK
    n, restarts = len(d.settings), c.restarts
    d.run(80)
    assert c.restarts > restarts and None in d.settings[n:]


def test_strategy2_capped_balance_steps_do_not_hide_a_change():
    # completions fall over two pairs (capacity halved mid-pair): the first pair's excess
    # moves the centre by the balance's cap (2 x 0.05 = the CUSUM's drift), which must not
    # re-learn the references, or the second pair's collapse becomes the new normal
    c = _strategy2_tracking()
    centre = c.best_admit_fps
    assert centre is not None
    # the pair admits at centre x e^-offset, then at the centre: A = F (1 + tol), no step
    admitted = centre * (1.0 + math.exp(-c.params.probe_offset)) / 2.0
    balanced = admitted / (1.0 + c.params.admit_tolerance)

    def pair(f: float) -> None:
        for _ in range(2):
            c.update(c.admit_fps or 0.0, f, 1.0, 500.0, f)

    for _ in range(2):  # two pairs at the balance: the references
        pair(balanced)
    assert c.best_admit_fps == pytest.approx(centre)
    restarts = c.restarts
    pair(0.7 * balanced)  # the straddling pair: a capped step down
    assert c.restarts == restarts
    moved = c.best_admit_fps
    assert moved is not None and math.log(moved / centre) == pytest.approx(-0.1, abs=1e-9)
    pair(0.4 * balanced)  # then the change
    assert c.restarts == restarts + 1


def _halved_capacity() -> Callable[[float], float]:
    """Paper-scale section V after the capacity halved (session-control-capacity.toml's
    static gates, 5 Mbit/s, 500 flows/s offered): F = a up to the knee near 62 flows/s,
    a flat top to 100/s, then a slow fall (57/s at 150, 45/s at 250)."""
    pts = [(0.0, 0.0), (60.0, 60.0), (75.0, 62.5), (100.0, 63.0), (150.0, 57.0), (250.0, 45.5)]
    return piecewise([*pts, (500.0, 30.0)])


def test_strategy1_leaves_a_flat_top_for_its_lower_edge():
    # Past the knee two probes 10 % apart differ by less than their noise. Holding on a
    # "flat" pair let noise carry the centre up the plateau (tracking at 2x the knee, 91 %
    # of the best static gate, in the paper-scale simulator): the lower probe is kept unless
    # the upper is clearly better, so the centre walks down to the knee's side of the top
    # (median centre over 10 seeds: 99 flows/s with "hold when flat", 76 with this).
    curve = _halved_capacity()
    centres = []
    for seed in range(10):
        c = SessionController(SessionParams(strategy=1))
        d = Driver(c, curve, offered_fps=500.0, window_s=2.0, noise=0.09, lag=0.5, seed=seed)
        d.run(120)  # search, then 3 minutes of tracking
        assert c.phase is Phase.TRACK
        centres.append(_centre_median(d, c, 60))
    assert statistics.median(centres) <= 90.0, centres
    assert all(curve(x) >= 0.93 * 63.0 for x in centres), centres


def test_clearly_better_scales_with_the_poisson_noise_of_both_probes():
    def probe(f: float, n: float) -> ProbeResult:
        return ProbeResult(100.0, f, f, None, f, n)

    # 400 completions each: sigma of the difference = sqrt(2 x 60^2 / 400) = 4.24 flows/s
    assert clearly_better(probe(63.0, 400), probe(60.0, 400), 0.5)  # 3.0 > 2.12
    assert not clearly_better(probe(61.5, 400), probe(60.0, 400), 0.5)  # 1.5 < 2.1
    assert not clearly_better(probe(63.0, 400), probe(60.0, 400), 1.0)  # 3.0 < 4.3
    assert not clearly_better(probe(60.0, 400), probe(63.0, 400), 0.0)  # worse
    assert clearly_better(probe(63.0, 40000), probe(62.0, 40000), 0.5)  # more counted


@pytest.mark.parametrize(
    ("alternate", "expected"), [(True, [True, False] * 4), (False, [True] * 8)]
)
def test_strategy1_alternates_which_probe_of_a_pair_runs_first(alternate, expected):
    # a probe's completions include flows the probe before it admitted: always running the
    # lower probe first leaned every comparison the same way, alternating cancels the lean
    c = SessionController(SessionParams(strategy=1, alternate_order=alternate))
    d = Driver(c, collapse(100.0), offered_fps=1000.0, seed=1)
    while c.phase is not Phase.TRACK:
        d.step()
    start, restarts = len(c.evaluations), c.restarts
    while len(c.evaluations) < start + 16:
        d.step()
    assert c.restarts == restarts
    probes = c.evaluations[start : start + 16]
    lower_first = []
    for first, second in zip(probes[::2], probes[1::2], strict=True):
        assert first.admit_fps is not None and second.admit_fps is not None
        assert first.admit_fps != second.admit_fps
        lower_first.append(first.admit_fps < second.admit_fps)
    assert lower_first == expected


def test_strategy2_runs_the_lower_probe_first():
    c = SessionController(SessionParams(strategy=2))
    d = Driver(c, table1(), offered_fps=1000.0, seed=1)
    while c.phase is not Phase.TRACK:
        d.step()
    start = len(c.evaluations)
    while len(c.evaluations) < start + 8 and c.phase is Phase.TRACK:
        d.step()
    probes = c.evaluations[start : start + 8]
    assert len(probes) == 8
    assert all(a.admit_fps < b.admit_fps for a, b in zip(probes[::2], probes[1::2], strict=True))


@pytest.mark.parametrize("strategy", [1, 2])
def test_a_confirmation_that_loses_to_the_first_baseline_measures_no_gating_afresh(strategy):
    # the first baseline runs on an empty network: no gating completes flows at the link's
    # rate until they pile up (F = 60/s for its windows, 20/s from then on), so the gated
    # candidate (F = min(a, 50)) loses to it; no gating measured again (20/s) loses to the
    # candidate, and the controller gates
    c = SessionController(SessionParams(strategy=strategy))
    windows = 0
    setting: float | None = None
    ungated_after: list[float] = []
    while windows < 200 and c.phase is not Phase.TRACK:
        a = 300.0 if setting is None else min(setting, 300.0)
        f = (60.0 if windows < 3 else 20.0) if setting is None else min(a, 50.0)
        if setting is None and windows >= 3:
            ungated_after.append(windows)
        setting = c.update(a, f, 1.0, 300.0, min(a, 50.0) if setting is not None else f)
        windows += 1
    assert c.phase is Phase.TRACK, c.phase
    assert ungated_after  # no gating was measured again after the search
    assert c.baseline is not None and c.baseline.completion_fps == pytest.approx(20.0)


def test_a_static_gate_keeps_its_rate_and_checks_its_windows():
    gate = StaticGate(50.0)
    assert gate.phase is Phase.STATIC and gate.restarts == 0 and gate.admit_fps == 50.0
    for completions in (0, 10, 400):  # whatever completes, the gate stays
        assert gate.update(60, completions, 2.0, 250, 55) == 50.0
    assert gate.update(60, 30, 2.0) == 50.0  # offered and connections unknown
    with pytest.raises(ValueError, match="window_s"):
        gate.update(60, 30, 0.0)
    with pytest.raises(ValueError, match="completions"):
        gate.update(60, -1, 2.0)
    with pytest.raises(ValueError, match="connections"):
        gate.update(60, 30, 2.0, 250, math.nan)
    for bad in (0.0, -5.0, math.inf):
        with pytest.raises(ValueError, match="admit_fps"):
            StaticGate(bad)
