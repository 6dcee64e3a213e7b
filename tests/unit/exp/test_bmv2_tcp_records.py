"""The BMv2 engine reads a TCP client's flow records only once the client has written
them all: a client writes its open flows' records (thousands under overload) as it ends,
after its drain, and records read before that left those flows out of tcp.csv."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "experiments"))

from fairgate_exp.engines.bmv2 import Bmv2Engine  # noqa: E402
from fairgate_topo.procs import ProcessGroup  # noqa: E402

FLOW = {"type": "flow", "flow": 0, "scheduled_s": 1.0, "size": 1000, "outcome": "completed"}

# a client that writes one flow at once and its open flow as it ends
LATE_WRITER = textwrap.dedent(
    """
    import json, sys, time
    path = sys.argv[1]
    rec = {rec!r}
    with open(path, "w") as fh:
        fh.write(json.dumps(rec) + "\\n")
        fh.flush()
        time.sleep(float(sys.argv[2]))
        fh.write(json.dumps(dict(rec, flow=1, outcome="interrupted")) + "\\n")
    """
).format(rec=FLOW)

# a client that never ends by itself; SIGINT makes it write its open flow
STUCK = textwrap.dedent(
    """
    import json, signal, sys, time
    path = sys.argv[1]
    def stop(*_):
        with open(path, "a") as fh:
            fh.write(json.dumps({rec!r} | {{"flow": 1, "outcome": "interrupted"}}) + "\\n")
        sys.exit(130)
    signal.signal(signal.SIGINT, stop)
    open(path, "w").write(json.dumps({rec!r}) + "\\n")
    time.sleep(60)
    """
).format(rec=FLOW)


def _engine(tmp_path: Path, script: str, *args: str) -> Bmv2Engine:
    eng = Bmv2Engine()
    eng.ctx = SimpleNamespace(log_path=lambda name: tmp_path / f"{name}.jsonl")  # type: ignore[assignment]
    eng.procs = ProcessGroup(tmp_path / "logs")
    log = tmp_path / "client-uploads.jsonl"
    eng.client_procs["uploads"] = eng.procs.start(
        "client-uploads", [sys.executable, "-c", script, str(log), *args]
    )
    eng.clients["uploads"] = 2.0
    return eng


def test_tcp_records_wait_for_the_client_to_write_its_open_flows(tmp_path: Path) -> None:
    eng = _engine(tmp_path, LATE_WRITER, "0.5")
    try:
        recs = eng.tcp_records()
    finally:
        eng.procs.stop_all()  # type: ignore[union-attr]
    assert [(r["flow"], r["outcome"]) for r in recs] == [(0, "completed"), (1, "interrupted")]
    assert recs[0]["scheduled_s"] == 3.0 and recs[0]["generator"] == "uploads"


def test_a_client_still_running_after_the_grace_is_stopped_and_read(tmp_path: Path) -> None:
    eng = _engine(tmp_path, STUCK)
    try:
        time.sleep(0.5)  # the script installed its handler
        eng._wait_clients(grace_s=0.5)
        recs = eng.tcp_records()
    finally:
        eng.procs.stop_all()  # type: ignore[union-attr]
    assert [(r["flow"], r["outcome"]) for r in recs] == [(0, "completed"), (1, "interrupted")]
    assert json.loads((tmp_path / "client-uploads.jsonl").read_text().splitlines()[1])["flow"] == 1
