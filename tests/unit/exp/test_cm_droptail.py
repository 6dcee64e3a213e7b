"""The Congestion Manager on its own (drop-tail, no explicit rate): each paper figure's file,
shortened, still shows its property in the simulator, and the CM's own AIMD set the rate
(loss events seen, TCP/CM's segments left on grants past where a Reno window would stop)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from fairgate_exp.check import check
from fairgate_exp.driver import run
from fairgate_exp.engines.sim import SimEngine
from fairgate_exp.load import read_toml, resolve_path, validate
from fairgate_exp.plan import build_plan


def short(name: str, duration: str, warmup: str, seed: int | None = None) -> Any:
    """The file ``name`` run for ``duration`` (phases past it are cut to it)."""
    path = resolve_path(name)
    doc = read_toml(path)
    doc["experiment"]["duration"] = duration
    doc["experiment"]["warmup"] = warmup
    if seed is not None:
        doc["experiment"]["seed"] = seed
    for p in doc.get("phases", []):
        p.pop("end", None)
    end = float(duration.removesuffix("s"))
    for kind in ("flows", "tcp", "cm"):  # what starts after the end goes, stops are cut
        keep = [f for f in doc.get(kind, []) if float(f.get("start", "0s")[:-1]) < end]
        for f in keep:
            if "stop" in f and float(f["stop"][:-1]) > end:
                f["stop"] = duration
        doc[kind] = keep
    exp = validate(doc, path)
    check(exp)
    return build_plan(exp, path, None)


def run_short(
    tmp_path: Path, name: str, duration: str, warmup: str, seed: int | None = None
) -> dict[str, Any]:
    plan = short(name, duration, warmup, seed)
    _, summary = run(plan, SimEngine, "sim", tmp_path, say=lambda _m: None)
    return summary


def passed(summary: dict[str, Any]) -> list[bool]:
    return [v["passed"] for v in summary["verdicts"]]


def cm_facts(summary: dict[str, Any]) -> dict[str, Any]:
    return summary["results"]["none"]["engine"]["cm"]


def test_fig3_tcp_cm_shares_with_newreno_within_20_percent(tmp_path: Path) -> None:
    s = run_short(tmp_path, "cm-tcp-friendly", "100s", "20s")
    (ratio, util) = s["verdicts"]
    assert ratio["metric"] == "ratio"
    assert util["passed"], util
    # The ratio of one 100 s run swings with the seed (seeds 1-8: 1.04-1.42 with the
    # simulator's TCP taking timestamp RTT samples, 1.12-1.35 before; no shift of the
    # mean): judged on the median of seeds 1-5
    ratios = [ratio["measured"]]
    for seed in range(2, 6):
        other = run_short(tmp_path / str(seed), "cm-tcp-friendly", "100s", "20s", seed)
        ratios.append(other["verdicts"][0]["measured"])
    assert 0.8 <= sorted(ratios)[2] <= 1.25, ratios
    f = cm_facts(s)["tcpcm"]
    # the CM's AIMD set the rate: it halved on TCP's losses, and TCP/CM sent segments a
    # Reno window would have held back (TCP's cwnd never bound), none without a grant
    assert f["losses"] >= 10 and f["probes_sent"] == 0
    assert f["segments_past_reno_cwnd"] > 0.1 * f["grants"]
    assert f["grants"] >= f["retransmits"] + 1000


def test_fig2_traces_are_recorded(tmp_path: Path) -> None:
    s = run_short(tmp_path, "cm-tcp-trace", "40s", "10s")
    run_dir = tmp_path / "cm-tcp-trace" / s["run_id"]
    with (run_dir / "traces.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    flows = {r["flow"] for r in rows}
    caps = ("05", "1", "2")
    assert flows == {f"newreno{c}" for c in caps} | {f"tcpcm{c}-0" for c in caps}
    for name in flows:
        mine = [r for r in rows if r["flow"] == name]
        seq = [int(r["seq_pkts"]) for r in mine]
        losses = [int(r["losses"]) for r in mine]
        assert seq == sorted(seq) and seq[-1] > 100, name
        assert losses == sorted(losses) and losses[-1] > 0, name  # loss events seen
        if name.startswith("tcpcm"):
            live = [r for r in mine if float(r["t"]) < 40]  # closed at the end
            assert all(r["cm_rate_kbps"] for r in live), name  # the CM's rate
    assert "cm-tcp-trace-traces.png" in s["plots"]


def own_loss(f: dict[str, Any]) -> float:
    """A CM app's own loss rate: bytes its answered probes covered and the receiver missed."""
    return f["probe_lost_bytes"] / f["probed_bytes"]


