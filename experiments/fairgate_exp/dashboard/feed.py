"""What the dashboard shows, read from a run folder (``results/<exp>/<run-id>/``).

Live and replay read the same files: per algorithm ``<algo>/controller.jsonl`` (the
controller's per-port, per-period records, written as the run goes) and
``<algo>/flows.jsonl`` (each receiver sample: cumulative packets per flow). Port rows
are made by ``metrics.port_rows`` and flow rates by the rule of ``metrics.flow_rates``,
the functions that make the run's ports.csv / flows.csv and summary.json, so the page
draws the numbers the record holds. Runs written before flows.jsonl existed replay their
flows from flows.csv.
"""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path
from typing import Any

from fairgate_exp.load import ExperimentError, validate
from fairgate_exp.metrics import port_rows
from fairgate_exp.oracle import bottlenecks, maxmin_pps
from fairgate_exp.plan import Plan, build_plan
from fairgate_exp.records import read_t0

ALGORITHMS = ("qfcp", "rcp", "lestas", "xcp", "ficcrd", "none")  # folders a run may hold

# The controllers' constructor defaults (fairgate_controller.algorithms), shown in the
# step view's equations; the agent builds every controller with them.
ALGO_CONSTANTS: dict[str, dict[str, float]] = {
    "qfcp": {"beta": 0.5},
    "rcp": {"alpha": 0.1, "beta": 1.0},
    "lestas": {"gamma": 0.1},
    "xcp": {"alpha": 0.4, "beta": 0.226, "gamma": 0.1},
}

# Each port's "algorithm's internal state" charts, by kind of controller: a chart is a
# title and its series (record key, label, y scale); a scale is drawn on its own axis,
# labelled by "axes" (default: its series' labels). The line bridges periods without a
# value (an update every d, or every window) unless the series says "gaps" (admit rate
# null = no gating: drawn as a gap).
# Every value is one the period record carries (the controller wrote it), never derived.
StateChart = dict[str, Any]
STATE_CHARTS: dict[str, list[StateChart]] = {
    "qfcp": [{"title": "controller state: N", "series": [["N", "N", "n"]]}],
    "lestas": [{"title": "controller state: N_hat", "series": [["N_hat", "N_hat", "n"]]}],
    "rcp": [{"title": "controller state: factor", "series": [["factor", "factor", "n"]]}],
    "xcp": [
        {
            "title": "aggregate feedback phi, shuffled h (bytes per interval d)",
            "series": [["xcp_phi_bytes", "phi", "B"], ["xcp_h_bytes", "h", "B"]],
        },
        {
            "title": "per-packet factors xi_p (left), xi_n (right)",
            "series": [["xcp_xi_p", "xi_p", "p"], ["xcp_xi_n", "xi_n", "q"]],
        },
    ],
    "ficcrd": [
        {
            "title": "core queue: MAPR updated / held, ER lowered by DPF x MAPR / kept (pkts)",
            "series": [
                ["mapr_updated", "MAPR updated", "n"],
                ["mapr_held", "MAPR held", "n"],
                ["er_lowered", "ER lowered", "n"],
                ["er_kept", "ER kept", "n"],
            ],
        },
        {
            "title": "core queue: MAPR (switch register ficcrd_mapr, kbit/s)",
            "series": [["ficcrd_mapr_kbps", "MAPR", "k"]],
            "axes": {"k": "kbit/s"},
        },
        {
            "title": "core queue: DPF at the switch's last queue (left); queue, Q0 (right, pkts)",
            "series": [
                ["ficcrd_dpf", "DPF", "d"],
                ["ficcrd_queue_pkts", "queue", "q"],
                ["ficcrd_q0_pkts", "Q0", "q"],
            ],
            "axes": {"d": "DPF", "q": "pkts"},
        },
    ],
    "session": [
        {
            "title": "session control: admit rate, completions (left); SYNs admitted (right), /s",
            "series": [
                ["admit_fps", "admit rate", "f", "gaps"],
                ["window_completions_fps", "completions", "f"],
                ["window_admitted_fps", "admitted", "g"],
            ],
            "axes": {"f": "flows/s", "g": "SYNs admitted/s"},
        }
    ],
}


def state_kind(algo: str, variants: list[str]) -> str | None:
    """Which STATE_CHARTS a folder's ports get: its algorithm's, or session control's
    for a session-control variant (the folders named after ``[[variants]]``)."""
    if algo in STATE_CHARTS:
        return algo
    return "session" if algo in variants else None


def state_of(kind: str | None, rec: dict[str, Any]) -> dict[str, float | None]:
    """The period record's values for the kind's state charts (None: not this period,
    e.g. an XCP port whose interval d did not end within the period, or a port that is
    not gated)."""
    if kind is None:
        return {}
    out: dict[str, float | None] = {}
    for chart in STATE_CHARTS[kind]:
        for key, *_ in chart["series"]:
            v = rec.get(key)
            out[key] = float(v) if isinstance(v, int | float) else None
    return out


