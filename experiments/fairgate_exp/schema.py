"""The experiment file's schema (pydantic v2): every section, key, default and unit check.

Values with units stay strings in the model (so the resolved file reads like the input) and
are checked when the file is loaded; ``plan.py`` turns them into numbers. Cross-references
(links to known nodes, flows with a route, phases inside the run, expectations on recorded
metrics) are checked by ``check.py`` after this schema has accepted the shapes.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator

from fairgate_exp import units


def _rate(v: str) -> str:
    units.parse_rate(v, "capacity")
    return v


def _rate_or_line(v: str) -> str:
    """A rate, or ``"line"``: the line rate (no limit), e.g. to undo a capacity in a scale."""
    if v != "line":
        units.parse_rate(v, "capacity")
    return v


def _time(v: str) -> str:
    units.parse_time(v)
    return v


def _ptime(v: str) -> str:
    units.parse_time(v, allow_zero=False)
    return v


def _pkts(v: str) -> str:
    units.parse_packets(v)
    return v


def _bytes(v: str) -> str:
    units.parse_bytes(v)
    return v


def _period(v: str) -> str:
    if v != "auto":
        units.parse_time(v, "control period", allow_zero=False)
    return v


def _fraction(v: str | float) -> float:
    """``"10%"`` or a number (0.1)."""
    if isinstance(v, str):
        s = v.strip()
        if not s.endswith("%"):
            raise ValueError(f'{v!r}: write a percentage like "10%" or a fraction like 0.1')
        try:
            return float(s[:-1]) / 100
        except ValueError:
            raise ValueError(f"{v!r} is not a percentage") from None
    return float(v)


RateStr = Annotated[str, BeforeValidator(_rate)]
LineRateStr = Annotated[str, BeforeValidator(_rate_or_line)]
TimeStr = Annotated[str, BeforeValidator(_time)]
PosTimeStr = Annotated[str, BeforeValidator(_ptime)]
PktStr = Annotated[str, BeforeValidator(_pkts)]
ByteStr = Annotated[str, BeforeValidator(_bytes)]
PeriodStr = Annotated[str, BeforeValidator(_period)]
Fraction = Annotated[str | float, BeforeValidator(_fraction)]
Name = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")]

# "none": no rate control in the switches (droptail); "ficcrd": none plus FICCRD
# (resource discovery, MAPR/DPF at core queues, receive-window rewriting at the edges)
Algorithm = Literal["qfcp", "rcp", "lestas", "xcp", "none", "ficcrd"]
ALGORITHMS: tuple[str, ...] = Algorithm.__args__  # type: ignore[attr-defined]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ExperimentInfo(Strict):
    name: Name | None = None  # default: the file's stem
    title: str = ""
    paper: str = ""  # the source it reproduces, if any
    duration: PosTimeStr = "30s"
    warmup: TimeStr = "5s"  # measurements (expectations) start after it
    seed: int = 1
    algorithms: list[Algorithm] = Field(default_factory=lambda: ["qfcp"], min_length=1)
    payload: ByteStr = "1200B"  # UDP payload of a data packet (rate header included)
    # simulator: every packet a host sends leaves its NIC after a random delay, uniform in
    # [0, host_jitter], in order per host (processing noise; without it a drop-tail queue
    # in the jitter-free model sorts its drops by arrival phase, Floyd and Jacobson 1992)
    host_jitter: TimeStr = "0ms"
    # simulator: TCP receivers delay their acks as Linux's do (TcpServer.delayed_ack: every
    # second full segment, a lone one after the adaptive delayed-ack timeout); off: every
    # segment acked at once. BMv2's hosts are Linux, so they always do.
    delayed_ack: StrictBool = False


class Control(Strict):
    # "auto": every port on its own timer, the mean RTT its packets carried (Lestas's d),
    # within [period_min, period_max]: by default the RTT histogram's range (1 ms - 1 s)
    period: PeriodStr = "auto"
    period_min: PosTimeStr = "1ms"
    period_max: PosTimeStr = "1s"
    session_window: PosTimeStr = "2s"  # session control's measurement window
    q_ref: PktStr = "10pkt"  # Lestas's queue target (packets of 1500 B)
    initial_rate: RateStr = "400kbit/s"  # what senders start at
    min_rate: RateStr = "8kbit/s"


class Scale(Strict):
    """A scale of the file: ``factor`` multiplies every capacity and flow rate; ``set``
    changes fields for this scale only (dotted paths as in ``[sweep.grid]``, ``*`` for
    every element of a list: ``"hosts.*.delay" = "0ms"``), applied in order after those
    of the scale it ``extends`` (whose factor it inherits when it gives none)."""

    factor: float | None = Field(default=None, gt=0)
    note: str = ""
    extends: Name | None = None
    set: dict[str, Any] = Field(default_factory=dict)
    # true: every bit/s capacity is served as packets/s of the data frame, as BMv2's
    # queues do (an ack or a FICCRD RD costs a whole packet); default: the extended
    # scale's, else false
    packet_queues: StrictBool | None = None


class Host(Strict):
    name: Name
    switch: Name
    port: int | None = Field(default=None, ge=1, le=15)  # default: the next free one
    capacity: LineRateStr | None = None  # switch -> host (default or "line": line rate)
    uplink: LineRateStr | None = None  # host -> switch, simulator (default: line, 100 Mbit/s)
    buffer: PktStr = "64pkt"
    delay: TimeStr = "0ms"  # one-way delay of the access link (both directions)
    ack_delay: TimeStr = "0ms"  # the receiver holds each ack this long (RTT emulation)
    gate_syn: StrictBool = False  # SYN admission on the switch port towards this host


class Link(Strict):
    a: Name
    b: Name
    a_port: int | None = Field(default=None, ge=1, le=15)
    b_port: int | None = Field(default=None, ge=1, le=15)
    capacity: LineRateStr  # a -> b ("line": the line rate)
    reverse_capacity: LineRateStr | None = None  # b -> a (default: line rate, as the labs)
    delay: TimeStr = "0ms"  # one-way propagation delay (both directions)
    buffer: PktStr = "64pkt"
    gate_syn: StrictBool = False  # SYN admission on a's port towards b


class Flow(Strict):
    """A paced, rate-controlled UDP flow of the host agents (fairgate_hosts.sender): one
    flow, ``count`` users, or an on/off flow (``every``) whose every on-period is a flow
    of its own (``fairgate_exp.flows`` expands them all)."""

    name: Name
    src: Name
    dst: Name
    start: TimeStr = "0s"
    stop: TimeStr | None = None  # default: the end of the run
    max_rate: RateStr | None = None  # the sender's desired rate (default: unlimited)
    count: int = Field(default=1, ge=1, le=2000)  # users: flows <name>-1 .. <name>-<count>
    stagger: TimeStr = "0s"  # user k starts (k - 1) x stagger after start
    # on/off: on from start to stop, then again every ``every`` (on-periods <name>-1,
    # <name>-2, ..; needs stop, stop - start < every, count 1)
    every: PosTimeStr | None = None
    until: TimeStr | None = None  # every: the last on-period starts before it (default: end)


class TcpGenerator(Strict):
    """TCP flows (kernel TCP on BMv2, the simulator's Reno model): bulk (``count`` flows of
    ``size`` at ``start``) or Poisson arrivals (``arrival_rate`` flows/s) with Pareto sizes
    (``pareto_shape``, ``mean_size``, capped at ``max_size``). Every flow's completion
    time is recorded; a flow still open at the end of the run is ``interrupted``."""

    name: Name
    src: Name
    dst: Name
    kind: Literal["bulk", "poisson"] = "bulk"
    # tcp: TCP flows; paced: the hosts' rate-controlled senders, one per flow of its size;
    # auto: paced under a rate algorithm, TCP under "none" (QFCP Fig. 1's comparison)
    transport: Literal["tcp", "paced", "auto"] = "tcp"
    count: int = Field(default=1, ge=1)
    size: ByteStr = "100MB"  # bulk: bytes per flow
    arrival_rate: float | None = Field(default=None, gt=0)  # flows/s (poisson)
    mean_size: ByteStr = "10kB"
    max_size: ByteStr | None = None
    pareto_shape: float = Field(default=1.5, gt=1)
    mss: ByteStr = "1448B"
    # the receiver's window: "default" is the simulator's 6 MiB (Linux's tcp_rmem max) and
    # the kernel's own on BMv2
    rwnd: ByteStr | Literal["default"] = "default"
    # "reno" sets the hosts' kernel TCP to Reno on BMv2 (the simulator's TCP is Reno)
    congestion_control: Literal["default", "reno"] = "default"
    whole_segments: StrictBool = False  # round every size up to whole segments (sizes in packets)
    syn_retries: int = Field(default=3, ge=0)  # the labs' tcp_syn_retries
    max_open: int | None = Field(default=None, ge=1)  # beyond it an arrival is "capped"
    hold: TimeStr = "0ms"  # the server holds every packet it sends (RTT emulation)
    # simulator only: every TCP packet of the client and server leaves after a random
    # processing delay, uniform in [0, jitter], in order per sender: the lab's hosts and
    # BMv2 have it for real, and without it drop-tail queues lock in on ack-clocked
    # packets (docs/session-control.md, "TCP in the simulator and on BMv2")
    jitter: TimeStr = "0ms"
    # simulator only: SYN and data retransmission timers fire on Linux's timer wheel of
    # this HZ (this lab's kernel: 250), which batches the retransmissions of all flows
    kernel_hz: int | None = Field(default=None, ge=1)
    start: TimeStr = "0s"
    stop: TimeStr | None = None  # arrivals stop here (default: the end of the run - drain)
    drain: TimeStr = "0s"  # with no stop: arrivals end this long before the run does


class CmApp(Strict):
    """A Congestion Manager app of the hosts (``fairgate_hosts.apps``) on ``src``: ``bulk``
    (``flows`` UDP flows of one macroflow), ``audio`` (a layered audio flow, frames every
    ``frame``, choosing among ``layers``, plus ``flows`` bulk flows in the same macroflow)
    or ``tcp`` (TCP/CM: ``flows`` TCP uploads of ``size`` to ``dst``'s TCP sink whose every
    segment leaves when the CM grants it; TCP reports each ack to the CM with
    ``cm_update``, losses and timeouts included, and its own congestion window never
    binds). Its flows are recorded as ``<name>-<i>`` (and ``<name>-audio``).

    The apps of one ``src`` share that host's one CM: flows to one ``dst`` are one
    macroflow, whatever the app. Feedback: ``bulk``/``audio`` flows get it from the CM's
    probes (``probes_per_rtt`` per smoothed RTT), ``tcp`` flows from TCP's acks; the rate
    is the CM's own AIMD under algorithm ``none`` (drop-tail), bounded by the switches'
    explicit rate under a rate algorithm (the switch-assisted extension)."""

    name: Name
    src: Name
    dst: Name
    app: Literal["bulk", "audio", "tcp"] = "bulk"
    flows: int = Field(default=1, ge=0, le=16)
    # the HRR scheduler's weight of each flow (default: all 1); audio's flow is weight 1
    weights: list[Annotated[float, Field(gt=0)]] | None = None
    stagger: TimeStr = "0s"  # flow i opens i x stagger after start (Fig. 7)
    # exponential aging's half-life (Fig. 6): the minimum RTT (the paper's), the smoothed
    # RTT (the paper's first choice), or no aging (Fig. 4 measures feedback alone)
    aging: Literal["min_rtt", "srtt", "off"] = "min_rtt"
    probes_per_rtt: float = Field(default=2.0, gt=0, le=64)  # feedback frequency (Fig. 4)
    # each probe interval drawn from [1 - s, 1 + s] x the interval (0: fixed; RTCP's 0.5)
    probe_spread: float = Field(default=0.5, ge=0, lt=1)
    size: ByteStr = "100MB"  # tcp: bytes per connection
    mss: ByteStr = "1448B"  # tcp: segment size
    layers: list[RateStr] = Field(
        default_factory=lambda: [f"{10 * 2**i}kbit/s" for i in range(6)], min_length=1
    )
    frame: PosTimeStr = "40ms"
    # audio: "frames" (one frame per frame interval, its size the layer's) or "full" (data
    # packets of the file's payload, as often as the layer allows: the paper's 1 KB packets)
    packets: Literal["frames", "full"] = "frames"
    initial_rate: RateStr = "192kbit/s"  # the CM's rate before feedback (scaled)
    start: TimeStr = "0s"
    stop: TimeStr | None = None


class Variant(Strict):
    """One configuration of the SYN gates, run for every algorithm: no gating, a static
    admit rate on every gated port, or the controller's session control (Kasera et al.
    strategy 1 or 2). ``duration``/``warmup`` override the experiment's for this variant."""

    name: Name
    session: Literal["off", "strategy1", "strategy2"] = "off"
    admit_rate: float | None = Field(default=None, gt=0)  # flows/s (SYNs admitted)
    duration: PosTimeStr | None = None
    warmup: TimeStr | None = None


