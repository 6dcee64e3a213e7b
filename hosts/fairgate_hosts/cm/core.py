"""The sans-IO Congestion Manager: macroflows per destination and the API of Fig. 8.

Every call takes ``now_us`` and returns the events it caused (:class:`AppNotify`,
:class:`ChangeRate`, :class:`SendProbe`); callbacks given to :meth:`CongestionManager.open`
are invoked for the flow's events as well. The caller must call :meth:`tick` at
:meth:`next_deadline` (grants are paced at the macroflow's rate, probes go out twice per
sRTT, aging needs time to pass).

Feedback reaches a macroflow in two ways: ``update`` (implicit feedback from an application,
e.g. acks of rate-header flows, which also carry the network's explicit rate) and probe
responses (explicit feedback from the receiver's agent, see ``receiver.py``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.cm.aimd import AimdRate
from fairgate_hosts.cm.probe import ProbeBook
from fairgate_hosts.cm.scheduler import HierarchicalRoundRobin
from fairgate_hosts.receiver import PROBE_COUNT
from fairgate_hosts.wire import RATE_UNLIMITED, u32, unwrap
from fairgate_p4 import generated as g
from fairgate_p4.header import HEADER_BYTES, HeaderError, RateHeader


@dataclass(frozen=True, slots=True)
class AppNotify:
    flow: int
    nbytes: int


@dataclass(frozen=True, slots=True)
class ChangeRate:
    flow: int
    rate_Bps: float


@dataclass(frozen=True, slots=True)
class SendProbe:
    dst: str
    data: bytes


Event = AppNotify | ChangeRate | SendProbe


@dataclass(frozen=True, slots=True)
class CMEntry:
    """``struct cm_entry`` of the paper's Fig. 8: what ``cm_query`` fills in."""

    dst: str
    rate: float  # bytes/s: the macroflow's sustainable rate
    mean_rtt: float  # seconds (smoothed RTT)
    rttvar: float  # seconds


AppNotifyCb = Callable[[int], None]
ChangeRateCb = Callable[[float], None]


@dataclass(frozen=True, slots=True)
class CMConfig:
    mss: int = 1200
    initial_rate_Bps: float = 24_000.0
    min_rate_Bps: float = 150.0
    max_rate_Bps: float = 125_000_000.0
    init_rtt_us: int = 100_000
    probes_per_rtt: float = 2.0
    probing: bool = True
    burst_bytes: int = 2400
    change_rate_threshold: float = 0.05
    loss_threshold: float = 0.0
    aging: str = "min_rtt"  # exponential aging's half-life: "min_rtt", "srtt" or "off"
    # A probe that falls due while a grant is due within one probe interval rides on that
    # grant's data packet (``take_probe``) instead of being a packet of its own: the paper's
    # probe is a small message, and a queue that serves packets (BMv2's) would otherwise
    # charge each probe a full data packet's slot. With no data due it goes on its own.
    probe_on_data: bool = True
    # Each probe interval drawn uniformly from [1 - probe_spread, 1 + probe_spread] x sRTT /
    # probes_per_rtt (0: fixed), as RTCP spreads its reports ([0.5, 1.5], RFC 3550 6.3.1):
    # at a fixed interval a probe can keep one phase against a drop-tail port's departures
    # and be lost at every onset of a full queue (docs/labs/cm-droptail.md, "How much the
    # CM verdicts rest on timing noise"). ``seed`` seeds the draws (None: the OS's entropy).
    probe_spread: float = 0.5
    seed: int | str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.probe_spread < 1.0:
            raise ValueError(f"probe_spread must be in [0, 1), got {self.probe_spread}")


@dataclass(slots=True)
class _Flow:
    fid: int
    src: str
    dst: str
    weight: float
    app_notify: AppNotifyCb | None
    change_rate: ChangeRateCb | None
    reported_Bps: float | None = None
    granted: int = 0
    sent: int = 0
    probed: bool = True  # its bytes count in probes (False: it reports via update)
    feedback_us: int | None = None  # its last update() other than a timeout