def plan_of_run(run_dir: Path) -> Plan:
    """The run's ``Plan``, rebuilt from the ``experiment.json`` it stored."""
    path = run_dir / "experiment.json"
    if not path.is_file():
        raise ExperimentError(f"{run_dir}: not a run folder (no experiment.json)")
    doc = json.loads(path.read_text())
    scale = doc.pop("resolved", {}).get("scale")
    exp = validate(doc, path)
    return build_plan(exp, path, scale)


def _mbps(bytes_per_s: float | None) -> float | None:
    return None if bytes_per_s is None else bytes_per_s * 8 / 1e6


def meta(plan: Plan, run_dir: Path | None) -> dict[str, Any]:
    """Everything static: topology, measured ports, flows, phases, max-min shares."""
    frame = plan.frame
    events = sorted({0.0, plan.duration_s, *(t for f in plan.flows for t in (f.start_s, f.stop_s))})
    segments = []
    for t0, t1 in zip(events, events[1:], strict=False):
        active = [f for f in plan.flows if f.start_s <= t0 and f.stop_s >= t1]
        shares = maxmin_pps(plan, active) if active else {}
        segments.append(
            {
                "t0": t0,
                "t1": t1,
                "maxmin_pps": {n: round(v, 2) for n, v in shares.items()},
                "maxmin_mbps": {n: v * frame * 8 / 1e6 for n, v in shares.items()},
                "bottlenecks": [plan.ports[k].label for k in bottlenecks(plan, active)]
                if active
                else [],
            }
        )
    ports = []
    for key in plan.measured:
        p = plan.ports[key]
        ports.append(
            {
                "label": p.label,
                "switch": p.switch,
                "port": p.port,
                "peer": p.peer,
                "capacity_mbps": p.capacity_Bps(frame) * 8 / 1e6,
            }
        )
    links = [{"a": link.a, "b": link.b} for link in plan.file.links]
    return {
        "experiment": plan.name,
        "title": plan.file.experiment.title,
        "scale": plan.scale,
        "run": run_dir.name if run_dir is not None else None,
        "algos": plan.algorithms,
        # the time axis: a variant may run longer than the file (session control's search)
        "duration_s": max([plan.duration_s, *(v.duration_s for v in plan.variants)]),
        "frame_bytes": frame,
        "q_ref_pkts": plan.q_ref_pkts,
        "constants": ALGO_CONSTANTS,
        "state_charts": STATE_CHARTS,
        "kinds": {a: state_kind(a, [v.name for v in plan.variants]) for a in _folders(plan)},
        "switches": plan.switches,
        "hosts": [{"name": h.name, "switch": h.switch} for h in plan.hosts.values()],
        "links": links,
        "ports": ports,
        "flows": [
            {"name": f.name, "src": f.src, "dst": f.dst, "start": f.start_s, "stop": f.stop_s}
            for f in plan.flows
        ],
        "phases": [{"name": n, "t0": t0, "t1": t1} for n, t0, t1 in plan.phases],
        "windows": windows(plan),
        "segments": segments,
    }


def _folders(plan: Plan) -> list[str]:
    """The algorithm folders a run of the plan may hold: the file's algorithms and
    variants, and any other algorithm --algo asked for."""
    return list(dict.fromkeys([*plan.algorithms, *(v.name for v in plan.variants), *ALGORITHMS]))


def windows(plan: Plan) -> list[dict[str, Any]]:
    """The windows summary.json judges (after warm-up, then each phase), each with the
    max-min shares of the flows active over all of it, as the driver computes them."""
    out = []
    for name, t0, t1 in [("run", plan.warmup_s, plan.duration_s), *plan.phases]:
        active = [f for f in plan.flows if f.start_s <= t0 and f.stop_s >= t1]
        shares = maxmin_pps(plan, active) if active else {}
        out.append(
            {
                "name": name,
                "t0": t0,
                "t1": t1,
                "maxmin_pps": {n: round(v, 2) for n, v in shares.items()},
            }
        )
    return out


