"""Search-based session control (Kasera et al., paper 000; its section IV designed here).

One :class:`SessionController` per gated port, fed once per measurement window with the SYNs
admitted, the completions (FINs) and the window length, and optionally the SYNs seen and the
connections (handshakes the servers accepted: flows admitted into the network). It
returns the SYN admit rate to install (flows/s) or ``None`` for "no gating". See
docs/session-control.md for the design and its reasoning.

Phases::

    BASELINE  no gating, measure completion rate F0 and offered SYN rate lambda
    SEARCH    golden-section search over log(admit rate) in [low, high] (high ~ lambda)
    CONFIRM   re-measure the winner, then no gating, back to back; gate only if the winner
              beats no gating by ``gain_margin``, else UNGATED
    TRACK     gradient ascent from paired probes around the centre (sign of the difference,
              Rprop-style adaptive log-step),
              CUSUM change detection on the completion and offered rates -> BASELINE
    UNGATED   no gating; CUSUM change detection and periodic re-search -> BASELINE

Every probe holds its admit rate for ``settle_windows`` (discarded) then ``measure_windows``
(pooled: completions / seconds). Strategy 2's search maximises F - penalty * max(0, A - F (1 +
tol)) (A: connections when they are measured, else SYNs admitted); its tracking judges each
pair of probes pooled and moves the centre by a step proportional to the SYNs admitted over
the completions the pair sustains (capped at the connections) minus 1 + ``admit_tolerance``,
and the end of the search projects onto that boundary: the gate never admits (beyond the
tolerance for retried SYNs) faster than flows complete.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from enum import Enum
from typing import Literal

from .changedetect import RelativeCusum
from .common import check_non_negative, check_positive
from .measure import PortMeasurement

_INV_PHI = (math.sqrt(5.0) - 1.0) / 2.0  # 0.618...


class Phase(Enum):
    BASELINE = "baseline"
    SEARCH = "search"
    CONFIRM = "confirm"
    TRACK = "track"
    UNGATED = "ungated"
    STATIC = "static"  # a fixed admit rate (:class:`StaticGate`), no search


@dataclass(frozen=True, slots=True)
class SessionParams:
    """Parameters of a :class:`SessionController` (rates in flows/s, counts in windows)."""

    strategy: Literal[1, 2] = 1
    floor_fps: float = 1.0
    settle_windows: int = 1
    measure_windows: int = 3
    search_tolerance: float = 0.15
    max_search_probes: int = 24
    low_fraction: float = 0.05
    capacity_hint_fps: float | None = None
    hint_low: float = 0.5
    hint_high: float = 4.0
    gain_margin: float = 0.05
    step_initial: float = 0.1
    step_min: float = 0.02
    step_max: float = 0.5
    accept_margin: float = 0.01
    probe_offset: float = 0.05
    infeasible_pairs: int = 2
    admit_tolerance: float = 0.2
    balance_gain: float = 0.5
    check_connections: bool = True
    penalty: float = 10.0
    change_drift: float = 0.1
    change_threshold: float = 0.3
    reference_span: float = 0.3
    research_every_windows: int = 600
    warm_restart: bool = True
    restart_span: float = 1.1
    below_after_fall: bool = True
    drain_correction: bool = True
    confirm_ungated: bool = False
    noise_z: float = 0.5
    better_z: float = 0.25
    alternate_order: bool = True
    climb_when_feasible: bool = True
    climb_fraction: float = 0.5
    project_to_boundary: bool = True

    def __post_init__(self) -> None:
        if self.strategy not in (1, 2):
            raise ValueError(f"strategy must be 1 or 2, got {self.strategy!r}")
        for name in ("floor_fps", "search_tolerance", "low_fraction", "step_initial"):
            check_positive(name, getattr(self, name))
        for name in (
            "step_min",
            "step_max",
            "hint_low",
            "hint_high",
            "penalty",
            "probe_offset",
            "restart_span",
            "reference_span",
        ):
            check_positive(name, getattr(self, name))
        for name in (
            "gain_margin",
            "admit_tolerance",
            "balance_gain",
            "accept_margin",
            "climb_fraction",
            "better_z",
        ):
            check_non_negative(name, getattr(self, name))
        check_positive("change_drift", self.change_drift)
        check_positive("change_threshold", self.change_threshold)
        if self.capacity_hint_fps is not None:
            check_positive("capacity_hint_fps", self.capacity_hint_fps)
        if self.infeasible_pairs < 1:
            raise ValueError("infeasible_pairs must be >= 1")
        if self.settle_windows < 0 or self.measure_windows < 1 or self.max_search_probes < 2:
            raise ValueError(
                "need settle_windows >= 0, measure_windows >= 1 and max_search_probes >= 2"
            )
        if self.research_every_windows < 0:
            raise ValueError("research_every_windows must be >= 0 (0: never)")
        if not self.step_min <= self.step_initial <= self.step_max:
            raise ValueError("need step_min <= step_initial <= step_max")


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """The pooled measurement of one probe (an admit rate held for the measure windows)."""

    admit_fps: float | None
    completion_fps: float
    admitted_fps: float
    offered_fps: float | None
    objective: float
    completions: float = 0.0  # the count behind completion_fps (its Poisson noise)
    connected_fps: float | None = None  # flows admitted into the network (None: unknown)
    connections: float = 0.0  # the count behind connected_fps

    @property
    def entered_fps(self) -> float:
        """Strategy 2's admission rate A: connections if measured, else SYNs admitted."""
        return self.admitted_fps if self.connected_fps is None else self.connected_fps