@dataclass(slots=True)
class Macroflow:
    dst: str
    aimd: AimdRate
    sched: HierarchicalRoundRobin
    probes: ProbeBook = field(default_factory=ProbeBook)
    flows: set[int] = field(default_factory=set)
    credit: float = 0.0
    last_credit_us: int | None = None
    sent_since_feedback: int = 0
    next_probe_us: int | None = None
    last_sent_us: int | None = None  # the last send of a probed flow
    probe_due_us: int | None = None  # a probe waits for a data packet to carry it since

    @property
    def rate_Bps(self) -> float:
        return self.aimd.effective_Bps


@dataclass(slots=True)
class ProbeTotals:
    """What the answered probes of one destination covered: bytes the probed flows sent,
    and how many of them the receiver did not count (the CM's own view of its losses)."""

    responses: int = 0
    sent_bytes: int = 0
    lost_bytes: int = 0


@dataclass
class CongestionManager:
    cfg: CMConfig = field(default_factory=CMConfig)
    macroflows: dict[str, Macroflow] = field(default_factory=dict)
    flows: dict[int, _Flow] = field(default_factory=dict)
    # per destination, kept when its macroflow ends
    probe_totals: dict[str, ProbeTotals] = field(default_factory=dict)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    # the probe spread's draws, built on the first (none with probe_spread 0)
    _rng: random.Random | None = field(default=None, init=False)

    # ------------------------------------------------------------------ API (Fig. 8)
    def open(
        self,
        src: str,
        dst: str,
        weight: float = 1.0,
        app_notify: AppNotifyCb | None = None,
        change_rate: ChangeRateCb | None = None,
        now_us: int = 0,
        probed: bool = True,
    ) -> int:
        """``probed=False``: the flow's application reports feedback itself (``update``,
        as TCP/CM does from its acks); its bytes stay out of the probes' counts (the
        receiver agent counts only the probed flows' packets) and it starts no probing."""
        if not weight > 0:
            raise ValueError("weight must be > 0")
        mf = self.macroflows.get(dst)
        if mf is None:
            c = self.cfg
            aimd = AimdRate(
                mss=c.mss,
                initial_rate_Bps=c.initial_rate_Bps,
                min_rate_Bps=c.min_rate_Bps,
                max_rate_Bps=c.max_rate_Bps,
                init_rtt_us=c.init_rtt_us,
                aging_basis=c.aging,
            )
            mf = self.macroflows[dst] = Macroflow(dst, aimd, HierarchicalRoundRobin())
        fid = next(self._ids)
        self.flows[fid] = _Flow(fid, src, dst, weight, app_notify, change_rate, probed=probed)
        mf.flows.add(fid)
        mf.sched.add(fid, weight)
        self._feedback_kind(mf)
        self._dispatch(self._rate_changes(mf))
        return fid

    def _feedback_kind(self, mf: Macroflow) -> None:
        """Whether every flow of the macroflow is probed (its feedback is its probes):
        aging's first wait and the probes' send and delivery rates depend on it. Kept on
        open and close, the only places the macroflow's flows change."""
        mf.aimd.probe_feedback = all(self.flows[f].probed for f in mf.flows)

    def request(self, fid: int, nbytes: int, now_us: int) -> list[Event]:
        flow = self._flow(fid)
        if nbytes <= 0:
            raise ValueError("nbytes must be > 0")
        mf = self.macroflows[flow.dst]
        mf.sched.request(fid, int(nbytes))
        return self.tick(now_us)

    def notify(self, fid: int, nsent: int, now_us: int) -> list[Event]:
        flow = self._flow(fid)
        if nsent < 0:
            raise ValueError("nsent must be >= 0")
        mf = self.macroflows[flow.dst]
        flow.sent += nsent
        mf.sent_since_feedback += nsent
        if flow.probed:
            mf.probes.on_sent(nsent)
            if nsent:
                mf.last_sent_us = now_us
        return self.tick(now_us)

    def charge(self, fid: int, nsent: int, now_us: int) -> list[Event]:
        """Bytes ``fid`` sent without a grant (TCP/CM: the kernel's own retransmissions,
        which the paper's TCP/CM sends on grants too): counted as sent (``notify``) and
        paid from the macroflow's credit, which may go negative, so the next grants wait
        until the rate has covered them.

        The debt is at most one window at the current rate (``rate x sRTT``, at least one
        MSS; ``_grants`` keeps it so when the rate falls): bytes sent outside the CM's
        window hold it for about the round trip they are in flight, as a window-based
        TCP/CM's would, not for as long as the rate takes to pay for them. Without the
        bound, the kernel's go-back-N burst after a timeout (its own window is huge so that
        it never binds) left hundreds of kB of debt at the one MSS per sRTT the timeout
        restarts from; with nothing in flight no feedback could raise that rate, and
        TCP/CM sent nothing for 50 s (BMv2 cm-tcp-trace, 1 Mbit/s pair)."""
        if nsent < 0:
            raise ValueError("nsent must be >= 0")
        mf = self.macroflows[self._flow(fid).dst]
        # the credit up to now, before the debt: the grants it pays for are made here and
        # must reach their flows (dropping them lost the bytes an app had requested: the
        # audio app sharing its CM with TCP/CM waited for them for ever, skipping frames)
        events = self._dispatch(self._grants(mf, now_us))
        mf.credit = max(mf.credit - nsent, -self._window(mf))
        return events + self.notify(fid, nsent, now_us)

    def update(
        self,
        fid: int,
        nrecd: int,
        loss_occurred: bool,
        rtt_us: int | None,
        now_us: int,
        persistent: bool = False,
        explicit_rate_kbps: int | None = None,
    ) -> list[Event]:
        """Feedback: ``nrecd`` bytes arrived, whether losses occurred (``persistent``: a
        timeout), an RTT sample, and the path's explicit rate if it has one."""
        flow = self._flow(fid)
        mf = self.macroflows[flow.dst]
        if explicit_rate_kbps is not None:
            unlimited = explicit_rate_kbps in (RATE_UNLIMITED, 0) or explicit_rate_kbps < 0
            mf.aimd.set_explicit(None if unlimited else explicit_rate_kbps * 125.0)
        if rtt_us is not None and rtt_us <= 0:
            rtt_us = None
        others = [
            self.flows[f].feedback_us
            for f in mf.flows
            if f != fid and self.flows[f].feedback_us is not None
        ]
        if persistent and others and now_us - max(others) < mf.aimd.srtt_us:  # type: ignore[type-var]
            # one flow timed out while another flow of the macroflow got feedback within
            # the last sRTT: the path is not silent, so this is a loss, not persistent
            # congestion (the CM keeps congestion state for the ensemble; the RTO of a
            # flow that sends sparsely, its share being small, says little about the path)
            persistent, loss_occurred = False, True
        if not persistent:
            flow.feedback_us = now_us
        if persistent:
            mf.aimd.on_timeout(now_us)
            mf.aimd.mark_feedback(now_us)
        elif loss_occurred:
            mf.aimd.on_loss(now_us, rtt_us)
        else:
            mf.aimd.on_ack(max(0, nrecd), rtt_us, now_us)
        mf.sent_since_feedback = 0
        return self.tick(now_us)

    def query(self, fid: int) -> dict[str, Any]:
        flow = self._flow(fid)
        mf = self.macroflows[flow.dst]
        return {
            "dst": flow.dst,
            "rate_Bps": self._share(mf, flow),
            "macroflow_rate_Bps": mf.rate_Bps,
            "aimd_rate_Bps": mf.aimd.rate_Bps,
            "explicit_rate_Bps": mf.aimd.explicit_Bps,
            "srtt_us": mf.aimd.srtt_us,
            "rttvar_us": mf.aimd.rtt.rttvar_us,
            "min_rtt_us": mf.aimd.min_rtt_us,
            "slow_start": mf.aimd.slow_start,
        }

    def close(self, fid: int, now_us: int = 0) -> list[Event]:
        flow = self.flows.pop(fid, None)
        if flow is None:
            raise KeyError(f"no flow {fid}")
        mf = self.macroflows[flow.dst]
        mf.flows.discard(fid)
        mf.sched.remove(fid)
        if not mf.flows:
            del self.macroflows[flow.dst]
            return []
        self._feedback_kind(mf)
        return self._dispatch(self._rate_changes(mf))

    def set_weight(self, fid: int, weight: float) -> None:
        flow = self._flow(fid)
        self.macroflows[flow.dst].sched.set_weight(fid, weight)
        flow.weight = weight

    # ------------------------------------------------------------------ the paper's names
    # Fig. 8 of Balakrishnan, Rahul, Seshan (SIGCOMM 1999), with ``now_us`` added because
    # this core is sans-IO. The methods above are the same calls with Pythonic names.
    def cm_open(
        self,
        src: str,
        dst: str,
        *,
        weight: float = 1.0,
        app_notify: AppNotifyCb | None = None,
        change_rate: ChangeRateCb | None = None,
        now_us: int = 0,
    ) -> int:
        """``cm_id cm_open(addr src, addr dst)``; callbacks ``app_notify(nallowed)`` and
        ``change_rate(rate)`` are registered with the flow."""
        return self.open(src, dst, weight, app_notify, change_rate, now_us)

    def cm_request(
        self,
        cm_id: int,
        nbytes: int,
        minbytes: int | None = None,
        latency: float | None = None,
        *,
        now_us: int = 0,
    ) -> list[Event]:
        """``cm_request(id, nbytes, minbytes, latency)``. Grants come one MSS at a time as
        soon as the rate allows, which satisfies any ``minbytes`` up to one MSS; ``latency``
        (seconds the application can wait) is accepted and checked, not used."""
        if minbytes is not None and not 0 < minbytes <= nbytes:
            raise ValueError("minbytes must be in 1..nbytes")
        if latency is not None and latency < 0:
            raise ValueError("latency must be >= 0")
        return self.request(cm_id, nbytes, now_us)

    def cm_notify(self, cm_id: int, nsent: int, *, now_us: int = 0) -> list[Event]:
        """``cm_notify(id, nsent)``: ``nsent`` bytes went out."""
        return self.notify(cm_id, nsent, now_us)

    def cm_update(
        self,
        cm_id: int,
        nrecd: int,
        loss_occurred: bool,
        rtt: float | None,
        *,
        now_us: int = 0,
    ) -> list[Event]:
        """``cm_update(id, nrecd, loss_occurred, rtt)`` with ``rtt`` in seconds."""
        rtt_us = None if rtt is None else int(rtt * 1e6)
        return self.update(cm_id, nrecd, loss_occurred, rtt_us, now_us)

    def cm_query(self, dst: str) -> CMEntry:
        """``cm_query(cm_entry *entry, addr dst)``: the macroflow to ``dst``."""
        mf = self.macroflows.get(dst)
        if mf is None:
            raise KeyError(f"no macroflow to {dst}")
        return CMEntry(dst, mf.rate_Bps, mf.aimd.srtt_us / 1e6, mf.aimd.rtt.rttvar_us / 1e6)

    def cm_close(self, cm_id: int, *, now_us: int = 0) -> list[Event]:
        """``cm_close(id)``: the flow's share goes back to the macroflow's other flows."""
        return self.close(cm_id, now_us)

    # ------------------------------------------------------------------ probes
    def on_probe_response(self, dst: str, data: bytes, now_us: int) -> list[Event]:
        mf = self.macroflows.get(dst)
        if mf is None or len(data) < HEADER_BYTES + PROBE_COUNT.size:
            return []
        try:
            hdr = RateHeader.unpack(data)
        except HeaderError:
            return []
        if hdr.kind != g.FG_KIND_PROBE_ACK:
            return []
        nrecd = PROBE_COUNT.unpack_from(data, HEADER_BYTES)[0]
        this = unwrap(hdr.seq, mf.probes.next_seq)
        last = unwrap(hdr.ack, this - 1)
        res = mf.probes.on_response(this, last, nrecd, now_us)
        if res is None:
            return []
        tot = self.probe_totals.setdefault(dst, ProbeTotals())
        tot.responses += 1
        tot.sent_bytes += max(0, res.nsent)
        tot.lost_bytes += max(0, res.nsent - res.nrecd)
        rtt = res.rtt_us if res.rtt_us > 0 else None
        # The rates the covered bytes left and arrived at, when they are the macroflow's
        # (every flow is probed: TCP/CM's bytes are not in the probes' counts)
        sent = delivered = None
        out, back = res.send_span_us, res.recv_span_us
        if out is not None and back is not None and out > 0 and back > 0 and mf.aimd.probe_feedback:
            sent = res.nsent * 1e6 / out
            delivered = res.nrecd * 1e6 / back
        if res.loss > self.cfg.loss_threshold:
            mf.aimd.on_loss(now_us, rtt, sent, delivered, res.sent_from_us)
        else:
            mf.aimd.on_ack(res.nrecd, rtt, now_us, sent, delivered)
        mf.sent_since_feedback = 0
        return self.tick(now_us)

    # ------------------------------------------------------------------ time
    def tick(self, now_us: int) -> list[Event]:
        events: list[Event] = []
        for mf in list(self.macroflows.values()):
            mf.aimd.age(now_us, active=mf.sent_since_feedback > 0)
            events.extend(self._grants(mf, now_us))
            events.extend(self._probe(mf, now_us))
            events.extend(self._rate_changes(mf))
        return self._dispatch(events)

    def next_deadline(self, now_us: int) -> int | None:
        times: list[int] = []
        for mf in self.macroflows.values():
            size = mf.sched.peek_size(self.cfg.mss)
            if size is not None:
                need = size - mf.credit
                times.append(now_us + max(1, int(need * 1e6 / mf.rate_Bps) + 1))
            if mf.sent_since_feedback > 0 and mf.aimd.aging_next_us is not None:
                times.append(mf.aimd.aging_next_us)
            if self._probing_active(mf, now_us):
                if mf.probe_due_us is not None:  # no data carried it: it goes on its own
                    times.append(mf.probe_due_us + self._probe_interval_us(mf))
                elif mf.next_probe_us is not None:
                    times.append(mf.next_probe_us)
        return min(times) if times else None

    # ------------------------------------------------------------------ internals
    def _flow(self, fid: int) -> _Flow:
        flow = self.flows.get(fid)
        if flow is None:
            raise KeyError(f"no flow {fid}")
        return flow

    def _share(self, mf: Macroflow, flow: _Flow) -> float:
        total = sum(self.flows[f].weight for f in mf.flows)
        return mf.rate_Bps * flow.weight / total if total > 0 else 0.0

    def _window(self, mf: Macroflow) -> float:
        """The macroflow's rate as a window: ``rate x sRTT``, at least one MSS."""
        return max(float(self.cfg.mss), mf.rate_Bps * mf.aimd.srtt_us / 1e6)

    def _grants(self, mf: Macroflow, now_us: int) -> list[Event]:
        if mf.last_credit_us is not None:
            mf.credit += mf.rate_Bps * (now_us - mf.last_credit_us) / 1e6
        mf.last_credit_us = now_us
        mf.credit = max(mf.credit, -self._window(mf))  # a debt (charge) is one window at most
        cap = max(float(self.cfg.burst_bytes), float(self.cfg.mss))
        events: list[Event] = []
        while True:
            size = mf.sched.peek_size(self.cfg.mss)
            if size is None:
                mf.credit = min(mf.credit, cap)
                break
            if mf.credit < size:
                break
            grant = mf.sched.next_grant(self.cfg.mss)
            if grant is None:
                break
            fid, nbytes = grant
            mf.credit -= nbytes
            self.flows[fid].granted += nbytes
            events.append(AppNotify(fid, nbytes))
        mf.credit = min(mf.credit, cap)
        return events

    def _probing_active(self, mf: Macroflow, now_us: int) -> bool:
        if not self.cfg.probing or mf.last_sent_us is None:
            return False
        return now_us - mf.last_sent_us <= 2 * mf.aimd.srtt_us

    def _probe_interval_us(self, mf: Macroflow) -> int:
        return max(1, int(mf.aimd.srtt_us / self.cfg.probes_per_rtt))

    def _next_probe_gap_us(self, mf: Macroflow) -> int:
        """The time to the next probe: the interval, spread by ``cfg.probe_spread``."""
        interval = self._probe_interval_us(mf)
        spread = self.cfg.probe_spread
        if spread <= 0:
            return interval
        if self._rng is None:
            self._rng = random.Random(self.cfg.seed)
        return max(1, int(interval * self._rng.uniform(1.0 - spread, 1.0 + spread)))

    def _data_due_within(self, mf: Macroflow, now_us: int, within_us: int) -> bool:
        """Whether a grant of a probed flow is due within ``within_us`` (or was granted
        in this tick and is still to be sent)."""
        size = mf.sched.peek_size(self.cfg.mss)
        if size is None:
            return False
        need = max(0.0, size - mf.credit)
        return need * 1e6 / mf.rate_Bps <= within_us

    def _probe(self, mf: Macroflow, now_us: int) -> list[Event]:
        if not self._probing_active(mf, now_us):
            mf.probe_due_us = None
            return []
        interval = self._probe_interval_us(mf)
        if mf.probe_due_us is not None:
            if now_us - mf.probe_due_us < interval:
                return []  # still waiting for a data packet to carry it
            mf.probe_due_us = None  # none came: send it on its own
        elif mf.next_probe_us is not None and now_us < mf.next_probe_us:
            return []
        elif self.cfg.probe_on_data and self._data_due_within(mf, now_us, interval):
            mf.probe_due_us = now_us
            return []
        seq = mf.probes.make_probe(now_us)
        mf.next_probe_us = now_us + self._next_probe_gap_us(mf)
        hdr = RateHeader(
            kind=g.FG_KIND_PROBE,
            seq=u32(seq),
            ts_us=u32(now_us),
            rtt_us=u32(int(mf.aimd.srtt_us)),
            rate_kbps=RATE_UNLIMITED,
        )
        return [SendProbe(mf.dst, hdr.pack())]

    def take_probe(self, dst: str, now_us: int, pending: int = 0) -> int | None:
        """A data packet of a probed flow to ``dst`` is about to leave: if a probe is due,
        it rides on that packet; returns the probe's number (None: no probe due).
        ``pending``: bytes of probed flows sent before this packet and not yet notified."""
        mf = self.macroflows.get(dst)
        if mf is None or mf.probe_due_us is None:
            return None
        mf.probe_due_us = None
        seq = mf.probes.make_probe(now_us, pending)
        mf.next_probe_us = now_us + self._next_probe_gap_us(mf)
        return seq

    def _rate_changes(self, mf: Macroflow) -> list[Event]:
        events: list[Event] = []
        thr = self.cfg.change_rate_threshold
        for fid in sorted(mf.flows):
            flow = self.flows[fid]
            share = self._share(mf, flow)
            old = flow.reported_Bps
            if old is None or abs(share - old) > thr * old:
                flow.reported_Bps = share
                events.append(ChangeRate(fid, share))
        return events

    def _dispatch(self, events: list[Event]) -> list[Event]:
        for ev in events:
            if isinstance(ev, AppNotify):
                flow = self.flows.get(ev.flow)
                if flow is not None and flow.app_notify is not None:
                    flow.app_notify(ev.nbytes)
            elif isinstance(ev, ChangeRate):
                flow = self.flows.get(ev.flow)
                if flow is not None and flow.change_rate is not None:
                    flow.change_rate(ev.rate_Bps)
        return events
