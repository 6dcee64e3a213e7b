"""Sans-IO sender state machine for rate-header flows.

The core never reads a clock and never touches a socket: the caller passes ``now_us``
(integer microseconds of a monotonic clock) to :meth:`SenderCore.poll` and
:meth:`SenderCore.on_datagram`, and ``poll`` returns what to do next: :class:`Transmit`
(send these bytes now), :class:`Wait` (call ``poll`` again at ``until_us`` or when a datagram
arrives) or :class:`Finished`.

Modes (``SenderConfig.mode``):

- ``qfcp``: cwnd = granted rate x sRTT, packets paced at the granted rate (QFCP).
- ``lestas``: per-ack first-order window filter towards granted rate x sRTT, gain 0.1 when
  the ack carries the congestion flag and the window would grow, 1 otherwise, window >= 1
  packet; paced at window / sRTT (Lestas et al.).
- ``xcp``: XCP (Katabi et al. 2002): a window in bytes, ``cwnd = max(cwnd + H_feedback, s_min)``
  on every ack, ack-clocked and paced at ``xcp_pace_factor x cwnd / sRTT``; data packets are
  kind XCP_DATA with the XCP header (H_cwnd, H_feedback = the demand, the precomputed
  log2 terms) after the rate header; a loss halves the window (once per sRTT), a timeout
  takes it to at most one packet. The paper's floor s_min is one packet s (an ack-clocked
  window cannot be less); a paced sender can send one packet every few RTTs, so the floor
  is ``xcp_min_window_pkts`` x s (default 1/8). At the paper's floor a flow whose fair window
  is about one packet (the scaled labs: 1 Mbit/s shared by three flows at 10-40 ms) loses
  the negative feedback the floor clips and keeps more than its share (issue 14: 17.5 %
  from max-min on random topology seed 2, 8.7 % with 1/8).
- ``fixed``: constant rate (``fixed_rate_kbps``).
- ``cm``: a rate callback (e.g. the Congestion Manager) decides the rate.

Rates are counted on frames: a packet of ``packet_bytes`` UDP payload costs
``packet_bytes + frame_overhead`` bytes (Ethernet + IPv4 + UDP by default), which is what the
switches count. Run as ``python -m fairgate_hosts.sender`` for the UDP agent.
"""

from __future__ import annotations

import enum
import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from fairgate_hosts.pacer import Pacer
from fairgate_hosts.rtt import RttEstimator
from fairgate_hosts.wire import FRAME_OVERHEAD, RATE_UNLIMITED, u32, unwrap
from fairgate_p4 import generated as g
from fairgate_p4.header import (
    _XCP_PACKER,
    HEADER_BYTES,
    XCP_HEADER_BYTES,
    HeaderError,
    RateHeader,
)
from fairgate_p4.xcp_math import LG_NONE, sender_terms

# Final: C statics in the simulator's compiled build (scripts/sim_ext.py), not a module-dict
# lookup per packet
FEEDBACK_MAX: Final = g.FG_XCP_FEEDBACK_UNLIMITED
KIND_XCP_DATA: Final = g.FG_KIND_XCP_DATA
KIND_XCP_ACK: Final = g.FG_KIND_XCP_ACK
_KIND_DATA: Final = g.FG_KIND_DATA
_KIND_ACK: Final = g.FG_KIND_ACK


class Mode(enum.StrEnum):
    QFCP = "qfcp"
    LESTAS = "lestas"
    XCP = "xcp"
    FIXED = "fixed"
    CM = "cm"


def kbps_to_Bps(kbps: float) -> float:
    return kbps * 125.0


