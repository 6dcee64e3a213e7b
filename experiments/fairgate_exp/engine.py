"""The engine interface both the simulator and the BMv2 lab implement.

The driver (``driver.py``) is written once against it: it builds the network for one
algorithm, starts host apps at their times, changes links, advances time (simulated
seconds in the simulator, wall seconds on BMv2) and reads the port and flow statistics.
Times are seconds since the experiment's time 0.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from fairgate_exp.plan import CmPlan, FlowPlan, Plan, TcpPlan


class Engine(Protocol):
    name: str  # "sim" | "bmv2"

    def build(self, plan: Plan, algo: str, run_dir: Path) -> None:
        """Network, controller and receiver agents for one algorithm; time 0 is now.
        ``plan.variant`` (if any) says how the SYN gates run: session control in the
        controller, or a static admit rate written to every gated port's meter."""

    def start_flow(self, flow: FlowPlan) -> None:
        """Starts a paced rate-controlled UDP sender (it stops itself at ``flow.stop_s``)."""

    def start_tcp(self, gen: TcpPlan) -> None:
        """Starts a TCP flow generator (its server on ``gen.dst`` and its client on
        ``gen.src``); arrivals stop at ``gen.stop_s``."""

    def start_cm(self, app: CmPlan) -> None:
        """Starts a Congestion Manager app (bulk, audio or tcp: TCP/CM) on ``app.src``,
        on that host's one CM (apps of one host share it; one macroflow per ``dst``);
        flow i opens at ``start_s + i * stagger_s`` with ``weights[i]``; ``aging`` and
        ``probes_per_rtt`` configure the CM. Its flows' receive counts (tcp: segments
        acknowledged) join ``flow_samples`` as ``app.flow_names()``."""

    def tcp_records(self) -> list[dict[str, Any]]:
        """One record per TCP flow (``FlowRecord.as_json``: scheduled_s, size, outcome,
        fct_s, ...), times since time 0; open flows are ``interrupted``."""

    def set_capacity(self, switch: str, port: int, pps: float | None, bps: float | None) -> None:
        """Changes the service rate of one output port (a link change)."""

    def advance(self, until_s: float) -> None:
        """Lets the experiment run up to ``until_s``."""

    def now(self) -> float: ...

    def port_records(self) -> list[dict[str, Any]]:
        """The controller's per-port, per-period records, ``t`` since time 0."""

    def flow_samples(self) -> dict[str, list[tuple[float, int]]]:
        """Per flow, (t, packets received so far) at the receiver, every sample period;
        a bulk TCP flow's count is its acknowledged segments (goodput)."""

    def tcp_retransmits(self) -> dict[str, list[tuple[float, int]]]:
        """Per bulk TCP flow, (t, segments retransmitted so far), every sample period."""

    def flow_traces(self) -> dict[str, list[tuple[float, int, int, float | None]]]:
        """With ``measure.traces``: per CM flow and bulk TCP flow, every sample period,
        (t, packets delivered so far, loss events so far, the CM's rate for the flow in
        kbit/s or None). Loss events: a TCP flow's retransmitted segments; a CM flow's
        macroflow rate halvings on loss (cm_update with loss, probe losses, timeouts)."""

    def close(self) -> dict[str, Any]:
        """Tears down what ``build`` made; returns facts about the run (events, wall time)."""


def controller_algo(algo: str) -> str:
    """The controller's ``--algo`` for an experiment's algorithm: FICCRD runs on no rate
    control (``none``) with its own tables (``--ficcrd``)."""
    return "none" if algo == "ficcrd" else algo