class Phase(Strict):
    """A named window of the run (joins and leaves happen at phase boundaries)."""

    name: Name
    start: TimeStr
    end: TimeStr | None = None  # default: the next phase's start, or the end of the run


class CapacityChange(Strict):
    """At ``at``, the output port ``port`` ("s1->s2") starts serving ``capacity`` (scaled by
    the scale's factor like every capacity; "line": no limit): the simulator changes the
    port's service rate, BMv2 its egress queue rate over Thrift (section V of Kasera et al.:
    the bottleneck's capacity halved mid-run)."""

    at: TimeStr
    port: str
    capacity: LineRateStr


Metric = Literal[
    "maxmin",
    "utilisation",
    "drops",
    "queue",
    "jain",
    "flow_rate",
    "completion_rate",
    "fct",
    "fct_arrived",
    "goodput",
    "convergence",
    "flow_number",
    "ratio",
    "settling",
]

#: the metrics judged on a variant's TCP summary (``versus``: over other variants): completed
#: flows/s, the mean FCT of the flows completing in the window, and the mean FCT of the flows
#: arriving in it (``fct_arrived_s``, hosts' ``traffic.records.summarize``)
TCP_METRICS = ("completion_rate", "fct", "fct_arrived")

#: what a ``ratio`` expectation divides: mean flow rates (packets/s) of ``flows`` over
#: ``versus``, ports' loss rates (drops over arrivals) of ``ports`` over ``versus``, or CM
#: apps' own loss rates (``cm_loss``: the bytes their answered probes covered that the
#: receiver did not count, over the bytes covered; whole run of the app) of ``flows``
#: (CM app names) over ``versus``
RatioOf = Literal["flow_rate", "loss_rate", "cm_loss"]