@dataclass(frozen=True, slots=True)
class SenderConfig:
    """Static parameters of one flow; rates in kbit/s, times in microseconds."""

    mode: Mode = Mode.QFCP
    packet_bytes: int = 1200
    frame_overhead: int = FRAME_OVERHEAD
    flow_bytes: int | None = None
    duration_us: int | None = None
    desired_rate_kbps: int = RATE_UNLIMITED
    initial_rate_kbps: int = 1000
    fixed_rate_kbps: int = 1000
    min_rate_kbps: int = 8
    max_rate_kbps: int = 1_000_000
    init_cwnd: float = 4.0
    max_cwnd: float = 100_000.0
    init_rtt_us: int = 100_000
    dupthresh: int = 3
    min_rto_us: int = 200_000
    give_up_us: int = 10_000_000
    log_interval_us: int = 100_000
    lestas_gain_congested: float = 0.1
    cm_window_factor: float = 2.0
    pacer_max_lag_us: float = 20_000.0
    xcp_pace_factor: float = 1.0
    xcp_min_window_pkts: float = 0.125

    def __post_init__(self) -> None:
        if self.packet_bytes < self.header_bytes or self.packet_bytes > 65507:
            raise ValueError(f"packet_bytes must be in [{self.header_bytes}, 65507]")
        if (self.flow_bytes is None) == (self.duration_us is None):
            raise ValueError("give exactly one of flow_bytes and duration_us")
        if self.flow_bytes is not None and self.flow_bytes <= 0:
            raise ValueError("flow_bytes must be > 0")
        if self.duration_us is not None and self.duration_us <= 0:
            raise ValueError("duration_us must be > 0")
        if not 0 < self.min_rate_kbps <= self.max_rate_kbps < RATE_UNLIMITED:
            raise ValueError("need 0 < min_rate_kbps <= max_rate_kbps < 2**32-1")
        for name in ("initial_rate_kbps", "fixed_rate_kbps"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be > 0")
        if not 0 < self.xcp_min_window_pkts <= 1:
            raise ValueError("xcp_min_window_pkts must be in (0, 1]")
        if self.dupthresh < 1 or self.init_cwnd < 1 or self.log_interval_us <= 0:
            raise ValueError("dupthresh, init_cwnd >= 1 and log_interval_us > 0 required")

    @property
    def header_bytes(self) -> int:
        """Headers before the data: the rate header, and XCP's after it in mode xcp."""
        return HEADER_BYTES + (XCP_HEADER_BYTES if self.mode is Mode.XCP else 0)

    @property
    def data_per_packet(self) -> int:
        return self.packet_bytes - self.header_bytes

    @property
    def frame_bytes(self) -> int:
        return self.packet_bytes + self.frame_overhead


@dataclass(frozen=True, slots=True)
class Feedback:
    """What the ``cm`` mode's rate callback learns from one ack, loss or timeout."""

    now_us: int
    acked_bytes: int
    rtt_us: int | None
    lost_packets: int
    timeout: bool
    explicit_rate_kbps: int | None
    congested: bool


RateCallback = Callable[[Feedback], float | None]


# The actions and ``_Tx`` write their ``__init__`` out: a dataclass's generated
# ``__init__`` is Python even in the simulator's mypyc build, and a flow builds one
# or more of them per packet. Same parameters; ``object.__setattr__`` as the generated
# one of a frozen dataclass does (a direct store in the compiled build).
@dataclass(frozen=True, slots=True)
class Transmit:
    data: bytes
    seq: int
    retransmission: bool

    def __init__(self, data: bytes, seq: int, retransmission: bool) -> None:
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "seq", seq)
        object.__setattr__(self, "retransmission", retransmission)


@dataclass(frozen=True, slots=True)
class Wait:
    until_us: int | None

    def __init__(self, until_us: int | None) -> None:
        object.__setattr__(self, "until_us", until_us)


@dataclass(frozen=True, slots=True)
class Finished:
    outcome: str

    def __init__(self, outcome: str) -> None:
        object.__setattr__(self, "outcome", outcome)


Action = Transmit | Wait | Finished


@dataclass(slots=True)
class _Tx:
    sent_us: int
    order: int
    lost: bool = False

    def __init__(self, sent_us: int, order: int, lost: bool = False) -> None:
        self.sent_us = sent_us
        self.order = order
        self.lost = lost


@dataclass(slots=True)
class SenderStats:
    sent_packets: int = 0
    sent_bytes: int = 0
    retransmissions: int = 0
    losses: int = 0
    timeouts: int = 0
    acks: int = 0
    acked_bytes: int = 0
    malformed_acks: int = 0
    duplicate_acks: int = 0
    late_feedback: int = 0
    ignored_packets: int = 0
    absurd_rates: int = 0
    rtt_rejected: int = 0


