"""Per-port telemetry read over P4Runtime (issue #3): arrival and departure
counters, the queue-depth histogram and the carried-RTT histogram."""

from __future__ import annotations

import time

from fairgate_p4 import generated as g
from fg_base import FgTestBase
from fg_packets import H2_MAC, SWITCH_MAC, fg, udp

PORT = 2
BASE = PORT << g.FG_HIST_BUCKET_BITS


def delta(
    before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], i: int
) -> tuple[int, int]:
    b, a = before.get(i, (0, 0)), after.get(i, (0, 0))
    return a[0] - b[0], a[1] - b[1]


class TelemetryTest(FgTestBase):
    def setUp(self) -> None:
        super().setUp()
        self.add_route("10.0.2.0/24", PORT, SWITCH_MAC, H2_MAC)


class ArrivalDepartureCounters(TelemetryTest):
    """Arrivals (ingress) and departures (egress) of the port move by exactly
    the packets and frame bytes sent; other ports do not move."""

    def runTest(self) -> None:
        arr0, dep0 = self.read_counters("port_arrivals"), self.read_counters("port_departures")
        sizes = [10, 100, 500, 1000, 1400]
        total = 0
        for n in sizes:
            pkt = udp(payload=b"a" * n)
            total += len(bytes(pkt))
            self.send(1, pkt)
        self.settle()
        arr1, dep1 = self.read_counters("port_arrivals"), self.read_counters("port_departures")
        self.assertEqual(delta(arr0, arr1, PORT), (len(sizes), total))
        self.assertEqual(delta(dep0, dep1, PORT), (len(sizes), total))
        for other in (1, 3, 4):
            self.assertEqual(delta(arr0, arr1, other), (0, 0))


class QueueDepthHistogram(TelemetryTest):
    """With the port's queue rate below the offered rate (Thrift
    set_queue_rate), packets find a queue: the histogram of the port records
    every packet, and the deeper buckets fill."""

    def runTest(self) -> None:
        bounds = list(range(0, 31))  # bucket b = depth b for 0..29, 30+ overflow
        self.set_buckets("queue_buckets", "set_queue_bucket", bounds)
        self.set_queue_rate(PORT, 50, depth=64)
        h0 = self.read_counters("queue_depth_hist")
        n = 40
        for i in range(n):
            self.send(1, udp(payload=bytes([i]) * 100))
        time.sleep(n / 50 + 0.5)  # let the queue drain
        h1 = self.read_counters("queue_depth_hist")
        counts = [delta(h0, h1, BASE + b)[0] for b in range(g.FG_HIST_BUCKETS)]
        self.assertEqual(sum(counts), n, counts)
        self.assertLess(counts[0], n // 2, f"the queue never built up: {counts}")
        self.assertGreater(sum(counts[10:]), 0, f"no packet found >= 10 queued: {counts}")
        # Other ports' slices of the histogram did not move.
        others = [
            delta(h0, h1, i)[0] for i in range(g.FG_HIST_ENTRIES) if not BASE <= i < BASE + 32
        ]
        self.assertEqual(sum(others), 0)


class QueueIdleWithoutLimit(TelemetryTest):
    """Without a queue rate the queue stays empty: every packet in bucket 0."""

    def runTest(self) -> None:
        self.set_buckets("queue_buckets", "set_queue_bucket", [0, 1, 2, 4, 8])
        h0 = self.read_counters("queue_depth_hist")
        for _ in range(5):
            self.send(1, udp())
            time.sleep(0.02)
        self.settle()
        h1 = self.read_counters("queue_depth_hist")
        self.assertEqual(delta(h0, h1, BASE + 0)[0], 5)


class DropsAreArrivalsMinusDepartures(TelemetryTest):
    """Overflowing a short, slow queue: BMv2 counts no queue drops itself, but
    arrivals - departures equals what never came out."""

    def runTest(self) -> None:
        self.set_queue_rate(PORT, 20, depth=5)
        arr0, dep0 = self.read_counters("port_arrivals"), self.read_counters("port_departures")
        n = 30
        for i in range(n):
            self.send(1, udp(payload=bytes([i]) * 64))
        received = len(self.collect(PORT, quiet_s=1.0))
        self.settle()
        arr1, dep1 = self.read_counters("port_arrivals"), self.read_counters("port_departures")
        arrived = delta(arr0, arr1, PORT)[0]
        departed = delta(dep0, dep1, PORT)[0]
        self.assertEqual(arrived, n)
        self.assertEqual(departed, received)
        self.assertGreater(arrived - departed, 0, "nothing was dropped")


class RttHistogram(TelemetryTest):
    """The RTT carried by data packets lands in the bucket whose range holds
    it, in the slice of the egress port; acks and RTT 0 are not counted."""

    def runTest(self) -> None:
        bounds = [1, 1_000, 10_000, 20_000, 50_000, 100_000]  # microseconds
        self.set_buckets("rtt_buckets", "set_rtt_bucket", bounds)
        h0 = self.read_counters("rtt_hist")
        cases = {500: 0, 9_999: 1, 10_000: 2, 15_000: 2, 49_999: 3, 99_999: 4, 2_000_000: 31}
        for rtt, _bucket in cases.items():
            self.send(1, fg(rtt_us=rtt))
        self.send(1, fg(rtt_us=0))
        self.send(1, fg(rtt_us=15_000, kind=g.FG_KIND_ACK, to_receiver=False))
        self.assertEqual(len(self.collect(PORT)), len(cases) + 2)
        self.settle()
        h1 = self.read_counters("rtt_hist")
        expected: dict[int, int] = {}
        for bucket in cases.values():
            expected[bucket] = expected.get(bucket, 0) + 1
        got = {b: delta(h0, h1, BASE + b)[0] for b in range(g.FG_HIST_BUCKETS)}
        got = {b: n for b, n in got.items() if n}
        self.assertEqual(got, expected)