class Selector(Strict):
    """What a metric is taken over: the keys an ``[[expect]]`` and a ``[measure]`` metric
    share (the metric, its ports or flows, its window, the runs it applies to)."""

    metric: Metric
    ports: list[str] | None = None  # utilisation/drops/queue; default: every measured port
    flows: list[Name] | None = None  # flow_rate/jain/maxmin; default: every flow
    value: RateStr | None = None  # flow_rate: the expected rate
    # queue: the target in data frames (default: Lestas's q_ref, judged for lestas only)
    target: PktStr | None = None
    phase: Name | None = None  # default: from warmup to the end
    algorithms: list[Algorithm] | None = None  # default: every algorithm of the run
    variants: list[Name] | None = None  # default: every variant
    # ratio: the sum over ``flows`` (or ``ports``) divided by the sum over ``versus``
    # (flow names, or port labels), judged against min/max; completion_rate and fct:
    # ``versus`` names variants, and the judged variants' value over the best of theirs
    # is judged against min/max (metrics.judge_versus)
    of: RatioOf = "flow_rate"
    versus: list[str] | None = None
    # completion_rate with versus: compare only with the versus variants (static gates)
    # whose admit rate is at most (1 + feasible) x their completion rate, the constraint
    # paper 000's strategy 2 searches under ("maximizes the flow completion rate but does
    # not exceed the completion rate"); the fraction covers SYNs admitted again after the
    # queue behind the gate dropped them
    feasible: Fraction | None = None