@dataclass(slots=True)
class _Probe:
    admit_fps: float | None
    settle_left: int
    measure_left: int
    seconds: float = 0.0
    completions: float = 0.0
    admitted: float = 0.0
    offered: float = 0.0
    offered_known: bool = True
    connections: float = 0.0
    connections_known: bool = True

    def add(
        self,
        admitted: float,
        completions: float,
        window_s: float,
        offered: float | None,
        connections: float | None = None,
    ) -> bool:
        """Account one window; return True once the probe has all its measure windows."""
        if self.settle_left > 0:
            self.settle_left -= 1
            return False
        self.seconds += window_s
        self.completions += completions
        self.admitted += admitted
        if offered is None:
            self.offered_known = False
        else:
            self.offered += offered
        if connections is None:
            self.connections_known = False
        else:
            self.connections += connections
        self.measure_left -= 1
        return self.measure_left <= 0


@dataclass(slots=True)
class _Search:
    lo: float  # all in log(flows/s)
    hi: float
    x1: float
    x2: float
    f1: ProbeResult | None = None
    f2: ProbeResult | None = None
    pending: int = 1  # which interior point the running probe measures
    probes: int = 0


@dataclass(slots=True)
class _Track:
    center: float  # flows/s
    step: float
    last_sign: float = 0.0
    pending: int = 0  # 0: the lower probe is running, 1: the upper one
    infeasible: int = 0  # consecutive pairs whose upper probe admitted faster than completed
    lower: ProbeResult | None = None
    upper: ProbeResult | None = None
    pairs: int = 0  # pairs judged (``alternate_order``: odd pairs run the upper probe first)