class Tail:
    """Reads the complete lines appended to a file since the last call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._rest = b""

    def lines(self) -> list[str]:
        try:
            with self.path.open("rb") as f:
                f.seek(self._offset)
                data = f.read()
        except FileNotFoundError:
            return []
        self._offset += len(data)
        data = self._rest + data
        *done, self._rest = data.split(b"\n")
        return [line.decode() for line in done if line.strip()]


class AlgoFeed:
    """One algorithm's folder: its controller records and flow samples, as events."""

    def __init__(self, plan: Plan, algo: str, folder: Path) -> None:
        self.plan, self.algo, self.folder = plan, algo, folder
        self.measured = set(plan.measured)
        self.ctl = Tail(folder / "controller.jsonl")
        self.flows = Tail(folder / "flows.jsonl")
        self.t0 = self._t0()
        self.kind = state_kind(algo, [v.name for v in plan.variants])
        self.last: dict[str, tuple[float, int]] = {}
        self._pending: list[str] = []  # controller lines not yet placed in time

    def _t0(self) -> float | None:
        """BMv2 records carry wall time; the engine stores its time 0 in t0.json."""
        return read_t0(self.folder)

    def _guess_t0(self, rec: dict[str, Any]) -> float | None:
        """A BMv2 record written before t0.json existed: time 0 from ports.csv's first row
        of this port (its t is the record's minus time 0, to 0.1 ms); None: not yet known."""
        if rec["t"] < 1e6:  # simulator time already
            return 0.0
        label = self.plan.ports[(rec["switch"], rec["port"])].label
        path = self.folder.parent / "ports.csv"
        if path.is_file():
            with path.open() as f:
                for row in csv.DictReader(f):
                    if row["algo"] == self.algo and row["port"] == label:
                        return float(rec["t"]) - float(row["t"])
        return None

    def poll(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        self._pending += self.ctl.lines()
        while self._pending:
            rec = json.loads(self._pending[0])
            if (rec.get("switch"), rec.get("port")) not in self.measured or "t" not in rec:
                self._pending.pop(0)
                continue
            if self.t0 is None:
                self.t0 = self._t0()
            if self.t0 is None:
                self.t0 = self._guess_t0(rec)
                if self.t0 is None:  # BMv2 is starting: t0.json comes in a moment
                    break
            self._pending.pop(0)
            rec["t"] -= self.t0
            row = port_rows(self.plan, [rec])[0]
            out.append(
                {
                    "k": "port",
                    "algo": self.algo,
                    "t": row["t"],
                    "port": row["port"],
                    "util": row["util"],
                    "y_mbps": _mbps(rec["y_Bps"]),
                    "c_mbps": _mbps(rec["capacity_Bps"]),
                    "r_mbps": _mbps(rec.get("rate_Bps")),
                    "queue_pkts": row["queue_pkts"],
                    "drops": row["drops"],
                    "state": state_of(self.kind, rec),
                    "rec": rec,
                }
            )
        for line in self.flows.lines():
            s = json.loads(line)
            out += self._flow(s["flow"], float(s["t"]), int(s["rx_pkts"]))
        return out

    def _flow(self, name: str, t: float, n: int) -> list[dict[str, Any]]:
        """metrics.flow_rates, one sample at a time."""
        prev = self.last.get(name)
        self.last[name] = (t, n)
        if prev is None or not (t > prev[0] and n >= prev[1]):
            return []
        pps = (n - prev[1]) / (t - prev[0])
        return [self._flow_event(name, round(t, 4), pps)]

    def _flow_event(self, name: str, t: float, pps: float) -> dict[str, Any]:
        mbps = pps * self.plan.frame * 8 / 1e6
        return {"k": "flow", "algo": self.algo, "t": t, "flow": name, "pps": pps, "mbps": mbps}

    def csv_flows(self, run_dir: Path) -> list[dict[str, Any]]:
        """Fallback for runs without flows.jsonl: the rates flows.csv stored."""
        path = run_dir / "flows.csv"
        if not path.is_file() or path.stat().st_size == 0:
            return []
        with path.open() as f:
            rows = [r for r in csv.DictReader(f) if r["algo"] == self.algo]
        return [self._flow_event(r["flow"], float(r["t"]), float(r["rate_pps"])) for r in rows]


class RunFeed:
    """Every event of a run so far, in order; clients keep their own index into it."""

    def __init__(self, plan: Plan, run_dir: Path | None = None) -> None:
        self.plan = plan
        self.run_dir = run_dir
        self.events: list[dict[str, Any]] = []
        self._algos: dict[str, AlgoFeed] = {}
        self._done = False
        self._lock = threading.Lock()

    def attach(self, run_dir: Path) -> None:
        """Live: the driver made the run folder."""
        with self._lock:
            self.run_dir = run_dir

    @property
    def done(self) -> bool:
        return self._done

    def since(self, index: int) -> list[dict[str, Any]]:
        with self._lock:
            self._poll()
            return self.events[index:]

    def _poll(self) -> None:
        run_dir = self.run_dir
        if run_dir is None or self._done:
            return
        summary_path = run_dir / "summary.json"
        finished = summary_path.is_file()
        for algo in _folders(self.plan):
            folder = run_dir / algo
            if algo not in self._algos and folder.is_dir():
                self._algos[algo] = AlgoFeed(self.plan, algo, folder)
                self.events.append({"k": "algo", "algo": algo, "kind": self._algos[algo].kind})
            if algo in self._algos:
                self.events += self._algos[algo].poll()
        if finished:
            summary = json.loads(summary_path.read_text())
            for feed in self._algos.values():
                if not feed.last:  # no flows.jsonl: an older record
                    self.events += feed.csv_flows(run_dir)
            self.events.append({"k": "done", "summary": summary})
            self._done = True
