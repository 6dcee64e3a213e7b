"""The CM applications' shared arguments: one parser helper, ranges checked by argparse."""

from __future__ import annotations

import argparse

import pytest

from fairgate_hosts.apps import audio, bulk, tcpcm
from fairgate_hosts.apps.cm_args import add_cm_arguments, cm_config


def _parser(probing: bool) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="t")
    add_cm_arguments(p, mss=1000, max_rate_kbps=500.0, probing=probing)
    return p


def test_config_follows_the_arguments() -> None:
    argv = "--mss 1448 --initial-rate 80 --aging srtt --probes-per-rtt 0.5 --probe-spread 0.5"
    args = _parser(True).parse_args(argv.split())
    cfg = cm_config(args)
    assert (cfg.mss, cfg.burst_bytes) == (1448, 2896)
    assert cfg.initial_rate_Bps == 10_000.0
    assert cfg.max_rate_Bps == 62_500.0  # the app's default cap, 500 kbit/s
    assert (cfg.aging, cfg.probes_per_rtt, cfg.probe_spread) == ("srtt", 0.5, 0.5)
    assert cm_config(_parser(True).parse_args([])).probe_spread == 0.5  # RTCP's, by default
    assert cm_config(_parser(True).parse_args(["--probe-spread", "0"])).probe_spread == 0.0


def test_without_probing_there_are_no_probe_arguments() -> None:
    p = _parser(False)
    with pytest.raises(SystemExit):
        p.parse_args(["--probe-spread", "0.5"])
    cfg = cm_config(p.parse_args([]), probing=False)
    assert cfg.probing is False


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--probe-spread", "1"], "--probe-spread: must be in [0, 1), got 1"),
        (["--probe-spread", "-0.1"], "--probe-spread: must be in [0, 1), got -0.1"),
        (["--probe-spread", "half"], "--probe-spread: not a number: 'half'"),
        (["--probes-per-rtt", "0"], "--probes-per-rtt: must be above 0, got 0"),
        (["--initial-rate", "-5"], "--initial-rate: must be above 0, got -5"),
    ],
)
def test_bad_values_exit_with_the_argument_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        _parser(True).parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("module", "probing", "mss", "max_rate"),
    [(bulk, True, 1200, 20_000.0), (audio, True, 1200, 1000.0), (tcpcm, False, 1448, 100_000.0)],
)
def test_each_app_uses_the_shared_arguments(
    module: object, probing: bool, mss: int, max_rate: float
) -> None:
    p = module.build_parser()  # type: ignore[attr-defined]
    args = p.parse_args(["--dst", "10.0.0.2"])
    assert (args.mss, args.max_rate, args.aging) == (mss, max_rate, "min_rtt")
    assert hasattr(args, "probe_spread") is probing
    with pytest.raises(SystemExit):
        p.parse_args(["--dst", "10.0.0.2", "--initial-rate", "0"])