class SessionController:
    """Per-port search-based session controller (strategy 1 or 2, see :class:`SessionParams`)."""

    def __init__(self, params: SessionParams | None = None) -> None:
        self._p = params if params is not None else SessionParams()
        self._phase = Phase.BASELINE
        self._probe = self._new_probe(None, settle=False)
        self._baseline: ProbeResult | None = None
        self._search: _Search | None = None
        self._track: _Track | None = None
        self._upper_fps = math.inf
        self._windows = 0
        self._since_decision = 0
        self._evaluations: list[ProbeResult] = []
        self._restarts = 0
        self._candidate: float | None = None
        self._candidate_result: ProbeResult | None = None
        self._last_search_fps: float | None = None
        self._total_completions = 0.0
        self._total_connections = 0.0
        self._connections_trusted = True
        self._cusum_completion = RelativeCusum(self._p.change_drift, self._p.change_threshold)
        self._cusum_offered = RelativeCusum(self._p.change_drift, self._p.change_threshold)
        # the tracking centre at which the completion CUSUM learned its reference
        self._anchor: float | None = None
        self._warm = False  # the running search is a warm restart's (no fresh baseline)
        self._empty_baseline = True  # the baseline is the first one (an empty network's)

    # ----------------------------------------------------------------- public state
    @property
    def params(self) -> SessionParams:
        return self._p

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def admit_fps(self) -> float | None:
        """The admit rate currently installed (None: no gating)."""
        return self._probe.admit_fps

    @property
    def best_admit_fps(self) -> float | None:
        """The operating point (tracking centre), None when ungated or still searching."""
        if self._phase is Phase.TRACK and self._track is not None:
            return self._track.center
        return None

    @property
    def last_search_fps(self) -> float | None:
        """The admit rate the last golden-section search ended on."""
        return self._last_search_fps

    @property
    def baseline(self) -> ProbeResult | None:
        """The last no-gating measurement."""
        return self._baseline

    @property
    def evaluations(self) -> list[ProbeResult]:
        """Every probe measured since the last (re)start of the search (a copy)."""
        return list(self._evaluations)

    @property
    def restarts(self) -> int:
        """How many times change detection or the periodic timer restarted the search."""
        return self._restarts

    @property
    def windows(self) -> int:
        return self._windows

    @property
    def connections_trusted(self) -> bool:
        """False once the completions counted since the start exceeded the connections
        counted (``check_connections``): then strategy 2 compares SYNs, not connections."""
        return self._connections_trusted

    # ----------------------------------------------------------------- input
    def update(
        self,
        admitted_syns: float,
        completions: float,
        window_s: float,
        offered_syns: float | None = None,
        connections: float | None = None,
    ) -> float | None:
        """Feed one measurement window; return the admit rate (flows/s) to install, or None.

        ``admitted_syns``: SYNs that went through the port (admitted by the gate or ungated);
        ``completions``: FINs counted in the window; ``offered_syns``: SYNs seen (admitted +
        dropped), None if unknown; ``connections``: handshakes accepted (the servers' SYN-ACKs),
        None if unknown. Strategy 2 compares connections, not SYNs, with completions when
        they are known: a SYN the gate admitted and the queue behind it dropped admits no
        flow (its retry comes back to the gate). Rates returned are never below ``floor_fps``.
        """
        check_window(admitted_syns, completions, window_s, offered_syns, connections)
        if connections is not None:
            connections = self._check_connections(completions, connections)
        self._windows += 1
        self._since_decision += 1
        if self._probe.add(admitted_syns, completions, window_s, offered_syns, connections):
            self._on_result(self._result(self._probe))
        return self._probe.admit_fps

    def _check_connections(self, completions: float, connections: float) -> float | None:
        """The connections to use (None: not comparable with the completions).

        Every flow completes after it connected, so the completions counted since the start
        can never exceed the connections counted, unless one counter over-counts. On BMv2
        the servers' FINs are: Linux retransmits a FIN whose last ACK the congested queue
        dropped, and the lab counted 87 FINs/s for 43 flows/s completed while SYN-ACKs were
        within 6 % of the flows connected (run 20261127T190312Z-bmv2-file-412bae3): the
        balance then reads flows piling up as admitted slower than they complete and
        climbed to 129/s. Once that happens, strategy 2 falls back to comparing the SYNs
        admitted (sticky: the counter's flaw does not go away)."""
        self._total_completions += completions
        self._total_connections += connections
        if self._p.check_connections and self._total_completions > self._total_connections:
            self._connections_trusted = False
        return connections if self._connections_trusted else None

    def update_from(self, m: PortMeasurement) -> float | None:
        """:meth:`update` from a port measurement taken over one measurement window."""
        return self.update(m.syns_passed, m.fins, m.period_s, m.syns_seen)

    # ----------------------------------------------------------------- machinery
    def _new_probe(self, admit: float | None, *, settle: bool = True) -> _Probe:
        if admit is not None:
            admit = max(admit, self._p.floor_fps)
        settle_windows = self._p.settle_windows if settle else 0
        return _Probe(admit, settle_windows, self._p.measure_windows)

    def _start(self, admit: float | None, *, settle: bool = True) -> None:
        same = self._probe.admit_fps == admit
        self._probe = self._new_probe(admit, settle=settle and not same)

    def _admit_tolerance(self, r: ProbeResult) -> float:
        """Strategy 2's tolerance on the admit rate's excess A / F - 1 of a probe
        (:meth:`_infeasibility`): ``admit_tolerance`` (admitted SYNs that are retries
        of SYNs the queue behind the gate dropped) plus ``noise_z`` standard deviations of
        the ratio's Poisson noise (F's count, and the connections' when they cap F)."""
        return self._p.admit_tolerance + self._ratio_noise(r)

    def _ratio_noise(self, r: ProbeResult) -> float:
        """``noise_z`` standard deviations of a probe's A / F Poisson noise: F's count,
        plus the connections' when they are measured (two independent counts)."""
        variance = 1.0 / max(r.completions, 1.0)
        if r.connected_fps is not None:
            variance += 1.0 / max(r.connections, 1.0)
        return self._p.noise_z * math.sqrt(variance)

    def _objective(self, r: ProbeResult) -> float:
        # completions above admissions drain flows admitted before this probe: the probe
        # itself sustains at most what it admits (both strategies: strategy 2's search on
        # BMv2 took a probe's 69 flows/s, the backlog of a 103/s probe draining while it
        # admitted 33/s, for the best and settled at a third below the knee)
        sustained = self._sustained(r)
        if self._p.strategy == 1:
            return sustained
        # strategy 2's search bounds what its tracking bounds: the SYNs admitted against
        # the completions, within the admit tolerance (:meth:`_infeasibility`). Bounding the
        # connections instead let the search probe where the queue behind the gate drops a
        # third of the admitted SYNs: connections kept pace with completions there, so the
        # penalty never fired, and BMv2's search spent 40 s at 72-85 SYNs/s for 44-52
        # flows/s completed (flows arriving then: mean FCT 5.8-9.4 s; run
        # 20261128T124920Z-bmv2-file-741efe8); its residue lifted the mean FCT of the
        # measured window above strategy 1's.
        excess = r.admitted_fps - r.completion_fps * (1.0 + self._admit_tolerance(r))
        return sustained - self._p.penalty * max(0.0, excess)

    def _result(self, probe: _Probe) -> ProbeResult:
        f = probe.completions / probe.seconds
        a = probe.admitted / probe.seconds
        offered = probe.offered / probe.seconds if probe.offered_known else None
        conn = probe.connections / probe.seconds if probe.connections_known else None
        r = ProbeResult(
            probe.admit_fps, f, a, offered, 0.0, probe.completions, conn, probe.connections
        )
        return replace(r, objective=self._objective(r))

    def _sustained(self, r: ProbeResult) -> float:
        """The completion rate the probe itself sustains (drain-corrected, see params):
        at most what it admitted (strategy 2: at most the flows it let into the network)."""
        if self._p.drain_correction:
            admitted = r.entered_fps if self._p.strategy == 2 else r.admitted_fps
            return min(r.completion_fps, admitted)
        return r.completion_fps

    def _restart(
        self, around: float | None = None, offered: float | None = None, below: bool = False
    ) -> None:
        """Search again: from a no-gating baseline (cold), or, with ``around`` (the
        tracking centre when change detection fired) and ``warm_restart``, at once over
        ``around`` x e^(+-restart_span) within the usual bounds of ``offered``; ``below``:
        over [around x e^-restart_span, around] only (:meth:`_begin_search`).

        A cold restart after a change opens the gate for a baseline: at the paper's scale
        (1500 flows/s offered on 10 Mbit/s) its 8 s let some 12 000 SYNs in and completions
        fell to 44-56 flows/s for 30 s (run 20261124T222957Z-sim-file-345c16e), and the
        search's first probes, at 0.3 and 0.6 of the offered rate, admit several times the
        optimum. A change of load or capacity moves the optimum by a factor of about 2 at
        most in section V, so the warm bracket (x3 either way) holds it, and its probes
        stay near the optimum. The warm search ends gated (no fresh no-gating probe to
        compare with; the periodic re-search, cold, checks no gating again)."""
        self._restarts += 1
        self._empty_baseline = False
        self._search = None
        self._track = None
        self._evaluations = []
        if (
            around is not None
            and offered is not None
            and self._p.warm_restart
            and self._begin_search(offered, around, below)
        ):
            return
        self._phase = Phase.BASELINE
        self._warm = False
        self._start(None)

    def _changed(self, r: ProbeResult, center: float | None = None) -> bool:
        """Feed the detectors one measurement; ``center``: the tracking centre it was
        measured at. The completion rate is judged against its reference widened to
        F0 x [min(1, c / c0), max(1, c / c0)], c0 the centre the reference was learned at:
        F / a does not rise with the admit rate a (admitting fewer flows, at least as large
        a fraction of them completes), so a deliberate move of the centre by a factor k
        changes F by at most k. A drop below that band is a change of the network."""
        low = high = 1.0
        if center is not None:
            if self._cusum_completion.reference is None or self._anchor is None:
                self._anchor = center
            ratio = center / self._anchor
            low, high = min(1.0, ratio), max(1.0, ratio)
        alarm = self._cusum_completion.update(r.completion_fps, low, high)
        if r.offered_fps is not None:
            alarm = self._cusum_offered.update(r.offered_fps) or alarm
        return alarm

    def _fell_alone(self) -> bool:
        """Whether the last alarm was the completion rate falling, the offered rate not
        changing."""
        return self._cusum_completion.alarm == "fall" and self._cusum_offered.alarm is None

    def _reset_detectors(self) -> None:
        self._cusum_completion.reset()
        self._cusum_offered.reset()
        self._anchor = None

    def _on_result(self, r: ProbeResult) -> None:
        self._evaluations.append(r)
        match self._phase:
            case Phase.BASELINE:
                self._on_baseline(r)
            case Phase.SEARCH:
                self._on_search(r)
            case Phase.CONFIRM:
                self._on_confirm(r)
            case Phase.TRACK:
                self._on_track(r)
            case Phase.UNGATED:
                self._on_ungated(r)

    # ----------------------------------------------------------------- phases
    def _on_baseline(self, r: ProbeResult) -> None:
        self._baseline = r
        offered = r.offered_fps if r.offered_fps is not None else r.admitted_fps
        if not self._begin_search(offered):
            self._go_ungated()

    def _begin_search(
        self, offered: float, around: float | None = None, below: bool = False
    ) -> bool:
        """Start the golden-section search over [low, high] of the ``offered`` rate
        (narrowed to ``around`` x e^(+-restart_span): a warm restart; with ``below``, to
        [around x e^-restart_span, around]); False when there is nothing to search (then
        the caller decides)."""
        p = self._p
        hi = offered
        lo = max(p.floor_fps, offered * p.low_fraction)
        if p.capacity_hint_fps is not None:
            hi = min(hi, p.hint_high * p.capacity_hint_fps)
            lo = max(lo, p.hint_low * p.capacity_hint_fps)
        if around is not None:
            # the warm bracket's low end is the centre's, not a fraction of the offered SYN
            # rate: while gated that rate counts every retry of a dropped SYN (1500 flows/s
            # offered read as some 7000 SYNs/s, and 5 % of it put the low end at 350 flows/s,
            # above the optimum: run 20261128T102557Z-sim-file-c7d2c45, session-control-varying)
            hi = min(hi, around * math.exp(p.restart_span))
            lo = max(p.floor_fps, around * math.exp(-p.restart_span))
            if below and p.below_after_fall:
                # The completion rate fell while the offered rate held: the network
                # completes fewer flows at the admit rates it had (its capacity fell, or
                # its flows grew), so its optimum did not rise. Above the centre the
                # search only overloads it: after the capacity halved at paper scale the
                # warm search's upper probe (277 flows/s, 4x the new optimum) overloaded
                # the halved link, the probe after it (119) completed 55.7 flows/s against
                # the opening probe's 62.0 at 164.5 (run right after tracking at 203-224),
                # and the search ended at 164.5, 0.82 of the best static gate over the
                # regime (seed 1, 20261129T142431Z-sim-paper-da0702c;
                # docs/session-control.md).
                hi = min(hi, around)
        if hi <= lo * (1.0 + p.search_tolerance):
            return False
        self._upper_fps = max(offered, p.floor_fps)
        self._warm = around is not None
        a, b = math.log(lo), math.log(hi)
        x1 = b - _INV_PHI * (b - a)
        x2 = a + _INV_PHI * (b - a)
        self._search = _Search(a, b, x1, x2)
        self._phase = Phase.SEARCH
        self._start(math.exp(x1))
        return True

    def _on_search(self, r: ProbeResult) -> None:
        s = self._search
        assert s is not None
        s.probes += 1
        if s.pending == 1:
            s.f1 = r
        else:
            s.f2 = r
        if s.f1 is None or s.f2 is None:  # the opening pair: measure the other point
            s.pending = 1 if s.f1 is None else 2
            self._start(math.exp(s.x1 if s.pending == 1 else s.x2))
            return
        # strategy 1: the upper point wins only when clearly better (``better_z``), within
        # the noise the lower admit rate is as good and admits fewer flows to queue
        # (strategy 2's penalty already pulls its objective down past the knee)
        if self._p.strategy == 1:
            upper_wins = clearly_better(s.f2, s.f1, self._p.better_z)
        else:
            upper_wins = s.f2.objective > s.f1.objective
        if s.hi - s.lo <= self._p.search_tolerance or s.probes >= self._p.max_search_probes:
            best, x = (s.f2, s.x2) if upper_wins else (s.f1, s.x1)
            self._decide(math.exp(x), best)
            return
        if upper_wins:  # optimum in [x1, hi]
            s.lo, s.x1, s.f1 = s.x1, s.x2, s.f2
            s.x2, s.f2, s.pending = s.lo + _INV_PHI * (s.hi - s.lo), None, 2
            self._start(math.exp(s.x2))
        else:  # optimum in [lo, x2]
            s.hi, s.x2, s.f2 = s.x2, s.x1, s.f1
            s.x1, s.f1, s.pending = s.hi - _INV_PHI * (s.hi - s.lo), None, 1
            self._start(math.exp(s.x1))

    def _decide(self, admit: float, best: ProbeResult) -> None:
        """End of the search: re-measure the winner and no gating afresh, back to back.

        The search's best value is the maximum of noisy measurements (biased upwards), and the
        baseline may be stale: comparing two fresh measurements keeps the decision honest.
        """
        self._search = None
        self._candidate = admit
        self._candidate_result = None
        self._last_search_fps = admit
        self._phase = Phase.CONFIRM
        self._start(admit)

    def _on_confirm(self, r: ProbeResult) -> None:
        if r.admit_fps is not None:  # the candidate, fresh
            self._candidate_result = r
            if self._p.confirm_ungated:  # now no gating, fresh
                self._start(None)
                return
            ungated = self._baseline
        else:
            ungated = self._baseline = r
            if r.offered_fps is not None:
                self._upper_fps = max(r.offered_fps, self._p.floor_fps)
        cand = self._candidate_result
        assert cand is not None and self._candidate is not None and ungated is not None
        beats = self._sustained(cand) > ungated.completion_fps * (1.0 + self._p.gain_margin)
        if not beats and not self._warm and r.admit_fps is not None and self._empty_baseline:
            # The first baseline ran on an empty network: its completions are those of no
            # gating before flows piled up (the gated port's FIN counter on the lab's BMv2
            # read 222/s over the first 6 s, 79/s at the confirmation), which a gate cannot
            # beat. Measure no gating afresh, once, before giving up gating: a BMv2 run of
            # strategy 1 stayed ungated for the whole run after such a confirmation (21.9
            # flows/s completed against 47.1 gated, run 20261128T104915Z-bmv2-file-0d20266).
            self._empty_baseline = False
            self._start(None)
            return
        if not beats and not self._warm:  # warm: the baseline is of another load
            self._go_ungated()
            return
        center = self._candidate
        if self._p.strategy == 2 and self._infeasibility(cand) > self._admit_tolerance(cand):
            center = min(center, self._projection(cand, center))
        center = max(center, self._p.floor_fps)
        self._phase = Phase.TRACK
        self._since_decision = 0
        self._reset_detectors()
        self._track = _Track(center, step=self._p.step_initial)
        self._track_probe(0)

    def _go_ungated(self) -> None:
        self._phase = Phase.UNGATED
        self._since_decision = 0
        self._track = None
        self._reset_detectors()
        self._start(None)

    def _on_ungated(self, r: ProbeResult) -> None:
        every = self._p.research_every_windows
        if self._changed(r) or (every and self._since_decision >= every):
            self._restart()
            return
        self._start(None)

    def _track_probe(self, which: int) -> None:
        """Start the lower (0) or upper (1) probe of the pair around the centre.

        Strategy 1 probes centre * exp(-/+ offset); strategy 2 probes centre * exp(-offset) and
        the centre itself, so that it never installs more than the (feasible) centre.
        """
        t = self._track
        assert t is not None
        p = self._p
        t.pending = which
        if which == 0:
            rate = t.center * math.exp(-p.probe_offset)
        elif p.strategy == 2:
            rate = t.center
        else:
            rate = t.center * math.exp(p.probe_offset)
        self._start(min(max(rate, p.floor_fps), max(self._upper_fps, p.floor_fps)))

    def _next_pair(self) -> None:
        """Start the next pair of tracking probes. With ``alternate_order`` every other
        pair runs its upper probe first: a probe's completions include flows the probe
        before it admitted (their FCT is several windows past the knee, longer than the
        settle window), so the probe run second is judged partly on the first one's
        admissions; always running the lower one first leaned every comparison the same way.
        Alternating the order makes the lean change sign from pair to pair."""
        t = self._track
        assert t is not None
        alternate = self._p.alternate_order and self._p.strategy == 1
        self._track_probe(t.pairs % 2 if alternate else 0)

    def _on_track(self, r: ProbeResult) -> None:
        t = self._track
        assert t is not None
        p = self._p
        if t.pending == 0:
            t.lower = r
        else:
            t.upper = r
        if t.lower is None or t.upper is None:  # the pair's first probe: run the other
            self._track_probe(1 - t.pending)
            return
        lower, upper = t.lower, t.upper
        t.lower = t.upper = None
        t.pairs += 1
        completion = (self._sustained(lower) + self._sustained(upper)) / 2.0
        offered = None
        if lower.offered_fps is not None and upper.offered_fps is not None:
            offered = (lower.offered_fps + upper.offered_fps) / 2.0
        pair = ProbeResult(t.center, completion, upper.admitted_fps, offered, 0.0)
        every = p.research_every_windows
        if self._changed(pair, t.center):
            # the newer probe's offered rate: the pair's mean may straddle the change
            self._restart(t.center, r.offered_fps, below=self._fell_alone())
            return
        if every and self._since_decision >= every:
            self._restart()  # periodic: cold, no gating measured afresh
            return
        # Feasibility (strategy 2) is judged on the pair pooled, not on one probe: twice the
        # completions halve the variance, and projecting onto one probe's F ratcheted the
        # centre down (a projection fires when F is low by chance, and it moved to that F).
        both = pooled(lower, upper)
        excess = self._infeasibility(both)
        if p.strategy == 2 and p.balance_gain > 0:
            self._balance(excess)
            self._next_pair()
            return
        tol = self._admit_tolerance(both)
        t.infeasible = t.infeasible + 1 if excess > tol else 0
        if p.strategy == 2 and (t.infeasible >= p.infeasible_pairs or excess > 3.0 * tol):
            # admissions persistently outrun completions: project onto A = F (1 + tol)
            t.infeasible = 0
            self._move(max(p.floor_fps, self._projection(both, t.center)))
            t.step = max(t.step * 0.5, p.step_min)
            t.last_sign = -1.0
            self._next_pair()
            return
        if p.strategy == 2 and p.climb_when_feasible and excess <= p.climb_fraction * tol:
            # Below the knee F = A, so F rises with the admit rate by exactly the probes'
            # spacing, a signal the Poisson noise of a probe swamps (the lab's tracking
            # random-walked at half the knee): while the pair admits no faster than flows
            # complete (within ``climb_fraction`` of the tolerance), climb by one capped
            # step; above it, hold, and the projection brings the centre back when
            # admissions clearly outrun completions.
            t.step = min(max(t.step * 1.5, p.step_min), 2.0 * p.probe_offset)
            t.last_sign = 1.0
            self._move(t.center * math.exp(t.step))
            self._next_pair()
            return
        diff = upper.objective - lower.objective
        scale = max(abs(upper.objective), abs(lower.objective))
        # strategy 2 that climbs while feasible goes up only by climbing: between the climb
        # margin and the tolerance it holds (or follows the objective down), a hysteresis
        # band, else noisy upward steps keep pushing it past the knee
        band = p.strategy == 2 and p.climb_when_feasible and diff > 0
        # strategy 1 climbs only when the upper probe is clearly better and otherwise steps
        # down: on the flat top past the knee a pair differs by noise alone, and holding
        # there let noise carry the centre up the plateau, where flows pile up and a little
        # more load collapses completions (after the capacity halved at paper scale it
        # tracked 117-138 flows/s, 2x the knee, 91 % of the best static gate: run
        # 20261128T075748Z-sim-paper-757fb98)
        if p.strategy == 1:
            flat, up = False, clearly_better(upper, lower, p.better_z)
        else:
            flat, up = band or abs(diff) <= p.accept_margin * scale, diff > 0
        if flat:  # flat within noise: hold
            t.step = max(t.step * 0.5, p.step_min)
            t.last_sign = 0.0
        else:
            sign = 1.0 if up else -1.0
            grow = 1.5 if sign == t.last_sign else 0.5
            # strategy 2 never leaps upwards: a leap past the knee admits faster than flows
            # complete for a whole pair before the projection pulls it back
            cap = p.step_max if p.strategy == 1 or sign < 0 else 2.0 * p.probe_offset
            t.step = min(max(t.step * grow, p.step_min), max(cap, p.step_min))
            t.last_sign = sign
            self._move(t.center * math.exp(sign * t.step))
        self._next_pair()

    def _balance(self, excess: float) -> None:
        """Strategy 2: move the centre by the log-step
        ``-balance_gain * (A/F - 1 - admit_tolerance)`` of the pooled pair
        (:meth:`_infeasibility`), at most 2 ``probe_offset`` either way (a
        stochastic-approximation step: its mean is zero only where the gate admits as fast
        as flows complete, A = F (1 + tol)).

        The SYNs admitted over the completions grow with the admit rate (the queue behind
        the gate drops more SYNs, whose retries pass it again, and flows pile up), and FCTs
        with them; the tolerance bounds how far past A = F it goes. A/F of one pair carries
        Poisson noise of about sqrt(2 / n) (6 % with the lab's 600 completions per pair):
        the climb / hold / project rules, each decided on one noisy pair, climbed more often
        than they projected and settled where flows piled up (connections / completions
        1.05 in the lab-scale simulator); a step proportional to the measured excess
        averages the noise out and settles where A = F (1 + tol) on average.

        Balancing connections (not SYNs) against completions, the target before, holds at
        every admit rate where flows do not pile up fast: it settled at 58-63 SYNs/s in the
        lab-scale simulator and 66-70 on BMv2, past the FCT knee (runs
        20261128T071644Z-sim-file-b979d79, 20261128T013527Z-bmv2-file-52a64ca)."""
        t = self._track
        assert t is not None
        p = self._p
        cap = 2.0 * p.probe_offset
        step = -p.balance_gain * (excess - p.admit_tolerance)
        step = min(max(step, -cap), cap)
        t.step = abs(step)
        t.last_sign = math.copysign(1.0, step) if step else 0.0
        self._move(t.center * math.exp(step))

    @staticmethod
    def _infeasibility(r: ProbeResult) -> float:
        """A / F - 1 of a probe: how much faster the gate admitted (A: SYNs admitted, the
        admit rate paper 000's strategy 2 bounds) than flows completed (F:
        :meth:`_completed`, the completions the probe sustains)."""
        return r.admitted_fps / max(SessionController._completed(r), 1e-9) - 1.0

    @staticmethod
    def _completed(r: ProbeResult) -> float:
        """The completion rate strategy 2 compares the admit rate with: F, capped at the
        connections when they are measured. Completions beyond the connections are flows
        admitted before the probe draining (a backlog, not sustained) or a counter's
        over-count (BMv2 counts some retransmitted FINs twice); the connections themselves
        are the flows whose SYN got through the queue behind the gate."""
        if r.connected_fps is None:
            return r.completion_fps
        return min(r.completion_fps, r.connected_fps)

    def _projection(self, r: ProbeResult, center: float) -> float:
        """Strategy 2's projection of an infeasible probe: the largest admit rate its
        completions allow, F (1 + tol) (the boundary of A <= F (1 + tol)), or F itself,
        as ``center`` x target / A (the meter's rate is A while SYNs are offered faster)."""
        target = self._completed(r)
        if self._p.project_to_boundary:
            target *= 1.0 + self._admit_tolerance(r)
        return center * target / max(r.admitted_fps, 1e-9)

    def _move(self, center: float) -> None:
        t = self._track
        assert t is not None
        p = self._p
        new = min(max(center, p.floor_fps), max(self._upper_fps, p.floor_fps))
        # A deliberate move is not a change of the load or the network. The offered SYN
        # rate (retries included) depends on the admit rate in no known way: its reference
        # is re-learned after a move larger than the drift ("larger" with a margin for
        # rounding: strategy 2's balance step is capped at exactly the drift). The
        # completion rate's reference stays, widened by the move (:meth:`_changed`), until
        # the centre is ``reference_span`` from where it was learned. Re-learning it at
        # every move larger than the drift, as both were until 2026-11-29, hid a capacity
        # halving whenever the first pair after it stepped that far: the new reference was
        # the halved rate (session-control-capacity at lab scale with delayed acks, strategy
        # 1 detected it 92 s late, run 20261129T043417Z-sim-lab-220501a; strategy 2 at paper
        # scale, run 20261127T221923Z-sim-paper-77c0c4b, before the margin).
        if abs(math.log(new / t.center)) > p.change_drift * (1.0 + 1e-9):
            self._cusum_offered.reset()
        # Not while the detector holds evidence of a change (either sum above 0): the move
        # may be the change's own doing. A pair straddling a capacity halving (its first
        # probe, the upper one, before it; the lower one after) reads the upper probe as
        # clearly better, the centre climbs past the span, and re-learning there made the
        # halved rate the reference: BMv2, session-control-capacity at lab scale, strategy 1
        # detected the halving 147 s late (run 20261129T122943Z-bmv2-lab-b149b1f).
        if (
            self._anchor is not None
            and abs(math.log(new / self._anchor)) > p.reference_span
            and self._cusum_completion.statistic == 0.0
        ):
            self._cusum_completion.reset()
            self._anchor = None
        t.center = new