@dataclass(slots=True)
class SenderCore:
    """One flow's sender. ``flow_id`` only labels log records."""

    cfg: SenderConfig
    rate_callback: RateCallback | None = None
    flow_id: str = "flow"
    stats: SenderStats = field(default_factory=SenderStats)
    rtt: RttEstimator = field(init=False)
    cwnd: float = field(init=False)
    rate_Bps: float = field(init=False)
    granted_kbps: int | None = None
    congested: bool = False
    start_us: int | None = None
    end_us: int | None = None
    outcome: str | None = None
    _pacer: Pacer = field(init=False)
    _next_seq: int = 0
    _una: int = 0
    _total: int | None = None
    _out: dict[int, _Tx] = field(default_factory=dict)
    _order_q: deque[tuple[int, int]] = field(default_factory=deque)
    _lost: list[int] = field(default_factory=list)
    _n_lost: int = 0
    _tx_order: int = 0
    _hi_acked_order: int = -1
    _last_fb_sent_us: int | None = None
    _last_progress_us: int = 0
    _next_log_us: int = 0
    _last_log_us: int = 0
    _iv_sent_bytes: int = 0
    _records: list[dict[str, Any]] = field(default_factory=list)
    _zero: bytes = b""
    # mode xcp: the window in bytes (cwnd = cwnd_bytes / frame); None in the other modes
    cwnd_bytes: float | None = None
    _xcp_cut_us: int | None = None

    def __post_init__(self) -> None:
        cfg = self.cfg
        if cfg.mode is Mode.CM and self.rate_callback is None:
            raise ValueError("mode cm needs a rate_callback")
        self.rtt = RttEstimator(min_rto_us=cfg.min_rto_us)
        start_kbps = cfg.fixed_rate_kbps if cfg.mode is Mode.FIXED else cfg.initial_rate_kbps
        self.rate_Bps = kbps_to_Bps(self._clamp(start_kbps))
        self.cwnd = cfg.max_cwnd if cfg.mode is Mode.FIXED else cfg.init_cwnd
        self._pacer = Pacer(self.rate_Bps, max_lag_us=cfg.pacer_max_lag_us)
        if cfg.flow_bytes is not None:
            self._total = math.ceil(cfg.flow_bytes / cfg.data_per_packet)
        self._zero = bytes(cfg.packet_bytes)
        if cfg.mode is Mode.XCP:
            self.cwnd_bytes = cfg.init_cwnd * cfg.frame_bytes

    # ----------------------------------------------------------------- queries
    @property
    def finished(self) -> bool:
        return self.outcome is not None

    @property
    def inflight(self) -> int:
        return len(self._out) - self._n_lost

    @property
    def completion_time_us(self) -> int | None:
        if self.end_us is None or self.start_us is None:
            return None
        return self.end_us - self.start_us

    @property
    def snd_una(self) -> int:
        return self._una

    @property
    def next_seq(self) -> int:
        return self._next_seq

    def drain_log(self) -> list[dict[str, Any]]:
        """Log records produced so far (JSON-ready dicts), removed from the core."""
        out, self._records = self._records, []
        return out

    def abort(self, now_us: int, outcome: str = "aborted") -> Finished:
        """Stop the flow now (e.g. the agent got a signal); logs the final record."""
        if self.outcome is not None:
            return Finished(self.outcome)
        if self.start_us is None:
            self.start_us = self._last_log_us = now_us
        return self._finish(now_us, outcome)

    def set_rate(self, rate_Bps: float) -> None:
        """Impose a rate from outside (e.g. a CM change_rate callback)."""
        self._apply_rate(rate_Bps)

    # ----------------------------------------------------------------- main API
    def poll(self, now_us: int) -> Action:
        if self.outcome is not None:
            return Finished(self.outcome)
        if self.start_us is None:
            self.start_us = self._last_progress_us = self._last_log_us = now_us
            self._next_log_us = now_us + self.cfg.log_interval_us
            self._record_start()
        rto_at = self._check_timeout(now_us)
        self._maybe_log(now_us)
        end = self._duration_end()
        if self._total is not None and self._una >= self._total:
            return self._finish(now_us, "completed")
        if end is not None and now_us >= end:
            return self._finish(now_us, "completed")
        if now_us - self._last_progress_us > self.cfg.give_up_us and self._out:
            return self._finish(now_us, "stalled")
        # the earliest of the wake-up times (a running minimum: no list and no min() call
        # per poll, which the simulator's compiled build makes per packet)
        wake = self._next_log_us
        give_up = self._last_progress_us + self.cfg.give_up_us + 1
        if give_up < wake:
            wake = give_up
        if end is not None and end < wake:
            wake = end
        if rto_at is not None and rto_at < wake:
            wake = rto_at
        if self._has_data(now_us) and self.inflight < max(1.0, self.cwnd):
            deadline = self._pacer.next_deadline(now_us)
            if deadline <= now_us:
                return self._emit(now_us)
            paced = math.ceil(deadline)
            if paced < wake:
                wake = paced
        else:
            self._pacer.hold(now_us)
        return Wait(wake)

    def on_datagram(self, buf: bytes | bytearray | memoryview, now_us: int) -> None:
        """Process one received datagram (an ack, normally)."""
        try:
            hdr = RateHeader.unpack(buf)
        except HeaderError:
            self.stats.malformed_acks += 1
            return
        xcp = self.cfg.mode is Mode.XCP
        if hdr.kind != (KIND_XCP_ACK if xcp else _KIND_ACK):
            self.stats.ignored_packets += 1
            return
        feedback: int | None = None
        if xcp:
            if len(buf) < HEADER_BYTES + XCP_HEADER_BYTES:
                self.stats.malformed_acks += 1
                return
            feedback = _XCP_PACKER.unpack_from(buf, HEADER_BYTES)[1]
        if self.start_us is None or self.outcome is not None:
            self.stats.ignored_packets += 1
            return
        self._on_ack(hdr, now_us, feedback)

    # ----------------------------------------------------------------- internals
    def _clamp(self, kbps: float) -> float:
        return min(float(self.cfg.max_rate_kbps), max(float(self.cfg.min_rate_kbps), kbps))

    def _duration_end(self) -> int | None:
        if self.cfg.duration_us is None or self.start_us is None:
            return None
        return self.start_us + self.cfg.duration_us

    def _has_data(self, now_us: int) -> bool:
        if self._lost:
            return True
        if self._total is not None:
            return self._next_seq < self._total
        end = self._duration_end()
        return end is not None and now_us < end

    def _rto_deadline(self) -> int | None:
        q = self._order_q
        while q:
            order, seq = q[0]
            tx = self._out.get(seq)
            if tx is None or tx.order != order or tx.lost:
                q.popleft()
                continue
            return tx.sent_us + self.rtt.rto_us
        return None

    def _emit(self, now_us: int) -> Transmit:
        cfg = self.cfg
        retx = False
        seq = -1
        while self._lost:
            cand = heapq.heappop(self._lost)
            tx = self._out.get(cand)
            if tx is not None and tx.lost:
                seq, retx = cand, True
                tx.lost = False
                self._n_lost -= 1
                break
        if not retx:
            seq = self._next_seq
            self._next_seq += 1
        size = cfg.packet_bytes
        if self._total is not None and seq == self._total - 1 and cfg.flow_bytes is not None:
            size = cfg.header_bytes + (cfg.flow_bytes - seq * cfg.data_per_packet)
        order = self._tx_order
        self._tx_order += 1
        tx = self._out.get(seq)
        if tx is None:
            self._out[seq] = _Tx(now_us, order)
        else:
            tx.sent_us, tx.order = now_us, order
        self._order_q.append((order, seq))
        srtt = self.rtt.srtt_us
        xcp = cfg.mode is Mode.XCP
        hdr = RateHeader(
            kind=KIND_XCP_DATA if xcp else _KIND_DATA,
            seq=u32(seq),
            ack=0,
            ts_us=u32(now_us),
            rtt_us=u32(int(srtt)) if srtt is not None else 0,
            rate_kbps=cfg.desired_rate_kbps,
        )
        buf = bytearray(self._zero[:size])
        hdr.pack_into(buf, 0)
        frame = size + cfg.frame_overhead
        if xcp:
            self._pack_xcp(buf, frame, srtt)
        self._pacer.on_sent(frame, now_us)
        self.stats.sent_packets += 1
        self.stats.sent_bytes += frame
        self._iv_sent_bytes += frame
        if retx:
            self.stats.retransmissions += 1
        return Transmit(bytes(buf), seq, retx)

    def _pack_xcp(self, buf: bytearray, frame: int, srtt_us: float | None) -> None:
        """The XCP header: H_cwnd, H_feedback = the demand, the log2 terms of this packet."""
        cfg = self.cfg
        held = self.cwnd_bytes or 0.0
        cwnd = max(1, int(held))
        demand = FEEDBACK_MAX
        if cfg.desired_rate_kbps != RATE_UNLIMITED and srtt_us is not None:
            want = kbps_to_Bps(cfg.desired_rate_kbps) * srtt_us / 1e6 - held
            demand = max(-FEEDBACK_MAX, min(FEEDBACK_MAX, int(want)))
        if srtt_us is None:  # H_rtt = 0: no RTT yet, the switches give no feedback
            lg_pos = lg_neg = LG_NONE
        else:
            lg_pos, lg_neg = sender_terms(srtt_us / 1e6, frame, cwnd)
        _XCP_PACKER.pack_into(buf, HEADER_BYTES, min(cwnd, 0xFFFFFFFF), demand, lg_pos, lg_neg)

    def _on_xcp_ack(self, feedback: int, had_rtt: bool, now_us: int, lost: int) -> None:
        """cwnd = max(cwnd + H_feedback, s_min) per acked packet; loss halves it once per sRTT.
        An unstamped H_feedback (the "no limit" demand came back) changes nothing when the
        packet carried no RTT (switches leave those alone: a new flow waits for its first
        feedback, as in XCP), and grows the window by one packet, as slow start, when it
        did (no XCP switch on the path, or none configured yet)."""
        cfg = self.cfg
        frame = cfg.frame_bytes
        srtt = self.rtt.srtt_us or float(cfg.init_rtt_us)
        if feedback == FEEDBACK_MAX:
            feedback = frame if had_rtt else 0
        w = (self.cwnd_bytes or 0.0) + feedback
        if lost and (self._xcp_cut_us is None or now_us - self._xcp_cut_us >= srtt):
            self._xcp_cut_us = now_us
            w /= 2
        self._set_xcp_window(w, srtt)

    def _set_xcp_window(self, w: float, srtt_us: float) -> None:
        cfg = self.cfg
        frame = cfg.frame_bytes
        cwnd_bytes = min(cfg.max_cwnd * frame, max(cfg.xcp_min_window_pkts * frame, w))
        self.cwnd_bytes = cwnd_bytes
        self.cwnd = cwnd_bytes / frame
        self._apply_rate(cfg.xcp_pace_factor * cwnd_bytes * 1e6 / srtt_us)

    def _on_ack(self, hdr: RateHeader, now_us: int, feedback: int | None = None) -> None:
        self.stats.acks += 1
        cum = unwrap(hdr.ack, self._una)
        seq = unwrap(hdr.seq, self._una)
        if cum > self._next_seq or seq >= self._next_seq or seq < 0:
            self.stats.malformed_acks += 1
            return
        newly: list[int] = []
        if seq in self._out:
            newly.append(seq)
        for s in range(self._una, max(self._una, cum)):
            if s != seq and s in self._out:
                newly.append(s)
        if cum > self._una:
            self._una = cum
        if not newly:
            self.stats.duplicate_acks += 1
            return
        acked_bytes = 0
        for s in newly:
            tx = self._out.pop(s)
            if tx.lost:
                self._n_lost -= 1
            if s == seq:  # the echoed packet: its latest transmission got through
                self._hi_acked_order = max(self._hi_acked_order, tx.order)
            acked_bytes += self._data_bytes(s)
        self.stats.acked_bytes += acked_bytes
        self._last_progress_us = now_us
        sent_us = unwrap(hdr.ts_echo_us, now_us)
        rtt_sample: int | None = None
        if self.start_us is not None and self.start_us <= sent_us <= now_us:
            if self.rtt.sample(now_us - sent_us):
                rtt_sample = now_us - sent_us
            else:
                self.stats.rtt_rejected += 1
        else:
            self.stats.rtt_rejected += 1
        lost = self._detect_gap_losses()
        if feedback is not None:
            if seq in newly:  # this packet's own feedback, once
                self._on_xcp_ack(feedback, hdr.rtt_us != 0, now_us, lost)
            self._last_fb_sent_us = sent_us
            return
        fresh = rtt_sample is not None and (
            self._last_fb_sent_us is None or sent_us >= self._last_fb_sent_us
        )
        if not fresh:
            self.stats.late_feedback += 1
            if lost and self.cfg.mode is Mode.CM:
                self._callback(Feedback(now_us, acked_bytes, None, lost, False, None, False))
            return
        self._last_fb_sent_us = sent_us
        self._apply_feedback(hdr, now_us, acked_bytes, rtt_sample, lost)

    def _data_bytes(self, seq: int) -> int:
        cfg = self.cfg
        if self._total is not None and seq == self._total - 1 and cfg.flow_bytes is not None:
            return cfg.flow_bytes - seq * cfg.data_per_packet
        return cfg.data_per_packet

    def _explicit_kbps(self, raw: int) -> int | None:
        """Granted rate from the ack's rate field; None means 'no limit on the path'."""
        if raw == RATE_UNLIMITED:
            return None
        if raw == 0 or raw > self.cfg.max_rate_kbps or raw < self.cfg.min_rate_kbps:
            self.stats.absurd_rates += 1
        return int(self._clamp(raw))

    def _apply_feedback(
        self, hdr: RateHeader, now_us: int, acked: int, rtt_us: int, lost: int
    ) -> None:
        cfg = self.cfg
        explicit = self._explicit_kbps(hdr.rate_kbps)
        if explicit is None:
            limit = cfg.desired_rate_kbps if cfg.desired_rate_kbps != RATE_UNLIMITED else None
            granted = int(self._clamp(limit if limit is not None else cfg.max_rate_kbps))
        else:
            granted = explicit
        self.granted_kbps = granted
        self.congested = hdr.congested
        srtt = self.rtt.srtt_us or float(rtt_us)
        frame = cfg.frame_bytes
        granted_Bps = kbps_to_Bps(granted)
        if cfg.mode is Mode.QFCP:
            self.cwnd = min(cfg.max_cwnd, max(1.0, granted_Bps * srtt / 1e6 / frame))
            self._apply_rate(granted_Bps)
        elif cfg.mode is Mode.LESTAS:
            desired = granted_Bps * srtt / 1e6 / frame
            gain = cfg.lestas_gain_congested if (hdr.congested and desired > self.cwnd) else 1.0
            w = self.cwnd + gain / self.cwnd * (desired - self.cwnd)
            self.cwnd = min(cfg.max_cwnd, max(1.0, w))
            self._apply_rate(self.cwnd * frame * 1e6 / srtt)
        elif cfg.mode is Mode.CM:
            fb = Feedback(now_us, acked, rtt_us, lost, False, explicit, hdr.congested)
            self._callback(fb)

    def _callback(self, fb: Feedback) -> None:
        assert self.rate_callback is not None
        rate = self.rate_callback(fb)
        if rate is not None:
            self._apply_rate(rate)

    def _apply_rate(self, rate_Bps: float) -> None:
        cfg = self.cfg
        lo, hi = kbps_to_Bps(cfg.min_rate_kbps), kbps_to_Bps(cfg.max_rate_kbps)
        if not math.isfinite(rate_Bps):
            rate_Bps = lo
        self.rate_Bps = min(hi, max(lo, rate_Bps))
        self._pacer.set_rate(self.rate_Bps)
        if cfg.mode in (Mode.CM, Mode.FIXED):
            srtt = self.rtt.srtt_us or float(cfg.init_rtt_us)
            w = cfg.cm_window_factor * self.rate_Bps * srtt / 1e6 / cfg.frame_bytes
            self.cwnd = min(cfg.max_cwnd, max(2.0, w)) if cfg.mode is Mode.CM else cfg.max_cwnd

    def _mark_lost(self, seq: int, tx: _Tx) -> None:
        tx.lost = True
        self._n_lost += 1
        heapq.heappush(self._lost, seq)
        self.stats.losses += 1

    def _detect_gap_losses(self) -> int:
        """Packets sent ``dupthresh`` transmissions before the newest acked one are lost."""
        n = 0
        q = self._order_q
        limit = self._hi_acked_order - self.cfg.dupthresh
        while q and q[0][0] <= limit:
            order, seq = q.popleft()
            tx = self._out.get(seq)
            if tx is not None and tx.order == order and not tx.lost:
                self._mark_lost(seq, tx)
                n += 1
        return n

    def _check_timeout(self, now_us: int) -> int | None:
        """Fire the retransmission timer if it is due; returns ``_rto_deadline()`` as it
        is after that (``poll`` needs it next: one walk of the queue, not two)."""
        rto_at = self._rto_deadline()
        if rto_at is None or now_us < rto_at:
            return rto_at
        n = 0
        while self._order_q:
            order, seq = self._order_q.popleft()
            tx = self._out.get(seq)
            if tx is not None and tx.order == order and not tx.lost:
                self._mark_lost(seq, tx)
                n += 1
        self.stats.timeouts += 1
        self.rtt.on_timeout()
        self._pacer.reset()
        if self.cfg.mode is Mode.XCP:  # at most one packet
            one = float(self.cfg.frame_bytes)
            w = min(self.cwnd_bytes or one, one)
            self._set_xcp_window(w, self.rtt.srtt_us or float(self.cfg.init_rtt_us))
        if self.cfg.mode is Mode.CM:
            self._callback(Feedback(now_us, 0, None, n, True, None, False))
        return self._rto_deadline()

    def _finish(self, now_us: int, outcome: str) -> Finished:
        self.outcome = outcome
        self.end_us = now_us
        self._maybe_log(now_us, force=True)
        st = self.stats
        self._records.append(
            {
                "type": "done",
                "flow": self.flow_id,
                "t_us": now_us - (self.start_us or now_us),
                "outcome": outcome,
                "fct_us": self.completion_time_us,
                "acked_bytes": st.acked_bytes,
                "sent_packets": st.sent_packets,
                "retransmissions": st.retransmissions,
                "losses": st.losses,
                "timeouts": st.timeouts,
                "malformed_acks": st.malformed_acks,
                "duplicate_acks": st.duplicate_acks,
                "late_feedback": st.late_feedback,
                "absurd_rates": st.absurd_rates,
                "min_rtt_us": self.rtt.min_us,
                "srtt_us": None if self.rtt.srtt_us is None else int(self.rtt.srtt_us),
            }
        )
        return Finished(outcome)

    def _record_start(self) -> None:
        cfg = self.cfg
        self._records.append(
            {
                "type": "start",
                "flow": self.flow_id,
                "t_us": 0,
                "mode": str(cfg.mode),
                "packet_bytes": cfg.packet_bytes,
                "frame_bytes": cfg.frame_bytes,
                "flow_bytes": cfg.flow_bytes,
                "duration_us": cfg.duration_us,
                "desired_rate_kbps": cfg.desired_rate_kbps,
            }
        )

    def _maybe_log(self, now_us: int, force: bool = False) -> None:
        if not force and now_us < self._next_log_us:
            return
        assert self.start_us is not None
        span = max(1, now_us - self._last_log_us)
        st = self.stats
        self._records.append(
            {
                "type": "sample",
                "flow": self.flow_id,
                "t_us": now_us - self.start_us,
                "granted_kbps": self.granted_kbps,
                "rate_kbps": round(self.rate_Bps / 125.0, 3),
                "sent_kbps": round(self._iv_sent_bytes * 8000.0 / span, 3),
                "cwnd": round(self.cwnd, 3),
                "inflight": self.inflight,
                "srtt_us": None if self.rtt.srtt_us is None else int(self.rtt.srtt_us),
                "min_rtt_us": self.rtt.min_us,
                "rtt_us": self.rtt.last_us,
                "congested": self.congested,
                "acked_bytes": st.acked_bytes,
                "losses": st.losses,
                "retransmissions": st.retransmissions,
                "timeouts": st.timeouts,
            }
        )
        self._iv_sent_bytes = 0
        self._last_log_us = now_us
        self._next_log_us += self.cfg.log_interval_us
        if self._next_log_us <= now_us:
            self._next_log_us = now_us + self.cfg.log_interval_us


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m fairgate_hosts.sender`` (the UDP agent)."""
    from fairgate_hosts.udp_sender import main as agent_main

    return agent_main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
