"""Issue #16, outage, on BMv2 in Mininet with the real host agents, from the file
``tests/mininet/smoke/outage.toml`` run through the BMv2 engine: four QFCP senders share a
500 pkt/s bottleneck, stop at 5 s, the link stays silent for 3.1 s, and four new ones start.
The fair rate holds through the silence (the switch keeps telling the returning senders
their old share, not C), so there is no drop burst beyond the 64-packet buffer (the file's
expectation) and the bottleneck is busy again within 1 s. About 30 s."""

from __future__ import annotations

from pathlib import Path

RATE_PPS = 500
FRAME = 1242
STOP, BACK = 5.0, 8.1
FILE = Path(__file__).resolve().parent / "smoke" / "outage.toml"


def test_no_burst_and_no_stall_after_a_silent_outage(tmp_path: Path) -> None:
    from fairgate_exp.driver import run_algo
    from fairgate_exp.engines.bmv2 import Bmv2Engine
    from fairgate_exp.load import load

    plan = load(FILE)
    res = run_algo(plan, Bmv2Engine(), "qfcp", tmp_path / "qfcp", print)
    rows = [r for r in res["rows"] if r["port"] == "s1->s2"]
    quiet = [r["rate_kbps"] for r in rows if STOP + 0.5 <= r["t"] < BACK]
    busy = [r["rate_kbps"] for r in rows if STOP - 2.0 <= r["t"] < STOP - 0.5]
    resumed = [
        r["t"] - BACK
        for r in rows
        if BACK <= r["t"] < BACK + 3.0 and r["departure_pkts"] / r["period_s"] > 0.5 * RATE_PPS
    ]
    for v in res["verdicts"]:
        print(v.line())
    print(
        f"rate before the outage {busy[-1]} kbit/s, during it {min(quiet)}..{max(quiet)} "
        f"kbit/s; bottleneck busy again {resumed[0] if resumed else None} s after traffic returned"
    )
    assert quiet and max(quiet) == min(quiet), "the rate moved during the outage"
    assert max(quiet) < 0.5 * RATE_PPS * FRAME * 8 / 1000, quiet  # near C/4, not C
    (drops,) = res["verdicts"]
    assert drops.metric == "drops" and drops.passed, drops.line()
    assert resumed and resumed[0] <= 1.0, resumed