class StaticGate:
    """A fixed admit rate on a gated port, fed the same windows as a
    :class:`SessionController`: the controller keeps the gate (and rewrites it after a
    switch restart) and records each window's counts, so a static gate's run carries
    the same telemetry as a search's."""

    def __init__(self, admit_fps: float) -> None:
        check_positive("admit_fps", admit_fps)
        self._admit = admit_fps

    @property
    def phase(self) -> Phase:
        return Phase.STATIC

    @property
    def restarts(self) -> int:
        return 0

    @property
    def admit_fps(self) -> float:
        return self._admit

    def update(
        self,
        admitted_syns: float,
        completions: float,
        window_s: float,
        offered_syns: float | None = None,
        connections: float | None = None,
    ) -> float:
        """One window's counts (checked as :meth:`SessionController.update` checks them,
        then unused); the admit rate stays."""
        check_window(admitted_syns, completions, window_s, offered_syns, connections)
        return self._admit


def check_window(
    admitted_syns: float,
    completions: float,
    window_s: float,
    offered_syns: float | None,
    connections: float | None,
) -> None:
    """Raise ValueError unless a window's length is > 0 and its counts are >= 0 (the
    optional ones when given)."""
    check_positive("window_s", window_s)
    for name, value in (
        ("admitted_syns", admitted_syns),
        ("completions", completions),
        ("offered_syns", offered_syns),
        ("connections", connections),
    ):
        if value is not None:
            check_non_negative(name, value)


