"""TCP/CM in the simulator (CM paper, section 3.2.1): the simulator's TCP (Reno with NewReno
partial acks, ``tcp.TcpFlow``) with its congestion control handed to the Congestion Manager.

What changes against ``TcpFlow``, as the paper describes TCP/CM:
- *when* a segment leaves is the CM's decision: new data and go-back-N resends leave only
  on a grant (``app_notify``), one segment per grant of up to one MSS; TCP's congestion
  window is never consulted (``_push`` looks at the receive window only), so it cannot be
  the binding limit (``cwnd_limited`` counts the pushes a Reno window would have stopped,
  to show it);
- every ack is reported to the CM (``cm_update``): bytes newly acknowledged, the RTT
  sample TCP took from it (the timed segment's, Karn's rule, one per flight; with
  timestamps also the echo's on an ack of retransmitted data), ``loss_occurred`` when
  TCP starts a fast retransmit, ``persistent`` on a retransmission timeout;
- every segment sent is reported with ``cm_notify`` (fast and NewReno retransmissions,
  which loss recovery sends at once as in the paper, included).
Loss recovery (duplicate acks, NewReno partial acks, RTO with back-off) is TCP's own and
unchanged. With SACK (``TcpConfig.sack``, on by default as on the lab's Linux hosts, whose
kernel TCP runs under the CM) the same scoreboard as ``TcpFlow``'s chooses what to resend:
at each grant the next lost hole not yet resent, ahead of new data (the CM, not the
pipe or PRR, decides when); after an RTO every hole not SACKed, no go-back-N.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from fairgate_sim.tcp import TcpFlow


class CmPort(Protocol):
    """What a TCP/CM flow asks of its host's CM (``cmhost.SimCMHost``)."""

    def tcp_request(self, flow: CmTcpFlow, nbytes: int) -> None: ...

    def tcp_sent(self, flow: CmTcpFlow, nbytes: int) -> None: ...

    def tcp_feedback(
        self, flow: CmTcpFlow, nrecd: int, loss: bool, rtt_us: int | None, persistent: bool
    ) -> None: ...


BIG_REQUEST = 1 << 40
ABC_LIMIT = 2  # segments an ack may count (RFC 3465, L = 2 SMSS)


