"""Issue #16 against simple_switch_grpc: a controller that regains primacy
continues from the rates another controller wrote (never its stale ones, and
names the right election ids), and a silent outage holds the rate on the
switch instead of letting it climb to C."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from fairgate_p4.header import RateHeader
from fairgate_topo.netns_switch import NetnsSwitch

from .nsio import send_and_capture, send_paced
from .test_controller_bmv2 import (
    CAPACITY_KBPS,
    QUEUE_PPS,
    Controller,
    data_frame,
    feedback,
    reader_for,
    switch,  # noqa: F401 - the fixture
    wait_for,
    write_topology,
)

PORT = 2  # the bottleneck (QUEUE_PPS packets/s)


def rate_on_switch(sw: NetnsSwitch) -> int:
    with reader_for(sw) as reader:
        return feedback(reader)[PORT][0]


def test_regained_primacy_continues_from_the_switch_rates(
    switch: NetnsSwitch,  # noqa: F811
    tmp_path: Path,
) -> None:
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    a = Controller(topo, tmp_path / "a.log", "--algo", "qfcp", "--election-id", "20")
    b = None
    try:
        wait_for(lambda: "s1: installed" in a.text(), 20, "A to install")
        # Load 3x the bottleneck: A's rate for port 2 falls well below C.
        send_paced(switch, 1, data_frame(1_000_000), pps=3 * QUEUE_PPS, count=6 * QUEUE_PPS)
        rate_a = rate_on_switch(switch)
        assert rate_a < CAPACITY_KBPS / 2, rate_a
        # B (higher election id) takes over: A becomes backup.
        # An unresponsive sender drives QFCP to its floor: B's floor differs
        # from A's, so B's rate on the switch differs from what A remembers.
        b = Controller(
            topo, tmp_path / "b.log", "--algo", "qfcp", "--election-id", "30", "--min-rate", "300"
        )
        wait_for(lambda: "s1: installed" in b.text(), 20, "B to install")
        wait_for(lambda: "backup controller" in a.text(), 10, "A to step back")
        # Under a lighter load (1.3x) B settles at another rate.
        send_paced(switch, 1, data_frame(1_000_000), pps=1.3 * QUEUE_PPS, count=4 * QUEUE_PPS)
        rate_b = rate_on_switch(switch)
        assert abs(rate_b - rate_a) > 0.1 * rate_a, (rate_a, rate_b)
        # B goes away: A is primary again, with rate_a in memory.
        b.stop()
        wait_for(lambda: a.text().count("primary controller") >= 2, 15, "A to take over")
        wait_for(lambda: a.text().count("s1: installed") >= 2, 10, "A to reconcile")
        time.sleep(1.0)  # a few idle periods
        assert rate_on_switch(switch) == rate_b, "A did not continue from B's rate"
        log = a.text()
        takeover = log[log.rindex("primary controller") :]
        m = re.search(r"continuing from the rates on the switch: \{([^}]*)\}", takeover)
        assert m and f"{PORT}: {rate_b}" in m.group(1), takeover[:600]
        assert "s1: primary controller (election id 20)" in log
        assert "s1: backup controller (our election id 20, the primary's 30)" in log
        ours = re.search(r"\(ours were \{([^}]*)\}\)", takeover)
        assert ours, takeover[:600]  # A remembered other (stale) rates and did not use them
        assert f"{PORT}: {rate_b}" not in ours.group(1)
    finally:
        if b is not None:
            b.stop()
        a.stop()


def test_silent_outage_holds_the_rate_on_the_switch(
    switch: NetnsSwitch,  # noqa: F811
    tmp_path: Path,
) -> None:
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    records = tmp_path / "records.jsonl"
    # An unresponsive 3x load drives QFCP to its floor; 240 kbit/s x 0.1 s is
    # above the two frames under which silence is not taken for an outage.
    ctl = Controller(
        topo,
        tmp_path / "c.log",
        "--algo",
        "qfcp",
        "--period",
        "0.1",
        "--min-rate",
        "240",
        "--records",
        str(records),
    )
    try:
        wait_for(lambda: "s1: installed" in ctl.text(), 20, "the controller to install")
        assert "egress queues set over Thrift" in ctl.text()  # the controller set the 100 pkt/s
        send_paced(switch, 1, data_frame(1_000_000), pps=3 * QUEUE_PPS, count=6 * QUEUE_PPS)
        loaded = rate_on_switch(switch)
        t_quiet = time.time()
        time.sleep(3.1)  # the outage: nothing arrives
        held = rate_on_switch(switch)
        out = send_and_capture(switch, 1, 2, data_frame(1_000_000, payload=100))
    finally:
        ctl.stop()
    recs = [json.loads(line) for line in records.read_text().splitlines()]
    quiet = [r["rate_kbps"] for r in recs if r["port"] == PORT and r["t"] > t_quiet + 0.5]
    print(
        f"rate under load {loaded} kbit/s, after a 3.1 s outage {held} kbit/s (C {CAPACITY_KBPS})"
    )
    assert quiet and max(quiet) == min(quiet), "the rate moved during the outage"
    assert held <= loaded < CAPACITY_KBPS / 2, (loaded, held)
    assert out, "no packet came out after the outage"
    assert RateHeader.unpack(out[42:]).rate_kbps == held  # stamped with the held rate, not C


def test_controller_started_before_its_switch_says_so_and_connects_fast(
    switch: NetnsSwitch,  # noqa: F811
    tmp_path: Path,
) -> None:
    """The switch is down when the controller starts: "waiting for switch s1
    at ... (attempt n)" within the first second and then every second or so;
    once the switch is up the controller installs within 2 s."""
    topo = tmp_path / "topo.json"
    write_topology(switch, topo)
    switch.stop_switch()
    t0 = time.monotonic()
    ctl = Controller(topo, tmp_path / "c.log", "--algo", "qfcp", "--switch-timeout", "2")
    try:
        waiting = f"waiting for switch s1 at {switch.grpc_address} (attempt 1)"
        wait_for(lambda: waiting in ctl.text(), 5, "the first waiting line")
        first = time.monotonic() - t0
        wait_for(lambda: "switches unreachable for 2 s or more: s1" in ctl.text(), 5, "the error")
        switch.start_switch()  # returns once gRPC answers
        t_up = time.monotonic()
        wait_for(lambda: "s1: installed" in ctl.text(), 10, "the install")
        took = time.monotonic() - t_up
    finally:
        ctl.stop()
    log = ctl.text()
    attempts = re.findall(r"waiting for switch s1 at \S+ \(attempt (\d+)\)", log)
    print(f"first waiting line {first:.2f} s after start; installed {took:.2f} s after the switch")
    # The first line comes 0.5 s after the controller runs; Python's start-up
    # (imports, loading the P4Info) is before that.
    assert first < 3.0, first
    assert [int(a) for a in attempts] == list(range(1, len(attempts) + 1)) and len(attempts) >= 2
    assert took < 2.0, took
    assert "Traceback" not in log
