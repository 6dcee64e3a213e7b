"""The delay line's core (fairgate_topo.delaycore) and its command line."""

from __future__ import annotations

import math

import pytest

from fairgate_topo.delaycore import (
    DROP_REPORT_EVERY_S,
    LATENESS_BUCKET_S,
    DelayCore,
    Direction,
    Lateness,
)
from fairgate_topo.delayline import parse_args

AB, BA = Direction.AB, Direction.BA


def test_a_frame_is_due_exactly_delay_after_arrival() -> None:
    core = DelayCore(0.010)
    assert core.next_due() is None
    assert core.push(AB, b"x", 5.0)
    assert core.next_due() == pytest.approx(5.010)
    assert core.pop_due(5.0099) == []
    assert core.pop_due(5.010) == [(AB, b"x")]
    assert core.next_due() is None
    assert core.pending() == 0


def test_zero_delay_releases_at_once() -> None:
    core = DelayCore(0.0)
    core.push(BA, b"y", 1.0)
    assert core.pop_due(1.0) == [(BA, b"y")]


def test_order_is_kept_per_direction_and_merged_by_due_time() -> None:
    core = DelayCore(0.005)
    arrivals = [(AB, b"a1", 0.000), (BA, b"b1", 0.001), (AB, b"a2", 0.002), (BA, b"b2", 0.002)]
    for d, f, t in arrivals:
        core.push(d, f, t)
    assert core.pop_due(0.0065) == [(AB, b"a1"), (BA, b"b1")]
    # Same due time: A->B first, then B->A; nothing else is due.
    assert core.pop_due(0.007) == [(AB, b"a2"), (BA, b"b2")]
    assert core.pop_due(1.0) == []


def test_many_frames_come_out_in_arrival_order() -> None:
    core = DelayCore(0.003)
    frames = [bytes([i % 256]) * (i % 7 + 1) for i in range(1000)]
    for i, f in enumerate(frames):
        core.push(AB, f, i * 1e-4)
    out = []
    t = 0.0
    while core.pending():
        t += 7e-4
        out += [f for _, f in core.pop_due(t)]
    assert out == frames


def test_a_clock_step_back_does_not_reorder() -> None:
    core = DelayCore(0.010)
    core.push(AB, b"first", 2.0)
    core.push(AB, b"second", 1.5)  # clock went back 0.5 s
    assert core.next_due() == pytest.approx(2.010)
    assert core.pop_due(2.010) == [(AB, b"first"), (AB, b"second")]


def test_a_full_direction_drops_and_counts_without_touching_the_other() -> None:
    core = DelayCore(1.0, capacity=3)
    assert [core.push(AB, bytes([i]), 0.0) for i in range(5)] == [True] * 3 + [False] * 2
    assert core.push(BA, b"z", 0.0)
    ab, ba = core.stats
    assert (ab.rx, ab.dropped_full, ab.max_pending) == (3, 2, 3)
    assert (ba.rx, ba.dropped_full) == (1, 0)
    assert core.dropped() == 2
    # Room again once frames leave; the held frames are the first three.
    assert [f for _, f in core.pop_due(1.0) if _ == AB] == [b"\x00", b"\x01", b"\x02"]
    assert core.push(AB, b"later", 1.0)
    counts = core.counts()
    assert counts["ab"]["tx"] == 3 and counts["ab"]["dropped_full"] == 2  # type: ignore[index]


def test_drops_are_reported_at_once_then_at_most_once_per_interval() -> None:
    core = DelayCore(1.0, capacity=1)
    assert core.drop_report(0.0) is None
    core.push(AB, b"a", 0.0)
    core.push(AB, b"b", 0.0)
    first = core.drop_report(0.0)
    assert first is not None and "lost 1 frame" in first and "AB: 1 buffer full" in first
    core.push(AB, b"c", 0.1)
    assert core.drop_report(0.1) is None  # too soon
    later = core.drop_report(DROP_REPORT_EVERY_S + 0.01)
    assert later is not None and "lost 1 frame" in later and "AB: 2 buffer full" in later
    assert core.drop_report(10.0) is None  # nothing new


def test_send_errors_count_as_losses_not_as_sent() -> None:
    core = DelayCore(0.0)
    core.push(BA, b"q", 0.0)
    assert core.pop_due(0.0) == [(BA, b"q")]
    core.tx_error(BA)
    st = core.stats[BA]
    assert (st.tx, st.tx_errors) == (0, 1)
    assert core.dropped() == 1
    assert core.drop_report(0.0) is not None


def test_lateness_is_measured_from_the_due_time() -> None:
    core = DelayCore(0.010)
    core.push(AB, b"a", 0.0)
    core.push(AB, b"b", 0.0)
    core.pop_due(0.010 + 25e-6)
    s = core.lateness.summary()
    assert s["frames"] == 2
    assert s["mean_us"] == pytest.approx(25.0, abs=0.1)
    assert s["p50_us"] == pytest.approx(30.0)  # upper edge of the 20-30 us bucket
    assert s["max_us"] == pytest.approx(25.0, abs=0.1)


def test_lateness_quantiles_and_overflow_bucket() -> None:
    lat = Lateness()
    assert lat.quantile_s(0.5) is None and lat.summary()["mean_us"] is None
    for _ in range(99):
        lat.add(0.0)
    lat.add(1.0)  # beyond the histogram: last bucket
    assert lat.quantile_s(0.5) == pytest.approx(LATENESS_BUCKET_S)
    assert lat.quantile_s(0.99) == pytest.approx(LATENESS_BUCKET_S)
    assert lat.quantile_s(1.0) == pytest.approx(len(lat.buckets) * LATENESS_BUCKET_S)
    assert lat.max_s == 1.0


@pytest.mark.parametrize("delay", [-0.001, math.nan, math.inf, 11.0, "5", True])
def test_bad_delays_are_refused_with_a_reason(delay: object) -> None:
    with pytest.raises(ValueError, match="delay"):
        DelayCore(delay)  # type: ignore[arg-type]


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True])
def test_bad_capacities_are_refused_with_a_reason(capacity: object) -> None:
    with pytest.raises(ValueError, match="capacity"):
        DelayCore(0.01, capacity)  # type: ignore[arg-type]


def test_command_line_builds_the_config(tmp_path: object) -> None:
    cfg = parse_args(["--a", "x0", "--b", "x1", "--delay-ms", "12.5", "--capacity", "100"])
    assert (cfg.a, cfg.b, cfg.delay_s, cfg.capacity) == ("x0", "x1", 0.0125, 100)
    assert cfg.pid_file is None and cfg.fix_offloads


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--a", "x0", "--b", "x0", "--delay-ms", "1"], "same interface"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "-1"], "--delay-ms must be between"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "nan"], "--delay-ms must be between"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "20000"], "--delay-ms must be between"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "ten"], "invalid float value"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "1", "--capacity", "0"], "--capacity"),
        (["--a", "x0", "--delay-ms", "1"], "--b"),
        (["--a", "x0", "--b", "x1", "--delay-ms", "1", "--rt-priority", "100"], "--rt-priority"),
    ],
)
def test_bad_command_lines_exit_2_with_a_message(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
