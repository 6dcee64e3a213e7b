"""Issue #16, switch restart: s1 is killed and started again mid-run (BMv2
forgets its pipeline, entries and egress queue rate); the controller notices,
re-pushes everything, sets the queue rate and depth again over Thrift and logs
it. A non-conforming UDP sender (900 pkt/s into a 500 pkt/s bottleneck) is held
to the configured rate again within 3 s of the switch coming back.
About 30 s."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from fairgate_topo.labnet import LabNet, LabTopology

RATE_PPS = 500
SEND_PPS = 900
RUN_S = 16.0
RESTART_AT_S = 6.0

SENDER = """
import socket, sys, time
dst, pps, secs = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
payload = bytes(1200)
start = time.monotonic(); n = 0
while True:
    now = time.monotonic()
    if now - start > secs:
        break
    due = start + n / pps
    if due > now:
        time.sleep(due - now)
    try:
        s.sendto(payload, (dst, 9999))
    except OSError:
        pass
    n += 1
print(n)
"""

RECEIVER = """
import json, socket, sys, time
secs, out = float(sys.argv[1]), sys.argv[2]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 9999)); s.settimeout(0.2)
arrivals = []
end = time.time() + secs
while time.time() < end:
    try:
        s.recv(2048)
        arrivals.append(time.time())
    except OSError:
        pass
open(out, "w").write(json.dumps(arrivals))
"""


def rate(arrivals: list[float], t0: float, t1: float) -> float:
    return sum(1 for t in arrivals if t0 <= t < t1) / (t1 - t0)


def test_restarted_switch_gets_its_queue_rate_back(tmp_path: Path) -> None:
    topo = LabTopology()
    topo.add_switch("s1")
    topo.add_switch("s2")
    topo.add_host("h1", "s1")
    topo.add_host("h2", "s2")
    topo.add_link("s1", "s2", rate_pps=RATE_PPS, depth=64)
    ctl_log = tmp_path / "controller.log"
    with LabNet(topo, tmp_path / "lab") as lab:
        with open(ctl_log, "w") as log:
            ctl = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "fairgate_controller",
                    "--topo",
                    str(lab.topo_path),
                    "--algo",
                    "qfcp",
                    "--no-live",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        try:
            deadline = time.monotonic() + 20
            while "s2: installed" not in ctl_log.read_text() or "s1: installed" not in (
                ctl_log.read_text()
            ):
                assert ctl.poll() is None, ctl_log.read_text()
                assert time.monotonic() < deadline, ctl_log.read_text()
                time.sleep(0.2)
            h1, h2 = lab.host("h1"), lab.host("h2")
            out = tmp_path / "arrivals.json"
            recv = h2.popen([sys.executable, "-c", RECEIVER, str(RUN_S + 1), str(out)])
            time.sleep(0.3)
            send = h1.popen(
                [sys.executable, "-c", SENDER, topo.hosts["h2"].ip, str(SEND_PPS), str(RUN_S)],
                stdout=subprocess.PIPE,
            )
            t_start = time.time()
            time.sleep(RESTART_AT_S)
            t_kill = time.time()
            lab.net.get("s1").restart()  # stop by PID, start again, wait for gRPC
            t_up = time.time()
            sent = int(send.communicate(timeout=RUN_S + 10)[0].decode().strip() or 0)
            recv.wait(timeout=RUN_S + 10)
            arrivals = json.loads(out.read_text())
        finally:
            ctl.terminate()
            ctl.wait(10)
    logs = ctl_log.read_text()
    assert sent / RUN_S > 1.5 * RATE_PPS, f"the sender was not non-conforming: {sent}"
    before = rate(arrivals, t_start + 2.0, t_kill)
    after = rate(arrivals, t_up + 3.0, t_start + RUN_S)
    windows = [t_up + 0.25 * i for i in range(int((t_start + RUN_S - t_up) / 0.25) - 2)]
    over = [t for t in windows if rate(arrivals, t, t + 0.5) > 1.1 * RATE_PPS]
    held_after = (max(over) + 0.5 - t_up) if over else 0.0
    print(
        f"sent {sent / RUN_S:.0f} pkt/s; received {before:.0f} pkt/s before the restart, "
        f"{after:.0f} pkt/s from 3 s after it; switch down {t_up - t_kill:.1f} s; "
        f"every 0.5 s window at most {1.1 * RATE_PPS:.0f} pkt/s from {held_after:.2f} s "
        "after it was up"
    )
    assert 0.85 * RATE_PPS <= before <= 1.1 * RATE_PPS, before
    assert 0.85 * RATE_PPS <= after <= 1.1 * RATE_PPS, (after, logs[-2000:])
    assert held_after <= 3.0, held_after
    assert logs.count("s1: egress queues set over Thrift") >= 2, logs[-2000:]
    assert "s1: the switch holds no rates (restarted?)" in logs
    assert "Traceback" not in logs