def test_fig4_feedback_twice_per_rtt_loses_less(tmp_path: Path) -> None:
    """The CM flows' own loss at 2 and 4 probes per RTT is below that at 0.5 and 1 (the
    file's checks, one 120 s run beside its on/off CBR, are its verdicts; a 60 s run is
    too short for them), and the CM loses little of its own: with the rate clocked by the
    probes' delivery rate (``cm/aimd.py``) 1.3-2.2 %, where the rate that grew through a
    filling queue lost 6.9-17 %; every probe rides on a data packet, as on BMv2."""
    s = run_short(tmp_path, "cm-feedback", "60s", "15s")
    facts = cm_facts(s)
    loss = {n: own_loss(facts[n]) for n in ("fb025", "fb05", "fb1", "fb2", "fb4")}
    assert max(loss["fb2"], loss["fb4"]) < min(loss["fb05"], loss["fb1"]), loss
    assert max(loss.values()) < 0.03, loss
    assert all(v["measured"] is not None for v in s["verdicts"])
    probes = [facts[n]["probes_sent"] for n in loss]
    assert probes == sorted(probes) and probes[-1] > 10 * probes[0]  # the frequencies ran
    assert all(facts[n]["probes_on_data"] >= 0.95 * facts[n]["probes_sent"] for n in loss)
    assert all(facts[n]["agings"] == 0 for n in facts)  # aging off, as the file says


def test_fig6_aging_acts_and_is_judged_per_cm_flow(tmp_path: Path) -> None:
    """Each setting is judged on its CM flows' own loss (of = "cm_loss"), two pairs pooled.
    Not asserted: the paper's claim, which 80 s cannot judge (a few packets per flow) and
    which the simulator does not show robustly (docs/labs/cm-droptail.md, "Fig. 6 where
    aging acts"). Asserted: what the settings are for, the claim's mechanism acting in
    each. With probes every 4 RTTs (beside NewReno, beside the CBR at the port's rate) the
    CM runs open-loop and ages hundreds of times, the minimum RTT's shorter half-life more
    often (the queue inflates the sRTT); at two probes per RTT beside that CBR it ages
    only when probes are lost in the full queue, still dozens of times and, again, more
    often with the minimum RTT."""
    s = run_short(tmp_path, "cm-aging", "80s", "40s")
    assert [v["measured"] is not None for v in s["verdicts"]] == [True] * 3
    for v, k in zip(s["verdicts"], (1, 5, 9), strict=True):  # two pairs pooled in each
        pooled = {f"minrtt{k}", f"meanrtt{k + 1}", f"minrtt{k + 2}", f"meanrtt{k + 3}"}
        assert pooled <= set(v["detail"]), v["detail"]
    f = cm_facts(s)
    assert len(f) == 12
    assert all(f[n]["probed_bytes"] > 0 and f[n]["probe_lost_bytes"] > 0 for n in f)
    for i in range(1, 12, 2):
        a, b = f"minrtt{i}", f"meanrtt{i + 1}"
        floor = 100 if i < 9 else 20
        assert f[a]["agings"] > f[b]["agings"] > floor, (a, b, f[a]["agings"], f[b]["agings"])
    for i in range(9, 13):  # two probes per RTT: many more probes than every 4 RTTs
        n = f"minrtt{i}" if i % 2 else f"meanrtt{i}"
        assert f[n]["probes_sent"] > 5 * f["minrtt1"]["probes_sent"], n
    # a response after aging grows the rate as TCP's acks for its segments would: beside
    # NewReno the aged CM stays under 230 kbit/s of the port's 1000 (measured 152-208
    # beside NewReno's 1176 B segments, 161-190 beside 1448 B ones; 246 and 393 when one
    # response gave an aged window of one MSS every acked byte), beside the CBR at 0.25
    # probes per RTT under half of it (measured 298-351 kbit/s)
    with (tmp_path / "cm-aging" / s["run_id"] / "traces.csv").open() as fh:
        rows = [r for r in csv.DictReader(fh) if r["cm_rate_kbps"] and float(r["t"]) >= 10]
    for i in range(1, 9):
        bound = 230 if i <= 4 else 500
        name = f"{'minrtt' if i % 2 else 'meanrtt'}{i}-0"
        rates = [float(r["cm_rate_kbps"]) for r in rows if r["flow"] == name]
        assert rates and max(rates) < bound, (name, max(rates))


def test_fig7_weights_respected(tmp_path: Path) -> None:
    s = run_short(tmp_path, "cm-scheduler", "40s", "25s")
    (w2, w4, util) = s["verdicts"]
    assert abs(w2["measured"] - 2) <= 0.3 and abs(w4["measured"] - 4) <= 0.6
    assert util["passed"]


def test_fig9_tcp_cm_connections_indistinguishable(tmp_path: Path) -> None:
    s = run_short(tmp_path, "cm-web", "80s", "20s")
    *pairs, ensemble = s["verdicts"]
    assert all(0.9 <= v["measured"] <= 1.1 for v in pairs), pairs
    assert ensemble["measured"] <= 0.9, ensemble  # the ensemble backs off as one flow
    assert cm_facts(s)["tcpcm"]["timeouts"] == 0  # no slow-start restart of the ensemble


def test_fig10_audio_adapts_beside_tcp(tmp_path: Path) -> None:
    s = run_short(tmp_path, "cm-audio", "80s", "20s")
    assert all(passed(s)), s["verdicts"]
    audio = cm_facts(s)["voice"]["audio"]
    layers = {int(k): v for k, v in audio["seconds_per_layer"].items()}
    # mostly on 40-80 kbit/s (the paper: 80, sometimes 40 and 160), never the top layers
    assert layers.get(40, 0) + layers.get(80, 0) > 0.7 * sum(layers.values()), layers
    assert layers.get(320, 0) == 0
    assert 20 < audio["sent_kbps"] < 120
