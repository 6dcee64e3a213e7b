"""SYN gating at an admit rate, and the per-port session events (issue #3)."""

from __future__ import annotations

import random
import time

import finsy as fy
from scapy.layers.inet import TCP
from scapy.layers.l2 import Ether

from fairgate_p4 import generated as g
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, tcp

PORT = 2


def event_index(port: int, event: int) -> int:
    return (port << g.FG_SESSION_EVENT_BITS) | event


class AdmissionTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)
        self.add_route("10.0.3.0/24", 3, SWITCH_MAC, "00:00:00:00:00:03")

    def gate(self, port: int) -> None:
        self.insert(
            fy.P4TableEntry(
                "admission_ports", match=fy.Match(egress_port=port), action=fy.Action("gate_syns")
            )
        )

    def events(self) -> dict[int, int]:
        return {i: pkts for i, (pkts, _b) in self.read_counters("session_events").items()}

    def event_delta(self, before: dict[int, int], port: int, event: int) -> int:
        self.settle()
        after = self.events()
        i = event_index(port, event)
        return after.get(i, 0) - before.get(i, 0)

    def syns(self, n: int, port: int = PORT, gap_s: float = 0.0) -> float:
        """Send n SYNs (distinct source ports), return the seconds it took."""
        dst = "10.0.2.2" if port == PORT else "10.0.3.3"
        start = time.monotonic()
        for i in range(n):
            self.send(1, tcp("S", sport=10000 + i, dst=dst))
            if gap_s:
                time.sleep(max(0.0, start + (i + 1) * gap_s - time.monotonic()))
        return time.monotonic() - start


class SynMeterBurstThenRate(AdmissionTest):
    """A gated port admits the meter's burst, then the configured rate
    (measured over 2 s); red SYNs are dropped; the counters agree with what
    came out of the port."""

    RATE, BURST = 20, 5

    def runTest(self) -> None:
        self.gate(PORT)
        self.set_meter("syn_meter", PORT, self.RATE, self.BURST)
        before = self.events()

        took = self.syns(30)  # back to back
        burst_out = len(self.collect(PORT))
        self.assertGreaterEqual(burst_out, self.BURST - 1)
        self.assertLessEqual(burst_out, self.BURST + 1 + int(took * self.RATE))

        time.sleep(1.0)  # the bucket refills to its burst
        took = self.syns(200, gap_s=0.01)  # 100 SYN/s offered for 2 s
        paced_out = len(self.collect(PORT))
        expected = self.BURST + self.RATE * took
        self.assertAlmostEqual(
            paced_out,
            expected,
            delta=max(3.0, 0.15 * expected),
            msg=f"{paced_out} admitted in {took:.2f} s, expected ~{expected:.0f}",
        )

        admitted = self.event_delta(before, PORT, g.FG_EVENT_SYN_ADMITTED)
        dropped = self.event_delta(before, PORT, g.FG_EVENT_SYN_DROPPED)
        self.assertEqual(admitted, burst_out + paced_out)
        self.assertEqual(dropped, 230 - admitted)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_SYN_UNGATED), 0)


class SynAckNeverGated(AdmissionTest):
    """SYN-ACKs and plain ACKs pass a gated port whose meter admits almost
    nothing; SYNs through it are dropped. Each SYN-ACK counts once as
    FG_EVENT_SYNACK (a handshake accepted: session control strategy 2's
    admissions), plain ACKs not at all."""

    def runTest(self) -> None:
        self.gate(PORT)
        self.set_meter("syn_meter", PORT, 1, 1)
        before = self.events()
        for i in range(20):
            self.send(1, tcp("SA", sport=20000 + i))
            self.send(1, tcp("A", sport=20000 + i))
        self.assertEqual(len(self.collect(PORT)), 40)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_SYNACK), 20)
        for event in (g.FG_EVENT_SYN_ADMITTED, g.FG_EVENT_SYN_DROPPED, g.FG_EVENT_FIN):
            self.assertEqual(self.event_delta(before, PORT, event), 0)
        self.syns(20)
        self.assertLessEqual(len(self.collect(PORT)), 2)


class UngatedPortsPass(AdmissionTest):
    """SYNs to a port without admission pass and count as ungated, even while
    another port is gated hard; an admission entry with no meter config
    (unconfigured meter: green) admits everything."""

    def runTest(self) -> None:
        self.gate(3)
        self.set_meter("syn_meter", 3, 1, 1)
        before = self.events()
        self.syns(15, port=PORT)
        self.assertEqual(len(self.collect(PORT)), 15)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_SYN_UNGATED), 15)

        self.gate(PORT)  # gated, meter never written
        before = self.events()
        self.syns(15, port=PORT)
        self.assertEqual(len(self.collect(PORT)), 15)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_SYN_ADMITTED), 15)


def fresh_seq() -> int:
    """A sequence number no earlier run of the suite left in the FIN filter (the
    switch's registers outlive a test)."""
    return random.randrange(1, 2**32)


class FinAndRstCounted(AdmissionTest):
    """FINs and RSTs (with or without ACK) are forwarded and counted per port."""

    def runTest(self) -> None:
        before = self.events()
        flags = ["FA", "FA", "FA", "F", "R", "R", "RA", "FPA"]
        seq = fresh_seq()
        for i, f in enumerate(flags):
            self.send(1, tcp(f, sport=30000 + i, seq=seq))
        self.assertEqual(len(self.collect(PORT)), len(flags))
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_FIN), 5)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_RST), 3)


class FinRepeatsCounted(AdmissionTest):
    """The FIN filter: a FIN whose flow (addresses and ports) last sent a FIN at the same
    sequence number counts as FG_EVENT_FIN_REPEAT, any other FIN as FG_EVENT_FIN. Every
    copy leaves the port unchanged but for routing (MACs, TTL)."""

    def runTest(self) -> None:
        before = self.events()
        seq = fresh_seq()
        sent = [
            ("FA", 31000, seq),  # first copy
            ("FA", 31000, seq),  # retransmitted
            ("FPA", 31000, seq),  # again, with PSH: the same FIN
            ("FA", 31001, seq),  # another flow, the same sequence number: first
            ("FA", 31000, (seq + 1) % 2**32 or 1),  # the first flow, another FIN: first
            ("FA", 31000, (seq + 1) % 2**32 or 1),  # ... and its repeat
            ("A", 31000, seq),  # no FIN: not counted, leaves the filter alone
            ("FA", 31000, (seq + 1) % 2**32 or 1),  # still a repeat
        ]
        for flags, sport, s in sent:
            self.send(1, tcp(flags, sport=sport, seq=s))
        out = [Ether(b) for b in self.collect(PORT)]
        self.assertEqual(
            [(str(p[TCP].flags), p[TCP].sport, p[TCP].seq) for p in out],
            [(f, sport, s) for f, sport, s in sent],
        )
        self.assertTrue(all(p.dst == H2_MAC and p.src == SWITCH_MAC for p in out))
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_FIN), 3)
        self.assertEqual(self.event_delta(before, PORT, g.FG_EVENT_FIN_REPEAT), 4)