def clearly_better(upper: ProbeResult, lower: ProbeResult, z: float) -> bool:
    """Whether ``upper``'s objective beats ``lower``'s by more than ``z`` standard deviations
    of their difference (each probe's completion rate carries Poisson noise, variance
    F^2 / n for n completions counted; a probe that counted none counts as one).

    Two admit rates whose completion rates differ by less are as good as each other, and
    the lower one admits fewer flows to queue behind the bottleneck: the caller keeps it.
    """
    var = sum(r.completion_fps**2 / max(r.completions, 1.0) for r in (upper, lower))
    return upper.objective - lower.objective > z * math.sqrt(var)


def pooled(a: ProbeResult, b: ProbeResult) -> ProbeResult:
    """Two probes of equal length as one: mean rates, summed completion and connection
    counts (the admit rate and objective are those of ``b``)."""
    offered = None
    if a.offered_fps is not None and b.offered_fps is not None:
        offered = (a.offered_fps + b.offered_fps) / 2.0
    connected = None
    if a.connected_fps is not None and b.connected_fps is not None:
        connected = (a.connected_fps + b.connected_fps) / 2.0
    return ProbeResult(
        b.admit_fps,
        (a.completion_fps + b.completion_fps) / 2.0,
        (a.admitted_fps + b.admitted_fps) / 2.0,
        offered,
        b.objective,
        a.completions + b.completions,
        connected,
        a.connections + b.connections,
    )