@dataclass(eq=False)
class CmTcpFlow(TcpFlow):
    """One TCP/CM connection; ``cm`` and ``fid`` are set by the host before ``start``."""

    cm: CmPort | None = None
    fid: int = 0
    allowance: int = 0  # bytes granted and not yet used
    grants: int = 0
    unused_grants: int = 0  # grants with nothing to send (reported as cm_notify(0))
    cwnd_limited: int = 0  # pushes past what a Reno cwnd would have allowed
    losses_reported: int = 0
    requested: bool = False
    rtx: list[int] = field(default_factory=list)  # resends loss recovery asked for
    _sending: bool = False

    def _psh(self, i: int) -> bool:
        """Every data segment carries PSH: each grant is its own write of at most one MSS
        with TCP_NODELAY (``apps/tcpcm.py``), and Linux ends a write with PSH."""
        return i < self.nseg

    def _seg_len(self, i: int) -> int:
        if i >= self.nseg:
            return 0  # the FIN
        return min(self.cfg.mss, self.size - i * self.cfg.mss)

    def _push(self) -> None:
        """Send what the receive window and the CM's grants allow (never the cwnd)."""
        if self.state != "established":
            return
        rwnd = max(1, self.snd_wnd // self.cfg.mss)
        limit = self.una + rwnd
        if not self.requested and self.nxt <= self.nseg and self.cm is not None:
            self.requested = True
            self.cm.tcp_request(self, BIG_REQUEST)
        while self.rtx and self.allowance >= self._seg_len(self.rtx[0]):
            i = self.rtx.pop(0)
            if i < self.una:
                continue  # acknowledged meanwhile
            need = self._seg_len(i)
            self.allowance -= need
            self._sending = True
            super()._send_segment(i)
            self._sending = False
            if need and self.cm is not None:
                self.cm.tcp_sent(self, need)
        if self.sack_on:
            for i in self._scan()[0]:
                need = self._seg_len(i)
                if self.allowance < need:
                    return
                self.allowance -= need
                self._rxt.add(i)
                self._sending = True
                super()._send_segment(i)
                self._sending = False
                self._rearm_on_head(i)
                if need and self.cm is not None:
                    self.cm.tcp_sent(self, need)
        while self.nxt <= self.nseg and self.nxt < limit:
            need = self._seg_len(self.nxt)
            if need > 0 and self.allowance < need:
                break
            if self.nxt >= self.una + max(1, int(self.cwnd)):
                self.cwnd_limited += 1
            self.allowance -= need
            self._sending = True
            self._send_segment(self.nxt)
            self._sending = False
            self.nxt += 1
            if need and self.cm is not None:
                self.cm.tcp_sent(self, need)

    def _send_segment(self, i: int) -> None:
        if self._sending or self.cm is None:
            super()._send_segment(i)
            return
        # loss recovery (fast retransmit, NewReno partial acks) chose what to resend; the
        # CM decides when: it takes the flow's next grant, ahead of new data
        if i not in self.rtx:
            self.rtx.append(i)

    def on_grant(self, nbytes: int) -> None:
        """``app_notify(nbytes)``: send up to ``nbytes`` (one segment)."""
        self.grants += 1
        self.allowance += nbytes
        self._push()
        if not self._sendable():
            self.unused_grants += 1
            self.allowance = 0  # nothing to send: the grant lapses (cm_notify(0))
            if self.cm is not None:
                self.cm.tcp_sent(self, 0)
        else:  # a grant smaller than the segment: keep it for the next one
            self.allowance = min(self.allowance, 2 * self.cfg.mss)

    def _sendable(self) -> bool:
        """Whether a segment waits for a grant (data left inside the receive window)."""
        rwnd = max(1, self.snd_wnd // self.cfg.mss)
        if self.state != "established":
            return False
        if self.rtx or (self.sack_on and self._scan()[0]):
            return True
        return self.nxt < self.nseg and self.nxt < self.una + rwnd

    def _on_ack(self, a: int, dup_ok: bool) -> None:
        una, fr, recovering = self.una, self.fast_retransmits, self.in_recovery
        self.rtt_sample_us = None
        super()._on_ack(a, dup_ok)
        if self.cm is None:
            return
        # the RTT sample TCP itself took from this ack (``_rtt_on_new_ack``): the timed
        # segment's, or with timestamps the echo's on an ack of retransmitted data. Those
        # echoes time the resends that left into the full queue of a loss episode; giving
        # the CM only the timed segments' samples (Karn's) kept them from it, and its sRTT
        # ran 5 % below TCP's (cm-tcp-friendly at 500 kbit/s: 387 against 409 ms), so its
        # increase (MSS / sRTT per sRTT) was 11 % steeper than TCP's. The hosts' TCP/CM
        # reports the kernel's sRTT (TCP_INFO's tcpi_rtt), which has every sample.
        rtt_us = self.rtt_sample_us
        loss = self.fast_retransmits > fr
        # bytes newly acknowledged, counted as RFC 3465's byte counting does (at most
        # L = 2 segments per ack): the cumulative ack that closes a recovery covers data
        # delivered long before, and must not grow the CM's rate in one step
        newly = min(max(0, min(a, self.nseg) - una), ABC_LIMIT) * self.cfg.mss
        if recovering:
            newly = 0  # as NewReno's window, the CM's rate does not grow in fast recovery
        if loss:
            self.losses_reported += 1
        self.cm.tcp_feedback(self, newly, loss, rtt_us, False)

    def _on_timer(self) -> None:
        timeouts = self.timeouts
        super()._on_timer()
        if self.timeouts > timeouts and self.cm is not None and self.state == "established":
            self.losses_reported += 1
            self.cm.tcp_feedback(self, 0, True, None, True)

    def abort(self) -> None:
        """The app stops: the flow ends as ``interrupted`` and sends nothing more."""
        if self.state != "done":
            self.state = "done"
            self.outcome = "interrupted"
            self.end_s = self.clock.now
            self.timer.cancel()
            if self.sport:
                self.host.unbind(self.sport)
