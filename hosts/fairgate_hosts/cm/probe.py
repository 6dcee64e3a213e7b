"""Loss-resilient probe/response bookkeeping (CM paper, Fig. 5), sans-IO.

Sender: each probe records (time sent, bytes sent since the previous probe). A response
<thisprobe, lastprobe, nrecd> covers every probe in (lastprobe, thisprobe]: the bytes sent
over those probes are compared with the bytes the receiver counted, so lost probes and lost
responses only merge intervals, they never misattribute bytes. Entries older than
``thisprobe`` are deleted; a response for a probe already accounted (duplicate, reordered)
is ignored.

A probe is its own small message or rides on a data packet (``CMConfig.probe_on_data``:
the data packet's header carries its number); the bookkeeping is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ProbeResult:
    rtt_us: int
    nsent: int
    nrecd: int
    loss: float
    probes_covered: int
    # The time the covered bytes took to leave the sender (from the previous answered
    # probe to this one) and to reach the receiver (the same plus the change in RTT
    # between the two probes); None unless this response follows the previous answered
    # probe's (the interval is then known at both ends).
    send_span_us: int | None = None
    recv_span_us: int | None = None
    # When the first covered byte left: the time the probe before the covered ones
    # (``lastprobe``) was sent; None when the sender no longer has it (the first response).
    sent_from_us: int | None = None


@dataclass(slots=True)
class ProbeBook:
    max_entries: int = 1024
    next_seq: int = 1
    nsent: int = 0
    last_answered: int = 0
    last_rtt_us: int | None = None  # the RTT of the last answered probe
    probes: dict[int, tuple[int, int]] = field(default_factory=dict)

    def on_sent(self, nbytes: int) -> None:
        self.nsent += max(0, nbytes)

    def make_probe(self, now_us: int, pending: int = 0) -> int:
        """Record a probe sent now; returns its sequence number. ``pending``: bytes already
        sent ahead of the probe but not yet reported with ``on_sent`` (the receiver counts
        them before the probe, so they belong to its interval, not the next one)."""
        seq = self.next_seq
        pending = max(0, pending)
        self.probes[seq] = (now_us, self.nsent + pending)
        self.nsent = -pending
        self.next_seq += 1
        while len(self.probes) > self.max_entries:
            del self.probes[min(self.probes)]
        return seq

    def on_response(
        self, thisprobe: int, lastprobe: int, nrecd: int, now_us: int
    ) -> ProbeResult | None:
        entry = self.probes.get(thisprobe)
        if entry is None or thisprobe <= self.last_answered or lastprobe >= thisprobe:
            return None
        timesent, _ = entry
        rtt_us = now_us - timesent
        send_span = recv_span = None
        prev = self.probes.get(lastprobe)
        sent_from = prev[0] if prev is not None else None
        if lastprobe == self.last_answered and prev is not None and self.last_rtt_us is not None:
            send_span = timesent - prev[0]
            recv_span = send_span + rtt_us - self.last_rtt_us
        covered = [
            i
            for i in range(max(lastprobe + 1, thisprobe - self.max_entries), thisprobe + 1)
            if i in self.probes
        ]
        nsent = sum(self.probes[i][1] for i in covered)
        for i in [k for k in self.probes if k < thisprobe]:
            del self.probes[i]
        self.last_answered = thisprobe
        self.last_rtt_us = rtt_us
        loss = 0.0 if nsent <= 0 else max(0.0, 1.0 - nrecd / nsent)
        return ProbeResult(
            rtt_us, nsent, nrecd, loss, len(covered), send_span, recv_span, sent_from
        )