class Expect(Selector):
    """One judged expectation. ``within`` is a relative tolerance; ``min``/``max`` bounds."""

    within: Fraction | None = None
    min: float | None = None
    max: float | None = None


def _measured(v: Any) -> Any:
    """A ``[measure]`` metric: a metric name alone (``"completion_rate"``) or a table of
    an expectation's selectors; bounds are refused (a measured value is not judged)."""
    if isinstance(v, str):
        return {"metric": v}
    if isinstance(v, dict):
        bounds = [k for k in ("min", "max") if k in v]
        if bounds:
            raise ValueError(
                f"{' and '.join(bounds)}: a measured metric is recorded, not judged "
                "(no bounds); to judge it, make it an [[expect]]"
            )
    return v


class Measured(Selector):
    """One value recorded without a verdict: what the ``[[expect]]`` of the same selectors
    would measure, in the run record's ``measured`` (and a sweep's table), never PASS/FAIL.
    ``within`` only for ``convergence``, where it defines the band that counts as
    converged; elsewhere it is a tolerance to judge by, which a measured value has none of."""

    within: Fraction | None = None


class Measure(Strict):
    ports: list[str] | None = None  # "s1->s2" / "s1->h1"; default: every link's a -> b
    flows: StrictBool = True
    sample: PosTimeStr = "200ms"  # per-flow rate sampling
    # per-flow traces in the run record (traces.csv): every sample, each CM and bulk TCP
    # flow's sequence number (packets delivered so far), its rate and its loss events so
    # far (TCP: retransmissions; CM: the macroflow's rate halvings on loss)
    traces: StrictBool = False
    queue: Literal["histogram", "exact"] = "histogram"
    # values recorded without a verdict (``Measured``): the sweep table's and the report's
    # measured columns, e.g. metrics = ["completion_rate"]
    metrics: list[Annotated[Measured, BeforeValidator(_measured)]] = Field(default_factory=list)


