"""Rate-based AIMD with exponential aging (CM paper, sections 2.1 and 2.2.3), sans-IO.

The rate is kept as a TCP window would be: ``cwnd = rate x srtt``. Per acknowledged byte the
window grows like TCP's (slow start: +1 byte per byte acked below ssthresh; congestion
avoidance: +MSS x bytes / cwnd per ack), so the increase is never faster than TCP's. One
feedback may acknowledge the bytes of several round trips at once (a probe response every
few RTTs), sent at rates the window no longer has (aging halved it since), so one update is
bounded to grow no faster than TCP would over the same bytes and round trips:

- slow start stops at ssthresh within an update, the rest of the bytes count in congestion
  avoidance (TCP's slow start does this per ack);
- congestion avoidance applies TCP's per-ack rule once per segment acknowledged, each from
  the window the segments before it left (``avoidance_growth``), as TCP's acks for those
  segments would, not ``MSS x acked / cwnd`` in one step from the window before the
  update, which gave an aged window of one MSS or less every acked byte;
- and it adds at most one MSS per sRTT since the previous feedback (a cap never below one
  MSS): TCP's +MSS per round trip.

Feedback that says how fast its bytes left and arrived (probe responses, ``sent_Bps`` and
``delivered_Bps``) clocks the rate as TCP's acks clock its window: while the queue grows
the rate is kept within TCP's allowance of the delivered rate (twice it in slow start, one
MSS per sRTT above it in congestion avoidance), and a loss halves the delivered rate when
the rate ran above it (``on_ack``, ``on_loss``).

A loss halves the rate once per congestion event (not again for bytes that left before the
last decrease; without send times, at most once per sRTT); a timeout (persistent
congestion) sets ssthresh to half the rate and restarts from one MSS per sRTT in slow
start. While probe responses are missing for more than one round trip, the rate halves,
and again every round trip after that, the round trip being the *minimum* RTT (the
half-life the paper found stable; ``aging_basis`` selects the sRTT or no aging instead,
for the paper's Figs. 4 and 6). The paper's aging starts when no response comes "within a
round-trip time" and halves "in each subsequent round-trip period"; its fix "decays the
open-loop rate based on" the minimum, so one clock serves both: with the sRTT for the
first wait and the minimum after it, a queue that inflates the sRTT delayed the first
halving in both modes alike, and beside on/off CBR most of the CM's losses came before it
(Fig. 6, docs/labs/cm-droptail.md). A macroflow fed by acks (TCP/CM, ``probe_feedback``
False) waits one sRTT before its first halving (``_aging_wait_us``). Aging leaves
ssthresh where the last loss put it (as TCP's congestion window validation, RFC 2861,
keeps ssthresh when an idle window decays): it acts for want of feedback, not on a
congestion signal, so the next response without loss slow-starts back up to ssthresh and
from there grows additively. A loss the next response reports still halves the aged rate
(aging does not count as that period's decrease).

An explicit rate from the network (the acks' rate field) bounds it: the CM's rate is
``min(AIMD rate, explicit rate)``, and the AIMD rate itself is capped at twice the explicit
rate so that it never runs away above what the path grants.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fairgate_hosts.rtt import RttEstimator

AGING_MODES = ("min_rtt", "srtt", "off")


def avoidance_growth(cwnd: float, acked: float, mss: int, limit: float) -> float:
    """Congestion avoidance's growth of a window ``cwnd`` (bytes) over ``acked`` bytes, at
    most ``limit``: TCP's per-ack ``+MSS x bytes / cwnd`` (the window floored at one MSS)
    applied once per segment acknowledged, each from the window the segments before it left,
    as TCP's acks for those segments would. Feedback for one segment (TCP/CM's acks) grows
    as before; applied in one step from the window before the update, the rule gave every
    byte of a probe response to a window of one MSS or less: acknowledging 10 MSS after
    aging took such a window to 11 MSS, where 10 acks take it to 4.8."""
    m = float(mss)
    c, left = cwnd, acked
    while left > 0 and c - cwnd < limit:
        piece = min(m, left)
        c += m * piece / max(c, m)
        left -= piece
    return min(c - cwnd, limit)


@dataclass(slots=True)
class AimdRate:
    mss: int = 1200
    initial_rate_Bps: float = 24_000.0
    min_rate_Bps: float = 150.0
    max_rate_Bps: float = 125_000_000.0
    init_rtt_us: int = 100_000
    rate_Bps: float = 0.0
    ssthresh_Bps: float = float("inf")
    explicit_Bps: float | None = None
    rtt: RttEstimator = field(default_factory=RttEstimator)
    last_decrease_us: int | None = None
    last_feedback_us: int | None = None
    aging_next_us: int | None = None
    # A host reacts no faster than its event loop: aging waits at least this long
    # between halvings (as TCP floors its RTO), or sub-millisecond RTTs on a LAN or
    # loopback would halve the rate between any two probe responses.
    aging_floor_us: int = 10_000
    # The half-life of exponential aging: "min_rtt" (the paper's choice), "srtt" (its
    # first choice, which Fig. 6 shows is too slow once queues inflate the sRTT) or "off"
    # (no aging: the rate holds while feedback is missing, as in Fig. 4's runs).
    aging_basis: str = "min_rtt"
    # Whether the feedback is the CM's own probe responses (every flow of the macroflow
    # probed), which come at a pace the CM sets, twice per sRTT; else acks (TCP/CM's
    # ``update``), whose spacing is the application's: RTT / window.
    probe_feedback: bool = True
    agings: int = 0
    losses: int = 0
    timeouts: int = 0

    def __post_init__(self) -> None:
        if self.aging_basis not in AGING_MODES:
            raise ValueError(
                f"aging must be one of {', '.join(AGING_MODES)}, not {self.aging_basis!r}"
            )
        if self.rate_Bps <= 0:
            self.rate_Bps = self.initial_rate_Bps
        self._clamp()

    # -- estimates
    @property
    def srtt_us(self) -> float:
        return self.rtt.srtt_us if self.rtt.srtt_us is not None else float(self.init_rtt_us)

    @property
    def min_rtt_us(self) -> int:
        return self.rtt.min_us if self.rtt.min_us is not None else self.init_rtt_us

    @property
    def effective_Bps(self) -> float:
        if self.explicit_Bps is None:
            return self.rate_Bps
        return max(self.min_rate_Bps, min(self.rate_Bps, self.explicit_Bps))

    @property
    def slow_start(self) -> bool:
        return self.rate_Bps < self.ssthresh_Bps

    def _clamp(self) -> None:
        hi = self.max_rate_Bps
        if self.explicit_Bps is not None:
            hi = min(hi, 2.0 * self.explicit_Bps)
        self.rate_Bps = min(hi, max(self.min_rate_Bps, self.rate_Bps))

    # -- feedback
    def _half_life_us(self) -> int:
        """The round trip exponential aging counts in: the minimum RTT or the sRTT."""
        rtt = self.min_rtt_us if self.aging_basis == "min_rtt" else int(self.srtt_us)
        return max(1, rtt, self.aging_floor_us)

    def _aging_wait_us(self) -> int:
        """How long feedback may be missing before the first halving. Probe responses:
        one round trip of the same clock as the halvings. Acks: one sRTT whatever the
        half-life, because an ack-clocked sender's acks come RTT / window apart, which
        a queue-inflated RTT puts above the minimum RTT at a few segments per window:
        waiting one minimum RTT there halved a flow that was getting its acks (TCP/CM
        beside the audio, Fig. 10: 0.07 of NewReno instead of 0.64). With aging off,
        the sRTT: it only paces the checks."""
        if self.aging_basis == "off" or not self.probe_feedback:
            return max(int(self.srtt_us), self.aging_floor_us)
        return self._half_life_us()

    def _dense(self, sent_Bps: float | None, delivered_Bps: float | None) -> bool:
        """Whether a feedback's bytes left at about the current rate (within a factor of
        two): only then do their sending and delivery rates say what the current rate
        does (not after aging has cut the rate they left at, nor for a trickle)."""
        if sent_Bps is None or delivered_Bps is None:
            return False
        return self.rate_Bps / 2.0 <= sent_Bps <= 2.0 * self.rate_Bps

    def mark_feedback(self, now_us: int) -> None:
        self.last_feedback_us = now_us
        self.aging_next_us = now_us + self._aging_wait_us()

    def set_explicit(self, explicit_Bps: float | None) -> None:
        self.explicit_Bps = None if explicit_Bps is None else max(self.min_rate_Bps, explicit_Bps)
        self._clamp()

    def on_ack(
        self,
        acked_bytes: int,
        rtt_us: int | None,
        now_us: int,
        sent_Bps: float | None = None,
        delivered_Bps: float | None = None,
    ) -> None:
        """``acked_bytes`` newly delivered without loss (rtt sample optional).

        ``sent_Bps`` and ``delivered_Bps``: the rate the acknowledged bytes left at and
        the rate the path delivered them at (a probe response's spans), when known. TCP's
        ack clock sends no faster than its acks arrive plus its window's growth: twice
        the delivery rate in slow start, one MSS per round trip above it in congestion
        avoidance. A rate has no such clock: it kept growing while the queue grew at
        ``sent - delivered``, to 1.35x a 1 Mbit/s port in congestion avoidance and 4.7x
        in slow start before a response reported the loss (``cm-feedback``). So when the
        bytes left at about the current rate (``_dense``), the update leaves the rate at
        most ``allowance - (sent - delivered)`` above where it was, and while the queue
        grows (``sent > delivered``) at most ``delivered + allowance``, ``allowance``
        being TCP's growth (``delivered`` in slow start, ``MSS / sRTT`` in congestion
        avoidance): no increase while the queue grows faster than TCP would make it grow,
        and a rate that runs ahead of the path by more comes back to it, as TCP's rate
        does with its acks (a slow start that doubled its rate since the bytes left comes
        back to twice their delivery rate). ssthresh is left alone (no loss was seen).
        """
        if rtt_us is not None:
            self.rtt.sample(rtt_us)
        previous_us = self.last_feedback_us
        self.mark_feedback(now_us)
        if acked_bytes <= 0:
            return
        srtt_s = self.srtt_us / 1e6
        cap = None
        if (
            sent_Bps is not None
            and delivered_Bps is not None
            and self._dense(sent_Bps, delivered_Bps)
        ):
            allowance = delivered_Bps if self.slow_start else self.mss / srtt_s
            cap = self.rate_Bps + allowance - (sent_Bps - delivered_Bps)
            if sent_Bps > delivered_Bps:
                cap = min(cap, delivered_Bps + allowance)
        cwnd = self.rate_Bps * srtt_s
        acked = float(acked_bytes)
        if self.slow_start:
            grown = min(acked, self.ssthresh_Bps * srtt_s - cwnd)
            cwnd += grown
            acked -= grown
        if acked > 0:
            rounds = 1.0
            if previous_us is not None:
                rounds = max(1.0, (now_us - previous_us) / self.srtt_us)
            cwnd += avoidance_growth(cwnd, acked, self.mss, self.mss * rounds)
        self.rate_Bps = cwnd / srtt_s if cap is None else min(cwnd / srtt_s, cap)
        self._clamp()

    def on_loss(
        self,
        now_us: int,
        rtt_us: int | None = None,
        sent_Bps: float | None = None,
        delivered_Bps: float | None = None,
        sent_from_us: int | None = None,
    ) -> bool:
        """Halve the rate once per congestion event; returns True when it did.

        ``sent_from_us``: when the first of the reported bytes left (a probe response's
        covered interval). Bytes that left before the last decrease were in flight when
        it was made, so their loss is the congestion that decrease answered, not a new
        one: no second halving (TCP NewReno's recovery point: one reduction per window of
        data). Without a send time (``update``, whose callers report one loss per
        recovery themselves) the rate halves at most once per sRTT. The sRTT gate alone
        halved twice per event whenever the event's later losses were reported more than
        an sRTT after its first: a full queue's RTT (0.33 s) exceeds the sRTT, and a
        response covers a probe interval (``cm-feedback``: 9 of 11 events of the flow
        probing every 4 RTTs, 4 of 20 at two probes per RTT).

        ``sent_Bps`` and ``delivered_Bps`` as for :meth:`on_ack`. When the reported bytes
        left at about the current rate (``_dense``) and the path delivered them slower,
        the halving starts from the delivered rate: TCP halves its flight, what the path
        delivered per round trip, not a rate offered beyond it (halving 2.6 Mbit/s sent
        into a 1 Mbit/s port left 1.3 Mbit/s, still above the port, for another sRTT)."""
        if rtt_us is not None:
            self.rtt.sample(rtt_us)
        self.mark_feedback(now_us)
        if self.last_decrease_us is not None:
            if sent_from_us is not None:
                if sent_from_us < self.last_decrease_us:
                    return False
            elif now_us - self.last_decrease_us < self.srtt_us:
                return False
        self.losses += 1
        if (
            sent_Bps is not None
            and delivered_Bps is not None
            and self._dense(sent_Bps, delivered_Bps)
            and 0 < delivered_Bps < self.rate_Bps
        ):
            self.rate_Bps = delivered_Bps
        self.rate_Bps /= 2.0
        self.ssthresh_Bps = self.rate_Bps
        self.last_decrease_us = now_us
        self._clamp()
        return True

    def on_timeout(self, now_us: int) -> None:
        """Persistent congestion: ssthresh = rate/2, restart at one MSS per sRTT."""
        self.timeouts += 1
        self.ssthresh_Bps = max(self.min_rate_Bps, self.rate_Bps / 2.0)
        self.rate_Bps = self.mss / (self.srtt_us / 1e6)
        self.last_decrease_us = now_us
        self.rtt.on_timeout()
        self._clamp()

    def age(self, now_us: int, active: bool) -> int:
        """Apply exponential aging up to ``now_us``; returns the number of halvings done.

        ``active`` says whether data was sent since the last feedback: an idle macroflow
        expects no feedback and does not age.
        """
        if self.aging_next_us is None:
            self.aging_next_us = now_us + self._aging_wait_us()
            return 0
        if not active or self.aging_basis == "off":
            self.aging_next_us = max(self.aging_next_us, now_us + self._aging_wait_us())
            return 0
        n = 0
        half_life = self._half_life_us()
        while now_us >= self.aging_next_us:
            self.rate_Bps = max(self.min_rate_Bps, self.rate_Bps / 2.0)
            self.aging_next_us += half_life
            n += 1
        self.agings += n
        return n
