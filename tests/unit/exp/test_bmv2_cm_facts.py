"""The BMv2 engine's CM facts come from the apps' own logs (no lab needed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "experiments"))

from fairgate_exp.engines.bmv2 import Bmv2Engine  # noqa: E402
from fairgate_exp.load import EXPERIMENTS_DIR, load  # noqa: E402


def _log(path: Path, recs: list[dict[str, object]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))


def test_cm_facts_and_kernel_trace_from_the_apps_done_lines(tmp_path: Path) -> None:
    plan = load(EXPERIMENTS_DIR / "cm-audio.toml")
    voice, tcpcm = plan.cm
    eng = Bmv2Engine()
    eng.ctx = SimpleNamespace(log_path=lambda name: tmp_path / f"{name}.jsonl")  # type: ignore[assignment]
    eng.t0 = 100.0
    eng.cm_apps = [voice, tcpcm]
    binding = {"cwnd_bound": 0, "samples": 900}
    _log(
        tmp_path / "cm-voice.jsonl",
        [
            {"type": "agent", "wall_time": 101.0},
            {"type": "done", "t_s": 10.0, "sent_bytes": 100_000, "frames": 250,
             "frames_skipped": 0, "layer_changes": 3, "seconds_per_layer": {"80": 9.0},
             "cm": {"losses": 4, "timeouts": 0, "agings": 1, "probes_sent": 77}},
        ],
    )  # fmt: skip
    _log(
        tmp_path / "cm-tcpcm.jsonl",
        [
            {"type": "agent", "wall_time": 101.0},
            {"type": "sample", "t_s": 1.0, "losses": 2,
             "flows": [{"flow": 0, "acked_bytes": 10 * tcpcm.mss, "share_kbps": 50.0}]},
            {"type": "done", "t_s": 10.0, "kernel_cc": "fg_cm", "polls": 900,
             "cwnd_bound_polls": 0, "cwnd_bound_open_polls": 0,
             "cm": {"losses": 4, "timeouts": 0, "agings": 1},
             "flows": [{"flow": 0, "retrans": 5, "retrans_bytes_charged": 7240,
                        "timeouts_reported": 1, "binding": binding}]},
        ],
    )  # fmt: skip
    facts = eng.cm_facts()
    assert facts["voice"]["audio"]["sent_kbps"] == 80.0 and facts["voice"]["probes_sent"] == 77
    assert facts["tcpcm"] == {
        "losses": 4,
        "timeouts": 0,
        "agings": 1,
        "retransmits": 5,
        "retrans_bytes_charged": 7240,
        "rto_timeouts": 1,
        "kernel_cwnd_bound_polls": 0,
    }
    kernel = eng.tcpcm_kernel()["tcpcm"]
    assert kernel["kernel_cc"] == "fg_cm" and kernel["flows"]["tcpcm-0"]["retrans"] == 5
    # TCP/CM's series: segments of the file's mss, at the experiment's time
    series = eng._tcpcm_series(tcpcm)["tcpcm-0"]
    assert series == [(2.0, 10, 2, 50.0)]


def test_sender_losses_count_what_the_paced_senders_lost_after_warm_up(tmp_path: Path) -> None:
    """two-bottleneck (warm-up 20 s): flow1 lost 4 packets up to the end of warm-up and 1
    after it, the others none; a sender's times are its own (since it started)."""
    plan = load(EXPERIMENTS_DIR / "two-bottleneck.toml", "lab")
    eng = Bmv2Engine()
    eng.ctx = SimpleNamespace(log_path=lambda name: tmp_path / f"{name}.jsonl")  # type: ignore[assignment]
    eng._plan = plan
    eng.t0 = 100.0
    for f in plan.flows:
        lost = [(1.0, 3), (18.5, 3), (19.5, 4), (24.0, 5)] if f.name == "flow1" else [(1.0, 0)]
        _log(
            tmp_path / f"tx-{f.name}.jsonl",
            [{"type": "agent", "wall_time": 100.5}]
            + [{"type": "sample", "t_us": round(t * 1e6), "losses": n} for t, n in lost],
        )
    # flow1's 19.5 s sample is at 20.0 s of the run: warm-up's last
    assert eng.sender_losses() == {
        "after_warmup": 1,
        "total": 5,
        "flows": {"flow1": 1, "flow2": 0, "flow3": 0},
    }