class Agree(Strict):
    """The simulator against BMv2 on one figure of the same file at the same scale,
    judged by ``make report`` from each engine's newest record (a run of one engine has
    nothing to compare, so no run judges it). BMv2 is the behavioural reference: the
    verdict passes when |sim - bmv2| <= ``within`` x bmv2."""

    metric: Literal["completion_rate"]  # a TCP generator's completed flows/s, judged window
    tcp: Name | None = None  # the generator; default: the file's only one
    variants: list[Name] | None = None  # each compared on its own
    best_of: list[Name] | None = None  # the best of these in each engine (may differ)
    within: Fraction

    @model_validator(mode="after")
    def _one_selection(self) -> Agree:
        if (self.variants is None) == (self.best_of is None):
            raise ValueError("give variants (each compared) or best_of (the best compared)")
        if not (self.variants or self.best_of):
            raise ValueError("variants / best_of: name at least one variant")
        if not self.within > 0:
            raise ValueError(f"within must be > 0, got {self.within}")
        return self


class Sweep(Strict):
    grid: dict[str, list[Any]] = Field(default_factory=dict)  # "links.0.capacity" -> values
    # Paths whose lists (all of the first grid list's length) vary together with the first
    # grid key: point i takes value i of each ("flows.0.stagger" beside "links.0.delay").
    zip: dict[str, list[Any]] = Field(default_factory=dict)


class Ficcrd(Strict):
    """FICCRD's parameters (algorithm ``ficcrd``; the controller's defaults). Host-facing
    ports are sources and edges; switch-to-switch ports (``core = "all"``: every port) are
    core queues with Q0 = bur x their buffer."""

    rd_interval: int = Field(default=8, ge=1, le=0xFFFF)  # k: one RD per k packets of a flow
    core: Literal["links", "all"] = "links"


class ExperimentFile(Strict):
    experiment: ExperimentInfo = Field(default_factory=ExperimentInfo)
    control: Control = Field(default_factory=Control)
    scales: dict[Name, Scale] = Field(default_factory=dict)
    switches: list[Name] = Field(min_length=1)
    hosts: list[Host] = Field(min_length=2)
    links: list[Link] = Field(default_factory=list)
    flows: list[Flow] = Field(default_factory=list)
    tcp: list[TcpGenerator] = Field(default_factory=list)
    variants: list[Variant] = Field(default_factory=list)
    cm: list[CmApp] = Field(default_factory=list)
    phases: list[Phase] = Field(default_factory=list)
    capacity_changes: list[CapacityChange] = Field(default_factory=list)
    measure: Measure = Field(default_factory=Measure)
    expect: list[Expect] = Field(default_factory=list)
    agree: list[Agree] = Field(default_factory=list)  # sim vs BMv2, judged by the report
    ficcrd: Ficcrd = Field(default_factory=Ficcrd)
    paper: dict[str, str | float | int] = Field(default_factory=dict)  # printed beside ours
    sweep: Sweep | None = None
