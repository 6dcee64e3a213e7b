"""A minimal TCP (Reno with SACK loss recovery, or NewReno) for the simulator's TCP scenarios.

``TcpFlow`` is one client connection that uploads ``size`` bytes, half-closes and waits
for the server's FIN (like ``fairgate_hosts.traffic.client``); ``TcpServer`` is the
sink (``traffic.server``): it acks every segment, and once all data and the client's
FIN are in it sends its own FIN (FIN+ACK, one packet).

The Linux behaviour it models (the BMv2 labs' hosts: Reno, exponential SYN back-off,
``fairgate_topo.labrun.SYSCTLS``; timestamps and SACK at the kernel's default, on),
rule by rule, each checked by a test in tests/unit/sim/test_tcp.py:

- initial window 10 segments (IW10); 1 segment only after more than one SYN
  retransmission (``tcp_init_transfer``);
- SYN retransmission: initial RTO 1 s, doubling, ``syn_retries`` retries
  (``tcp_syn_retries``; ``tcp_syn_linear_timeouts = 0``), then the connect fails;
- data RTO from ``fairgate_hosts.rtt.RttEstimator``: RFC 6298 smoothing with Linux's
  floor on the variance term, RTO = SRTT + max(4 RTTVAR, ``tcp_rto_min`` 200 ms); after
  a handshake without an RTT sample (SYN retransmitted, no timestamps) 3 s
  (``tcp_init_metrics``, RFC 6298 5.7); exponential back-off, go-back-N after a timeout,
  ``data_retries`` consecutive timeouts (``tcp_retries2``), FIN as one sequence number
  retransmitted like data;
- RTT samples and the end of the back-off as in net/ipv4/tcp_input.c
  (``tcp_clean_rtx_queue`` -> ``tcp_ack_update_rtt``): an ack that advances ``una``
  over data sent once samples it (one timed segment per flight, RFC 6298 timing);
  an ack covering retransmitted data gives no such sample (Karn) but, with the
  timestamps option (``timestamps``, default on as Linux's ``tcp_timestamps = 1``),
  one from the echoed TSval; the back-off is cleared only by a valid sample ("RFC6298:
  only reset backoff on valid RTT measurement"), so with timestamps at the first new
  ack after a timeout, without them at the first ack of data sent once. The server
  echoes TS.Recent as Linux does (``tcp_replace_ts_recent``: the TSval of the last
  segment at or below the next expected byte), the SYN-ACK the SYN it answers;
- with ``kernel_hz``: every retransmission timer fires on Linux's timer wheel
  (``timer_wheel_expiry``): rounded up to its level's granularity (HZ 250: 4 ms below
  252 ms, 32 ms below 2 s, 256 ms below 16 s), in buckets shared by all sockets, so the
  SYN and data retries of many flows leave together (measured on the lab: first SYNs get
  through a meter far more often than retries);
- slow start, congestion avoidance (+1 segment per window);
- SACK (``sack``, default on as Linux's ``tcp_sack = 1``; used when the SYN-ACK answers
  the SYN's SACK-permitted): the server sends SACK blocks as Linux does (RFC 2018,
  ``tcp_sack_new_ofo_skb``: the block with the segment that triggered the ack first, then
  the most recently reported; touching blocks merge; 4 kept, 3 sent beside timestamps,
  8 bytes each on the frame; an out-of-order FIN's sequence number is SACKed too, as
  Linux's out-of-order queue holds it; blocks below the next expected byte dropped; no
  D-SACK).
  The sender keeps a scoreboard (segments SACKed, resent, lost) and recovers as RFC 6675
  with Linux's entry and Reno's response: recovery starts when ``dupthresh`` segments are
  SACKed (``tcp_time_to_recover``); ssthresh = half the flight, at most cwnd (as without
  SACK: one loss halves cwnd); a segment is lost when ``dupthresh`` SACKed segments lie
  above it (IsLost), or it is the first hole at the start or after a partial ack
  (NewReno's rule; Linux's RACK finds such holes by time); lost holes are resent first,
  then new data, while the pipe (segments neither SACKed nor lost, plus resends) is below
  cwnd; during recovery cwnd follows PRR (RFC 6937, Linux's ``tcp_cwnd_reduction``:
  sends at ssthresh / prior cwnd of the segments delivered, slow start back to ssthresh
  below it); recovery ends when the recovery point is acked, cwnd = ssthresh. Outside
  recovery, SACKed segments leave the pipe (limited transmit), and cwnd grows on acks
  that advance ``una`` by the segments newly delivered (Linux's ``acked_sacked`` and
  ``tcp_may_raise_cwnd``). At an RTO (``tcp_enter_loss``) SACKed segments stay SACKed
  (no reneging here), every other outstanding one is lost and is resent in order from
  cwnd 1 (no go-back-N over SACKed data), ssthresh half the scoreboard's pipe. A resend
  is lost again once a segment sent after it is delivered (SACKed or acked; the path
  keeps order): Linux's RACK in recovery with no reordering seen (reo_wnd 0), and
  ``tcp_mark_lost_retrans`` before it; a resend of the head restarts the RTO
  (``tcp_xmit_retransmit_queue``). Not modelled: the rest of RACK (holes are found by
  IsLost, not by time) and TLP, D-SACK and undo, RTT samples from SACKed segments;
- without SACK (``sack=False``, or a server with ``sack=False``): fast retransmit on
  ``dupthresh`` duplicate acks, fast recovery with window inflation and NewReno partial
  acks, go-back-N after an RTO: a window with several holes is repaired one hole per
  RTT;
- acks: by default the server acks every segment at once, as Linux's quick-ack mode
  does for the first 16 segments of a connection (all of a short flow). With
  ``TcpServer(delayed_ack=True)`` it acks as Linux's receiver does after that
  (``TcpServer._ack_data``): every second full segment, a lone one after the delayed-ack
  timeout (40 ms, adapting to the interarrival time as ``tcp_event_data_recv`` does),
  at once for out-of-order data, the segment that fills a hole, an old duplicate, and a
  segment that ends a write (PSH on a full segment, Linux 6.6 on; ``TcpFlow`` sets PSH
  on its last segment, TCP/CM on every one, as each grant is its own one-MSS write);
  the ack covering two segments echoes the first one's TSval; a timeout that fires
  doubles the next one, up to the RTO (``tcp_delack_timer_handler``), so at a slow
  bottleneck the receiver waits for the second segment. Off by default: on, it
  moves every simulated TCP file (the lab's NewReno receivers ack about 0.6-0.7 times
  per segment and TCP/CM's about 0.96, which it reproduces; docs/labs/cm-droptail.md,
  2026-11-28, "Fig. 3's sweep");
- with ``jitter_s``: every packet leaves after a random processing delay, uniform in
  [0, jitter_s], in order per sender. Without it a drop-tail queue in a jitter-free
  model hands each freed slot to the ack-clocked packet that arrives at the same
  instant (the phase effect of Floyd and Jacobson 1992), so SYNs lose unrealistically;
  the lab's hosts and BMv2 have milliseconds of such noise.

Receive window: every segment carries the window field, the SYN and SYN-ACK the window
scale option (RFC 7323: windows in SYNs are unscaled, the shift applies only when both
sides sent the option); the server advertises ``rwnd_bytes`` (a fixed buffer: the app
reads at once), and the sender keeps at most min(cwnd, snd_wnd) in flight, snd_wnd being
the window of the latest ACK (a switch may have lowered it: FICCRD), at least one
segment (a window below one MSS lets one out rather than waiting for a persist probe).

Not modelled: receive-window autotuning (the default is Linux's tcp_rmem maximum,
6 MiB, with shift 7), window probes, delayed acks beyond quick-ack, RACK/TLP, D-SACK,
F-RTO and undo of spurious retransmissions, PAWS, Linux's per-ack RTT samples and its
per-RTT variance decay (``tcp_rtt_estimator``), the per-destination RTT cache that can
raise a new connection's first RTO (``tcp_init_metrics``), ECN, RST, TIME_WAIT, Nagle,
a FIN riding on the last data segment, segment sizes below the MSS except the last,
other header options, the server's own retransmissions
(a lost FIN+ACK is recovered by the client retransmitting its FIN; Linux's server
retransmits its SYN-ACK and FIN, which a switch counting FINs sees twice) and SYN-ACK
retries. Sequence numbers count bytes from 0 in each direction (no ISN; SYN and FIN take
one number each only for the FIN).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from fairgate_hosts.rtt import RttEstimator
from fairgate_p4 import generated as g
from fairgate_sim.engine import Clock
from fairgate_sim.network import SimHost
from fairgate_sim.packet import TCP, Packet

SYN, ACK, FIN = g.TCP_FLAG_SYN, g.TCP_FLAG_ACK, g.TCP_FLAG_FIN
#: Ethernet 14 + IPv4 20 + TCP 20 + timestamps option 12 (Linux on a 1500 B MTU veth).
TCP_HEADER_BYTES = 66
SERVER_PORT = 5001
RWND_DEFAULT = 6 * 1024 * 1024  # Linux's tcp_rmem[2], where autotuning ends
MAX_WINDOW_FIELD = 0xFFFF
#: SACK blocks a receiver remembers (Linux's TCP_NUM_SACKS) and sends: 40 option bytes
#: hold 4, or 3 beside the timestamps option (tcp_established_options).
SACK_BLOCKS_KEPT = 4
SACK_BLOCKS_WITH_TS = 3
SACK_BLOCK_BYTES = 8
SACK_OPTION_BASE = 4  # kind, length and two NOPs (TCPOLEN_SACK_BASE_ALIGNED)
_EPS = 1e-9
#: Linux's delayed acks (include/net/tcp.h at HZ >= 100): TCP_ATO_MIN = TCP_DELACK_MIN =
#: HZ/25, the longest wait without an RTT estimate (tcp_send_delayed_ack's HZ/2),
#: TCP_MAX_QUICKACKS, and the receive-MSS guess before a full segment (TCP_MSS_DEFAULT).
DELACK_MIN_S = 0.04
DELACK_MAX_ATO_S = 0.5
MAX_QUICKACKS = 16
DELACK_RCV_MSS_INIT = 536


def timer_wheel_expiry(now: float, t: float, hz: int) -> float:
    """When Linux's timer wheel (kernel/time/timer.c, 64 buckets per level, each level 8x
    coarser) runs a timer armed at ``now`` for ``t``: never early, at the end of the
    bucket of the level that fits the delay, in jiffies of ``1/hz``. Every socket's timers
    share the buckets, so retransmissions of many flows leave together."""
    expires = math.ceil(t * hz - 1e-6)
    delta = expires - math.floor(now * hz + 1e-6)
    level = 0
    while level < 8 and delta >= 63 << (3 * level):
        level += 1
    shift = 3 * level
    return ((expires >> shift) + 1 << shift) / hz


def wscale_for(rwnd_bytes: int) -> int:
    """The smallest window-scale shift that fits ``rwnd_bytes`` in the 16-bit field."""
    shift = 0
    while rwnd_bytes >> shift > MAX_WINDOW_FIELD and shift < g.FG_TCP_MAX_WSCALE:
        shift += 1
    return shift


def window_field(rwnd_bytes: int, shift: int) -> int:
    """The window field advertising ``rwnd_bytes`` with ``shift`` (0 in SYNs)."""
    return min(rwnd_bytes >> shift, MAX_WINDOW_FIELD)


@dataclass(frozen=True)
class TcpConfig:
    mss: int = 1448
    header_bytes: int = TCP_HEADER_BYTES
    init_cwnd: int = 10  # Linux's IW10
    syn_rto_s: float = 1.0
    syn_retries: int = 6  # Linux's default tcp_syn_retries (the session lab sets 3)
    data_retries: int = 15  # consecutive timeouts before giving up (tcp_retries2)
    dupthresh: int = 3
    min_rto_s: float = 0.2
    max_rto_s: float = 120.0
    max_cwnd: float = 100_000.0
    rwnd_bytes: int = RWND_DEFAULT  # the window this end advertises
    wscale: int | None = None  # its window-scale option; None: the smallest that fits
    # Per-packet processing delay, uniform in [0, jitter_s], in order per sender (see
    # the module doc: it breaks the drop-tail phase lock-in of a jitter-free model).
    jitter_s: float = 0.0
    # Retransmission timers (SYN and data) on Linux's timer wheel of this HZ (None: exact)
    kernel_hz: int | None = None
    # The timestamps option (RFC 7323; Linux's tcp_timestamps = 1, which the labs keep):
    # every segment carries TSval, the server echoes it, and an ack of retransmitted data
    # still gives an RTT sample. False: Karn's rule alone (no sample, back-off kept).
    timestamps: bool = True
    # SACK (RFC 2018, Linux's tcp_sack = 1, which the labs keep): offered in the SYN; when
    # the server agrees, its acks carry SACK blocks and loss recovery uses a scoreboard
    # (RFC 6675, see the module doc). False: cumulative acks only, NewReno.
    sack: bool = True

    def __post_init__(self) -> None:
        if self.jitter_s < 0:
            raise ValueError("jitter_s must be >= 0")
        if self.kernel_hz is not None and self.kernel_hz < 1:
            raise ValueError("kernel_hz must be >= 1")
        if self.mss < 1 or self.init_cwnd < 1 or self.dupthresh < 1:
            raise ValueError("mss, init_cwnd and dupthresh must be >= 1")
        if self.rwnd_bytes < 1 or not 0 <= (self.wscale or 0) <= g.FG_TCP_MAX_WSCALE:
            raise ValueError("rwnd_bytes must be >= 1 and wscale 0..14")
        if self.syn_retries < 0 or self.data_retries < 0:
            raise ValueError("retry counts must be >= 0")
        if not 0 < self.min_rto_s <= self.max_rto_s or not self.syn_rto_s > 0:
            raise ValueError("need 0 < min_rto_s <= max_rto_s and syn_rto_s > 0")


@dataclass(eq=False)
class Timer:
    """One restartable deadline with at most one pending clock event per earlier
    deadline: moving it later costs nothing until the old event fires."""

    clock: Clock
    fire: Callable[[], None]
    deadline: float | None = None
    _scheduled: float | None = None

    def set(self, t: float) -> None:
        self.deadline = t
        if self._scheduled is None or self._scheduled > t:
            self._scheduled = t
            self.clock.at(t, self._check, t)

    def cancel(self) -> None:
        self.deadline = None

    def _check(self, t: float) -> None:
        if self._scheduled != t:
            return  # superseded by an earlier event
        self._scheduled = None
        d = self.deadline
        if d is None:
            return
        if d > self.clock.now + _EPS:
            self._scheduled = d
            self.clock.at(d, self._check, d)
            return
        self.deadline = None
        self.fire()


@dataclass(eq=False)
class TcpFlow:
    """One client connection; ``start()`` sends the first SYN. ``on_end`` is called once
    with the flow when it completes (server FIN received) or fails ("timeout")."""

    clock: Clock
    host: SimHost
    dst: str
    size: int
    cfg: TcpConfig = field(default_factory=TcpConfig)
    dport: int = SERVER_PORT
    on_end: Callable[[TcpFlow], None] | None = None
    rng: random.Random | None = None  # draws the jitter (cfg.jitter_s > 0)
    state: str = "closed"  # closed, syn_sent, established, done
    outcome: str | None = None
    sport: int = 0
    start_s: float | None = None
    connect_s: float | None = None  # handshake time (from start)
    end_s: float | None = None
    syn_attempts: int = 0
    retransmits: int = 0  # data and FIN segments sent again
    timeouts: int = 0
    fast_retransmits: int = 0
    cwnd: float = 0.0
    ssthresh: float = float("inf")

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ValueError("a flow has at least one byte")
        c = self.cfg
        self.nseg = -(-self.size // c.mss)  # data segments; index nseg is the FIN
        self.rtt = RttEstimator(
            min_rto_us=round(c.min_rto_s * 1e6),
            max_rto_us=round(c.max_rto_s * 1e6),
            initial_rto_us=round(c.syn_rto_s * 1e6),
        )
        self.timer = Timer(self.clock, self._on_timer)
        self.una = 0  # first unacknowledged segment index
        self.nxt = 0  # next segment index to send
        self.high = 0  # one past the highest index ever sent
        self.dupacks = 0
        self.in_recovery = False
        self.recover = 0
        self.backoffs = 0  # consecutive timeouts
        self._timing: tuple[int, float] | None = None  # (segment index, sent at)
        self._resent: set[int] = set()  # unacked segments sent more than once
        self._tsecr: float | None = None  # the echo on the ack being processed
        self.rtt_sample_us: int | None = None  # the RTT sample the latest new ack gave
        self._syn_at = 0.0
        self.rcv_wscale = wscale_for(c.rwnd_bytes) if c.wscale is None else c.wscale
        self.snd_wscale = 0  # the peer's shift (both SYNs carried the option)
        self.snd_wnd = MAX_WINDOW_FIELD  # bytes the peer lets us have in flight
        self.window_limited = 0  # pushes that stopped at snd_wnd below cwnd
        self._tx_at = 0.0  # when the latest jittered packet leaves (keeps them in order)
        # SACK scoreboard (segment indices >= una; used only when both SYNs had the option)
        self.sack_on = False
        self._blocks: tuple[tuple[int, int], ...] | None = None  # the ack being processed
        self._sacked: set[int] = set()  # SACKed by the peer (kept across an RTO, as Linux)
        self._rxt: set[int] = set()  # resent since recovery / the RTO began (SACKED_RETRANS)
        self._marked: set[int] = set()  # holes marked lost: fast retransmit, partial ack
        self._lost_below = 0  # after an RTO every hole below this is lost (tcp_enter_loss)
        self._sent_order: dict[int, int] = {}  # outstanding segment -> its latest send's
        self._sends = 0  # number (send order, for detecting lost resends as RACK does)
        self._prior_cwnd = 1.0  # PRR (RFC 6937) in SACK recovery: cwnd at its start,
        self._prr_delivered = 0  # segments delivered since,
        self._prr_out = 0  # and segments sent since

    # ---- queries ---------------------------------------------------------------
    @property
    def fct_s(self) -> float | None:
        if self.outcome != "completed" or self.start_s is None or self.end_s is None:
            return None
        return self.end_s - self.start_s

    @property
    def phase(self) -> str:
        if self.state == "done":
            return "done"
        if self.state in ("closed", "syn_sent"):
            return "connect" if self.state == "syn_sent" else "not_started"
        return "wait_eof" if self.high > self.nseg else "send"

    @property
    def bytes_sent(self) -> int:
        return min(self.size, self.high * self.cfg.mss)

    def rto_s(self) -> float:
        return self.rtt.rto_us * 1e-6

    # ---- actions ---------------------------------------------------------------
    def start(self) -> None:
        self.state = "syn_sent"
        self.start_s = self.clock.now
        self.sport = self.host.bind(self.on_packet)
        self._send_syn()

    def _send_syn(self) -> None:
        self.syn_attempts += 1
        self._syn_at = self.clock.now
        self._emit(SYN, 0, 0, 0)
        self._arm(self.clock.now + self.cfg.syn_rto_s * 2 ** (self.syn_attempts - 1))

    def _arm(self, t: float) -> None:
        hz = self.cfg.kernel_hz
        self.timer.set(t if hz is None else timer_wheel_expiry(self.clock.now, t, hz))

    def _emit(self, flags: int, seq: int, ack: int, length: int, psh: bool = False) -> None:
        h = self.host
        pkt = Packet(h.ip, self.dst, self.sport, self.dport, self.cfg.header_bytes + length, TCP)
        pkt.tcp_flags, pkt.seq, pkt.ack, pkt.length = flags, seq, ack, length
        pkt.psh = psh
        if self.cfg.timestamps:
            pkt.tsval = self.clock.now  # stamped when TCP sends it, before any jitter
        if flags & SYN:
            pkt.window = window_field(self.cfg.rwnd_bytes, 0)
            pkt.wscale = self.rcv_wscale
            pkt.sack_ok = self.cfg.sack
        else:
            pkt.window = window_field(self.cfg.rwnd_bytes, self.rcv_wscale)
        j = self.cfg.jitter_s
        if j > 0:
            if self.rng is None:
                raise ValueError("a jitter_s > 0 needs an rng")
            now = self.clock.now
            self._tx_at = max(now + self.rng.uniform(0.0, j), self._tx_at)
            self.clock.at(self._tx_at, h.send, pkt)
        else:
            h.send(pkt)

    def _send_segment(self, i: int) -> None:
        now = self.clock.now
        if i < self.high:
            self.retransmits += 1
            self._timing = None  # Karn: no sample across a retransmission
            self._resent.add(i)  # Linux's TCPCB_RETRANS on the skb
        elif self._timing is None:
            self._timing = (i, now)
        if self.sack_on:
            self._sends += 1
            self._sent_order[i] = self._sends
        if i == self.nseg:
            self._emit(FIN | ACK, self.size, 1, 0)
        else:
            seq = i * self.cfg.mss
            self._emit(ACK, seq, 1, min(self.cfg.mss, self.size - seq), self._psh(i))
        if i + 1 > self.high:
            self.high = i + 1
        if self.timer.deadline is None:
            self._arm(now + self.rto_s())

    def _psh(self, i: int) -> bool:
        """Whether data segment ``i`` carries PSH: Linux marks the last segment of an
        application write (``tcp_push`` -> ``tcp_mark_push``); this client writes its
        ``size`` bytes at once, so only the last segment (a retransmission keeps it)."""
        return i == self.nseg - 1

    def _push(self) -> None:
        if self.sack_on:
            self._push_sack()
            return
        cwnd = max(1, int(self.cwnd))
        rwnd = max(1, self.snd_wnd // self.cfg.mss)
        if rwnd < cwnd and self.nxt < self.una + cwnd and self.nxt <= self.nseg:
            self.window_limited += 1
        limit = self.una + min(cwnd, rwnd)
        while self.nxt <= self.nseg and self.nxt < limit:
            self._send_segment(self.nxt)
            self.nxt += 1

    # ---- SACK (RFC 6675) -----------------------------------------------------------
    def _scan(self) -> tuple[list[int], int]:
        """The scoreboard's (holes to resend, pipe): the segments in [una, high) that are
        lost (IsLost: ``dupthresh`` SACKed segments above it; marked at a fast retransmit
        or a partial ack; every hole after an RTO) and not yet resent, in order; and the
        segments in flight (RFC 6675 SetPipe, Linux's packets_in_flight): each segment
        neither SACKed nor lost counts once, each resend not SACKed once more."""
        sacked, rxt, marked = self._sacked, self._rxt, self._marked
        una, high = self.una, self.high
        if not sacked and not rxt and not marked and self._lost_below <= una:
            return [], high - una
        thresh, lost_below = self.cfg.dupthresh, self._lost_below
        above = 0  # SACKed segments above i
        pipe = 0
        holes: list[int] = []
        for i in range(high - 1, una - 1, -1):
            if i in sacked:
                above += 1
                continue
            lost = above >= thresh or i < lost_below or i in marked
            if not lost:
                pipe += 1
            if i in rxt:
                pipe += 1
            elif lost:
                holes.append(i)
        holes.reverse()
        return holes, pipe

    def _retransmit(self, i: int) -> None:
        self._rxt.add(i)
        self._send_segment(i)
        self._rearm_on_head(i)

    def _rearm_on_head(self, i: int) -> None:
        """A resend of the first unacknowledged segment restarts the RTO (Linux's
        tcp_xmit_retransmit_queue rearms when it resends the head)."""
        if i == self.una:
            self._arm(self.clock.now + self.rto_s())

    def _prr(self, delivered: int, una_advanced: bool) -> None:
        """Proportional rate reduction (RFC 6937) as Linux's tcp_cwnd_reduction sets cwnd
        for one ack in recovery: pipe + sndcnt, where sndcnt keeps the segments sent since
        recovery began at ssthresh / prior cwnd of those delivered while the pipe is above
        ssthresh, and lets it grow back towards ssthresh (slow start, at most one more than
        delivered, only on an ack that advances ``una``) once below; at least one segment
        (the fast retransmit) before any has been sent."""
        self._prr_delivered += delivered
        pipe = self._scan()[1]
        ss = self.ssthresh
        if pipe > ss:
            due = math.ceil(self._prr_delivered * ss / self._prior_cwnd - 1e-9)
            sndcnt = due - self._prr_out
        elif una_advanced:
            sndcnt = min(ss - pipe, max(self._prr_delivered - self._prr_out, delivered) + 1)
        else:
            sndcnt = min(ss - pipe, delivered)
        sndcnt = max(sndcnt, 0 if self._prr_out else 1)
        self.cwnd = pipe + sndcnt

    def _push_sack(self) -> None:
        """RFC 6675's NextSeg within cwnd: lost holes first, then new data, while the pipe
        is below cwnd (new data also inside the peer's window)."""
        cwnd = max(1, int(self.cwnd))
        holes, pipe = self._scan()
        for i in holes:
            if pipe >= cwnd:
                return
            self._retransmit(i)
            pipe += 1
            if self.in_recovery:
                self._prr_out += 1
        rwnd = max(1, self.snd_wnd // self.cfg.mss)
        if rwnd < cwnd and pipe < cwnd and self.nxt <= self.nseg:
            self.window_limited += 1
        limit = self.una + rwnd
        while pipe < cwnd and self.nxt <= self.nseg and self.nxt < limit:
            self._send_segment(self.nxt)
            self.nxt += 1
            pipe += 1
            if self.in_recovery:
                self._prr_out += 1

    def _take_sack(self) -> tuple[int, int]:
        """Add the ack's SACK blocks to the scoreboard: (segments newly SACKed, a segment
        counting when all its bytes are in a block; the latest send order among them)."""
        blocks = self._blocks
        if not blocks:
            return 0, 0
        mss, sacked, order, n, last_sent = self.cfg.mss, self._sacked, self._sent_order, 0, 0
        for start, end in blocks:
            first = max(-(-start // mss), self.una)
            if end > self.size:  # the FIN's sequence number too
                last = self.nseg + 1
            else:
                last = self.nseg if end == self.size else end // mss
            last = min(last, self.high)
            for i in range(first, last):
                if i not in sacked:
                    sacked.add(i)
                    n += 1
                    last_sent = max(last_sent, order.get(i, 0))
        return n, last_sent

    def _lost_resends(self, delivered_order: int) -> None:
        """A resend is lost again when a segment sent after it has been delivered (the
        path keeps order): Linux's RACK with no reordering seen (reo_wnd 0 in recovery),
        and tcp_mark_lost_retrans before it. It becomes a lost hole again."""
        if not self._rxt or not delivered_order:
            return
        order = self._sent_order
        again = [i for i in self._rxt if order.get(i, 0) < delivered_order]
        for i in again:
            self._rxt.discard(i)
            self._marked.add(i)

    def _on_ack_sack(self, a: int, dup_ok: bool) -> None:
        """An ack with the scoreboard (RFC 6675 with Reno's window response): recovery
        starts when ``dupthresh`` segments are SACKed (Linux's tcp_time_to_recover:
        sacked_out + 1 > reordering): ssthresh = flight / 2 as without SACK; during
        recovery cwnd is what PRR allows for each ack (``_prr``; no inflation: the pipe
        counts what has left the network), holes first; a partial ack marks the next
        hole lost (NewReno's rule, which Linux's RACK covers); recovery ends when
        ``recover`` is acked, cwnd = ssthresh.
        The flight ssthresh halves is at most cwnd: the segments that limited transmit
        (the pipe shrinking on SACKs) sent past cwnd do not count, so one loss halves cwnd
        exactly as without SACK (Linux's tcp_reno_ssthresh halves cwnd). Outside recovery
        cwnd grows on an ack that advances ``una`` (tcp_may_raise_cwnd: only in-order
        delivery at the default reordering) by the segments newly delivered: cumulatively
        acked and not SACKed before, plus newly SACKed (Linux's acked_sacked)."""
        c = self.cfg
        now = self.clock.now
        delivered = 0
        advanced = a > self.una
        grow = not self.in_recovery and advanced
        last_sent = 0  # the latest send order among the segments this ack delivers
        if advanced:
            delivered = a - self.una - sum(1 for i in self._sacked if i < a)
            order = self._sent_order
            for i in range(self.una, a):
                if i not in self._sacked:
                    last_sent = max(last_sent, order.get(i, 0))
                order.pop(i, None)
            self._rtt_on_new_ack(a)  # resets the RTO back-off only with a sample
            self.backoffs = 0
            if self.in_recovery:
                if a >= self.recover:
                    self.in_recovery = False
                    self.cwnd = self.ssthresh
                else:
                    self._marked.add(a)
            self.una = a
            self.dupacks = 0
            if self.nxt < a:
                self.nxt = a
            if self._sacked:
                self._sacked = {i for i in self._sacked if i >= a}
            if self._rxt:
                self._rxt = {i for i in self._rxt if i >= a}
            if self._marked:
                self._marked = {i for i in self._marked if i >= a}
            if a > self.nseg:
                self.timer.cancel()
            else:
                self._arm(now + self.rto_s())
        elif dup_ok and a == self.una and self.high > self.una:
            self.dupacks += 1
        newly_sacked, sacked_order = self._take_sack()
        delivered += newly_sacked
        self._lost_resends(max(last_sent, sacked_order))
        if (
            not self.in_recovery
            and self.una >= self.recover
            and self.una < self.high
            and len(self._sacked) >= c.dupthresh
        ):
            self.ssthresh = max(min(self.high - self.una, self.cwnd) / 2.0, 2.0)
            self.in_recovery = True
            self.recover = self.high
            self.fast_retransmits += 1
            self._prior_cwnd = max(self.cwnd, 1.0)
            self._prr_delivered = self._prr_out = 0
            self._marked.add(self.una)  # the first hole: PRR lets it out on this ack
            self._arm(now + self.rto_s())
            grow = False
        if self.in_recovery:
            self._prr(delivered, advanced)
        elif grow and delivered > 0:
            if self.cwnd < self.ssthresh:
                self.cwnd = min(self.cwnd + delivered, c.max_cwnd)
            else:
                self.cwnd = min(self.cwnd + delivered / self.cwnd, c.max_cwnd)
        self._push()

    def _done(self, outcome: str) -> None:
        self.state = "done"
        self.outcome = outcome
        self.end_s = self.clock.now
        self.timer.cancel()
        self.host.unbind(self.sport)
        if self.on_end is not None:
            self.on_end(self)

    # ---- events ----------------------------------------------------------------
    def on_packet(self, pkt: Packet) -> None:
        flags = pkt.tcp_flags
        if self.state == "syn_sent":
            if flags & SYN and flags & ACK:
                now = self.clock.now
                self.connect_s = now - (self.start_s or 0.0)
                self._handshake_rtt(pkt)
                self.snd_wscale = pkt.wscale or 0  # we always send the option
                self.snd_wnd = pkt.window  # unscaled in a SYN-ACK
                self.sack_on = self.cfg.sack and pkt.sack_ok
                self.state = "established"
                # Linux (tcp_init_transfer): IW = 1 segment only after more than one
                # SYN retransmission (RFC 6298's 1 s initial RTO makes one spurious)
                retried = self.syn_attempts - 1
                self.cwnd = 1.0 if retried > 1 else float(self.cfg.init_cwnd)
                self.timer.cancel()
                self._emit(ACK, 0, 1, 0)
                self._push()
            return
        if self.state != "established":
            return
        if flags & ACK:
            self.snd_wnd = pkt.window << self.snd_wscale
            self._tsecr = pkt.tsecr if self.cfg.timestamps else None
            self._blocks = pkt.sack
            self._on_ack(self._acked_index(pkt.ack), dup_ok=not flags & FIN and not pkt.length)
        if flags & FIN and self.una > self.nseg:
            self._emit(ACK, self.size + 1, pkt.seq + 1, 0)
            self._done("completed")

    def _handshake_rtt(self, pkt: Packet) -> None:
        """The SYN-ACK's RTT sample, as Linux takes it (tcp_ack -> tcp_clean_rtx_queue ->
        tcp_ack_update_rtt): from the SYN's send time if it was never retransmitted, else
        from the echoed timestamp (the SYN this SYN-ACK answers) or, without timestamps,
        none: then tcp_init_metrics (net/ipv4/tcp_metrics.c, RFC 6298 5.7) starts the data
        RTO at TCP_TIMEOUT_FALLBACK, 3 s."""
        now = self.clock.now
        if self.syn_attempts == 1:
            self.rtt.sample(round((now - self._syn_at) * 1e6))
        elif self.cfg.timestamps and pkt.tsecr is not None:
            self.rtt.sample(round((now - pkt.tsecr) * 1e6))
        else:
            self.rtt.initial_rto_us = 3_000_000

    def _rtt_on_new_ack(self, a: int) -> None:
        """The RTT sample of an ack that advances ``una`` to ``a``, as Linux takes it.

        net/ipv4/tcp_input.c, tcp_clean_rtx_queue: an ack covering retransmitted data
        (FLAG_RETRANS_DATA_ACKED) gives no sequence-based sample (Karn); then
        tcp_ack_update_rtt takes the timestamp echo instead ("if (seq_rtt_us < 0 &&
        tp->rx_opt.saw_tstamp && tp->rx_opt.rcv_tsecr && flag & FLAG_ACKED) seq_rtt_us =
        ... tcp_rtt_tsopt_us(tp)"), and only a valid sample resets the back-off
        ("RFC6298: only reset backoff on valid RTT measurement. icsk_backoff = 0"; tcp_ack
        itself resets icsk_retransmits, not icsk_backoff). So with timestamps the back-off
        ends at the first new ack after a timeout, with a sample of the retransmission's
        own RTT; without them it lasts until an ack of data sent only once. The
        sequence-based sample is one timed segment per flight (RFC 6298 timing; Linux
        stamps every segment, but updates its variance term once per RTT)."""
        timing = self._timing
        covers_timed = timing is not None and a > timing[0]
        if covers_timed:
            self._timing = None
        sample = None
        if self._resent and min(self._resent) < a:
            self._resent = {i for i in self._resent if i >= a}
            tsecr = self._tsecr
            if tsecr is not None:
                sample = round((self.clock.now - tsecr) * 1e6)
        elif covers_timed and timing is not None:
            sample = round((self.clock.now - timing[1]) * 1e6)
        if sample is not None:
            self.rtt.sample(sample)
        self.rtt_sample_us = sample

    def _acked_index(self, ack: int) -> int:
        if ack > self.size:
            return self.nseg + 1
        return self.nseg if ack == self.size else ack // self.cfg.mss

    def _on_ack(self, a: int, dup_ok: bool) -> None:
        if self.sack_on:
            self._on_ack_sack(a, dup_ok)
            return
        c = self.cfg
        now = self.clock.now
        if a > self.una:
            newly = a - self.una
            self._rtt_on_new_ack(a)  # resets the RTO back-off only with a sample
            self.backoffs = 0  # tcp_ack: icsk_retransmits = 0 when snd_una advances
            if self.in_recovery:
                if a >= self.recover:
                    self.in_recovery = False
                    self.cwnd = self.ssthresh
                else:  # NewReno partial ack: the next hole is lost too
                    self.cwnd = max(1.0, self.cwnd - newly + 1)
                    self._send_segment(a)
            elif self.cwnd < self.ssthresh:
                self.cwnd = min(self.cwnd + newly, c.max_cwnd)
            else:
                self.cwnd = min(self.cwnd + newly / self.cwnd, c.max_cwnd)
            self.una = a
            self.dupacks = 0
            if self.nxt < a:
                self.nxt = a
            if a > self.nseg:
                self.timer.cancel()  # everything, FIN included, is acknowledged
            else:
                self._arm(now + self.rto_s())
        elif dup_ok and a == self.una and self.high > self.una:
            self.dupacks += 1
            if self.in_recovery:
                self.cwnd += 1.0
            elif self.dupacks == c.dupthresh and self.una >= self.recover:
                self.ssthresh = max((self.nxt - self.una) / 2.0, 2.0)
                self.in_recovery = True
                self.recover = self.high
                self.fast_retransmits += 1
                self._send_segment(self.una)
                self.cwnd = self.ssthresh + c.dupthresh
                self._arm(now + self.rto_s())
        self._push()

    def _on_timer(self) -> None:
        if self.state == "syn_sent":
            if self.syn_attempts > self.cfg.syn_retries:
                self._done("timeout")
            else:
                self._send_syn()
            return
        if self.state != "established" or self.una > self.nseg:
            return
        self.timeouts += 1
        self.backoffs += 1
        if self.backoffs > self.cfg.data_retries:
            self._done("timeout")
            return
        if self.sack_on:
            # tcp_enter_loss: every hole is lost, resends forgotten, SACKed data kept (no
            # reneging here); ssthresh from the scoreboard's flight
            self.ssthresh = max(self._scan()[1] / 2.0, 2.0)
            self._lost_below = self.high
            self._rxt.clear()
            self._marked.clear()
        else:
            self.ssthresh = max((self.nxt - self.una) / 2.0, 2.0)
            self.nxt = self.una  # go back N
        self.cwnd = 1.0
        self.in_recovery = False
        self.recover = self.high
        self.dupacks = 0
        self._timing = None
        self.rtt.on_timeout()
        self._arm(self.clock.now + self.rto_s())
        self._push()


@dataclass(eq=False)
class _Conn:
    rcv_nxt: int = 0
    ooo: dict[int, int] = field(default_factory=dict)  # seq -> length above rcv_nxt
    fin_seq: int | None = None
    closed: bool = False  # our FIN sent
    shift: int = 0  # our window scale on this connection (0: the SYN had no option)
    ts_recent: float | None = None  # the TSval we echo (RFC 7323 TS.Recent)
    sack: bool = False  # both SYNs had SACK-permitted
    blocks: list[list[int]] = field(default_factory=list)  # [start, end), most recent first
    # Delayed acks (``TcpServer.delayed_ack``), Linux's receiver state (struct
    # inet_connection_sock's icsk_ack and tcp_sock's rcv_wup):
    rcv_wup: int = 0  # rcv_nxt when the last ack left
    rcv_mss: int = DELACK_RCV_MSS_INIT  # icsk_ack.rcv_mss, the segment size it expects
    quick: int = 0  # acks still sent at once (quick-ack mode)
    ato: float = 0.0  # the delayed-ack timeout (0: no data yet)
    lrcv: float = 0.0  # when the last in-order data arrived (icsk_ack.lrcvtime)
    synack_at: float | None = None  # when the (latest) SYN-ACK left
    rtt: RttEstimator | None = None  # the handshake's RTT sample (the receiver's srtt, rto)
    delack_at: float | None = None  # the pending delayed ack's deadline


def sack_add(blocks: list[list[int]], start: int, end: int) -> None:
    """Record out-of-order data [start, end) as Linux's tcp_sack_new_ofo_skb does: a
    block it overlaps or touches grows and moves to the front, then merges with any other
    block it now touches (tcp_sack_maybe_coalesce); else a new block goes in front and
    the oldest falls off past ``SACK_BLOCKS_KEPT``. RFC 2018: the first block holds the
    segment that triggered the ack, the others are the most recently reported."""
    for k, b in enumerate(blocks):
        if b[0] <= end and start <= b[1]:
            b[0], b[1] = min(b[0], start), max(b[1], end)
            blocks.insert(0, blocks.pop(k))
            j = 1
            while j < len(blocks):
                o = blocks[j]
                if o[0] <= b[1] and b[0] <= o[1]:
                    b[0], b[1] = min(b[0], o[0]), max(b[1], o[1])
                    del blocks[j]
                else:
                    j += 1
            return
    blocks.insert(0, [start, end])
    del blocks[SACK_BLOCKS_KEPT:]


@dataclass(eq=False)
class ServerStats:
    syns: int = 0
    connections: int = 0
    completed: int = 0
    bytes: int = 0
    fins_sent: int = 0


@dataclass(eq=False)
class TcpServer:
    """The sink on ``host:port``. ``hold_s`` delays every packet it sends (the labs'
    ack-delay RTT emulation, applied to TCP)."""

    clock: Clock
    host: SimHost
    port: int = SERVER_PORT
    header_bytes: int = TCP_HEADER_BYTES
    hold_s: float = 0.0
    rwnd_bytes: int = RWND_DEFAULT  # the receive window it advertises
    wscale: int | None = None  # its window-scale option; None: the smallest that fits
    jitter_s: float = 0.0  # as TcpConfig.jitter_s, in order over all its packets
    rng: random.Random | None = None
    sack: bool = True  # answers SACK-permitted and sends SACK blocks (Linux's tcp_sack)
    # Delayed acks as Linux's receiver (``_ack_data``); False (the default): every segment
    # acked at once (see the module doc for why it is not on by default)
    delayed_ack: bool = False
    conns: dict[tuple[str, int], _Conn] = field(default_factory=dict)
    stats: ServerStats = field(default_factory=ServerStats)

    def __post_init__(self) -> None:
        self.host.bind(self.on_packet, self.port)
        self.shift = wscale_for(self.rwnd_bytes) if self.wscale is None else self.wscale
        if self.jitter_s > 0 and self.rng is None:
            raise ValueError("a jitter_s > 0 needs an rng")
        self._tx_at = 0.0

    def _send(
        self,
        to: Packet,
        flags: int,
        seq: int,
        ack: int,
        shift: int = 0,
        tsecr: float | None = None,
        blocks: list[list[int]] | None = None,
    ) -> None:
        size = self.header_bytes
        sack = None
        if blocks:
            n = SACK_BLOCKS_WITH_TS if to.tsval is not None else SACK_BLOCKS_KEPT
            sack = tuple((b[0], b[1]) for b in blocks[:n])
            size += SACK_OPTION_BASE + SACK_BLOCK_BYTES * len(sack)
        pkt = Packet(self.host.ip, to.src, self.port, to.sport, size, TCP)
        pkt.tcp_flags, pkt.seq, pkt.ack = flags, seq, ack
        pkt.sack = sack
        if to.tsval is not None:
            pkt.tsval = self.clock.now
            pkt.tsecr = tsecr
        if flags & SYN:
            pkt.window = window_field(self.rwnd_bytes, 0)
            pkt.wscale = self.shift if to.wscale is not None else None
            pkt.sack_ok = self.sack and to.sack_ok
        else:
            pkt.window = window_field(self.rwnd_bytes, shift)
        delay = self.hold_s
        if self.jitter_s > 0 and self.rng is not None:
            now = self.clock.now
            self._tx_at = max(now + delay + self.rng.uniform(0.0, self.jitter_s), self._tx_at)
            delay = self._tx_at - now
        if delay > 0:
            self.clock.after(delay, self.host.send, pkt)
        else:
            self.host.send(pkt)

    def on_packet(self, pkt: Packet) -> None:
        key = (pkt.src, pkt.sport)
        flags = pkt.tcp_flags
        if flags & SYN:
            self.stats.syns += 1
            if key not in self.conns:
                shift = self.shift if pkt.wscale is not None else 0
                self.conns[key] = _Conn(shift=shift, sack=self.sack and pkt.sack_ok)
                self.stats.connections += 1
            self._send(pkt, SYN | ACK, 0, 1, tsecr=pkt.tsval)  # echoes this SYN
            self.conns[key].synack_at = self.clock.now
            return
        conn = self.conns.get(key)
        if conn is None:
            return  # no RST modelled
        if self.delayed_ack and conn.rtt is None and conn.synack_at is not None and pkt.ack >= 1:
            # the ack of our SYN-ACK: the receiver's one RTT sample (tcp_ack_update_rtt
            # in tcp_rcv_state_process), which bounds its delayed acks (only they read it:
            # without them no estimator per connection)
            conn.rtt = RttEstimator(min_rto_us=200_000)
            conn.rtt.sample(max(1, round((self.clock.now - conn.synack_at) * 1e6)))
        sh = conn.shift
        # TS.Recent (RFC 7323 4.3, Linux tcp_replace_ts_recent): taken from an acceptable
        # segment (tcp_sequence: it ends at or past rcv_wup, the ack point of the last
        # ack sent) that starts at or below rcv_wup, never moving back; an out-of-order
        # segment's dup ack echoes the last in-sequence one, the retransmission that fills
        # the hole its own, an old duplicate's nothing new, a delayed ack covering two
        # segments the first's (its RTT sample includes the delay, RFC 7323 4.3)
        ts = pkt.tsval
        recent = conn.ts_recent
        end = pkt.seq + pkt.length + (1 if flags & FIN else 0)
        if ts is not None and pkt.seq <= conn.rcv_wup <= end and (recent is None or ts >= recent):
            conn.ts_recent = ts
        echo = conn.ts_recent
        if conn.closed:
            if flags & FIN:
                self._send(pkt, FIN | ACK, 0, conn.rcv_nxt, sh, echo)  # FIN+ACK was lost
            elif pkt.length:
                self._send(pkt, ACK, 1, conn.rcv_nxt, sh, echo)
            else:
                del self.conns[key]  # the last ack
            return
        in_seq = old = had_ofo = False
        if pkt.length:
            in_seq = pkt.seq == conn.rcv_nxt
            old = pkt.seq + pkt.length <= conn.rcv_nxt
            had_ofo = bool(conn.ooo)
            self._data(conn, pkt.seq, pkt.length)
        if flags & FIN:
            conn.fin_seq = pkt.seq
            if conn.sack and pkt.seq > conn.rcv_nxt:  # an out-of-order FIN is SACKed too
                sack_add(conn.blocks, pkt.seq, pkt.seq + 1)
        if conn.fin_seq is not None and conn.rcv_nxt == conn.fin_seq:
            conn.rcv_nxt += 1
            conn.closed = True
            conn.delack_at = None
            self.stats.completed += 1
            self.stats.fins_sent += 1
            self._send(pkt, FIN | ACK, 0, conn.rcv_nxt, sh, echo)
        elif flags & FIN or (pkt.length and not self.delayed_ack):
            self._ack_now(conn, pkt)
        elif pkt.length:
            self._ack_data(conn, pkt, in_seq, old, had_ofo)

    # ---- delayed acks (Linux's receiver) ----------------------------------------------
    def _ack_now(self, conn: _Conn, pkt: Packet) -> None:
        """Send the ack (tcp_send_ack): it covers everything received, ends any pending
        delayed ack and counts against quick-ack mode (tcp_dec_quickack_mode, which
        deflates the timeout to TCP_ATO_MIN when the mode ends)."""
        self._send(pkt, ACK, 1, conn.rcv_nxt, conn.shift, conn.ts_recent, conn.blocks)
        conn.rcv_wup = conn.rcv_nxt
        conn.delack_at = None
        if conn.quick:
            conn.quick -= 1
            if not conn.quick:
                conn.ato = DELACK_MIN_S

    def _rto_s(self, conn: _Conn) -> float:
        return 1.0 if conn.rtt is None else conn.rtt.rto_us * 1e-6  # TCP_TIMEOUT_INIT

    def _ack_data(self, conn: _Conn, pkt: Packet, in_seq: bool, old: bool, had_ofo: bool) -> None:
        """Ack a data segment as Linux's receiver does (net/ipv4/tcp_input.c):

        - at once for an old duplicate (tcp_data_queue: tcp_enter_quickack_mode), for
          out-of-order data and while the out-of-order queue is not empty
          (``__tcp_ack_snd_check``'s ofo_possible), and for the segment that fills the
          hole (RFC 5681 4.2, ICSK_ACK_NOW);
        - in-order data first updates the delayed-ack timeout (``tcp_event_data_recv``:
          the first data enters quick-ack mode for TCP_MAX_QUICKACKS acks with ato =
          TCP_ATO_MIN; an interarrival m <= ato_min/2 sets ato = ato/2 + ato_min/2, one
          below ato sets ato = min(ato/2 + m, rto), one above the RTO re-enters quick-ack
          mode), then is acked at once when more than one full segment is unacked
          (rcv_nxt - rcv_wup > rcv_mss), in quick-ack mode, or when it ends a write: a
          full-sized segment with PSH, or a shorter one (``tcp_measure_rcv_mss`` sets
          ICSK_ACK_PUSHED, and ``tcp_cleanup_rbuf`` acks once the sink has read it all,
          which it does at once; the PSH rule is Linux 6.6's "tcp: fix delayed ACKs for
          MSS boundary condition");
        - else it arms the delayed-ack timer (``tcp_send_delayed_ack``): ato, above
          TCP_ATO_MIN bounded by max(srtt, TCP_ATO_MIN) from the handshake's sample and
          HZ/2; a timer already pending keeps its earlier deadline, and one due within
          ato/4 sends the ack now."""
        now = self.clock.now
        if old:
            conn.quick = max(conn.quick, MAX_QUICKACKS)
            conn.ato = DELACK_MIN_S
            self._ack_now(conn, pkt)
            return
        pushed = False
        if pkt.length >= conn.rcv_mss:
            conn.rcv_mss = pkt.length
            pushed = pkt.psh
        else:
            pushed = True
        if in_seq:
            if not conn.ato:
                conn.quick = max(conn.quick, MAX_QUICKACKS)
                conn.ato = DELACK_MIN_S
            else:
                m = now - conn.lrcv
                if m <= DELACK_MIN_S / 2:
                    conn.ato = conn.ato / 2 + DELACK_MIN_S / 2
                elif m < conn.ato:
                    conn.ato = min(conn.ato / 2 + m, self._rto_s(conn))
                elif m > self._rto_s(conn):
                    conn.quick = max(conn.quick, MAX_QUICKACKS)
            conn.lrcv = now
        if (
            not in_seq
            or had_ofo
            or conn.ooo
            or conn.rcv_nxt - conn.rcv_wup > conn.rcv_mss
            or conn.quick
            or pushed
        ):
            self._ack_now(conn, pkt)
            return
        ato = conn.ato
        if ato > DELACK_MIN_S:
            max_ato = DELACK_MAX_ATO_S
            if conn.rtt is not None and conn.rtt.srtt_us is not None:
                max_ato = min(max_ato, max(conn.rtt.srtt_us * 1e-6, DELACK_MIN_S))
            ato = min(ato, max_ato)
        deadline = now + ato
        if conn.delack_at is not None:
            if conn.delack_at <= now + ato / 4:
                self._ack_now(conn, pkt)
                return
            deadline = min(deadline, conn.delack_at)
        conn.delack_at = deadline
        self.clock.at(deadline, self._delack_fire, conn, pkt, deadline)

    def _delack_fire(self, conn: _Conn, pkt: Packet, deadline: float) -> None:
        """The delayed-ack timer (``tcp_delack_timer_handler``): the second segment did
        not come in time, so the timeout doubles, up to the RTO ("Delayed ACK missed:
        inflate ATO"; a sink never enters pingpong mode), and the ack leaves. At a slow
        bottleneck (segments 50-100 ms apart) this is what makes Linux ack pairs."""
        if conn.delack_at == deadline and not conn.closed:
            conn.ato = min(2 * conn.ato, self._rto_s(conn))
            self._ack_now(conn, pkt)

    def _data(self, conn: _Conn, seq: int, length: int) -> None:
        if seq == conn.rcv_nxt:
            conn.rcv_nxt += length
            self.stats.bytes += length
            while conn.rcv_nxt in conn.ooo:
                n = conn.ooo.pop(conn.rcv_nxt)
                conn.rcv_nxt += n
                self.stats.bytes += n
            if conn.blocks:  # tcp_sack_remove: blocks now below rcv_nxt go
                conn.blocks = [b for b in conn.blocks if b[1] > conn.rcv_nxt]
        elif seq > conn.rcv_nxt:
            conn.ooo[seq] = length
            if conn.sack:
                sack_add(conn.blocks, seq, seq + length)
