"""The Congestion Manager's command-line arguments, shared by the CM applications.

``bulk`` and ``audio`` probe their receiver (``probing=True``: ``--probes-per-rtt`` and
``--probe-spread`` too); ``tcpcm`` learns from TCP's acks and does not. Each range is
checked by argparse itself, so a bad value exits with a usage line naming the argument.
"""

from __future__ import annotations

import argparse
from typing import Any

from fairgate_hosts.cm.aimd import AGING_MODES
from fairgate_hosts.cm.core import CMConfig

__all__ = ["add_cm_arguments", "cm_config", "positive_float", "unit_fraction"]


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def positive_float(text: str) -> float:
    """An argparse type: a number above 0."""
    v = _number(text)
    if not v > 0.0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text}")
    return v


def unit_fraction(text: str) -> float:
    """An argparse type: a number in [0, 1)."""
    v = _number(text)
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return v


def add_cm_arguments(
    p: argparse.ArgumentParser, *, mss: int, max_rate_kbps: float, probing: bool
) -> None:
    """Add the CM's arguments to ``p`` (``mss``, ``max_rate_kbps``: the app's defaults)."""
    g = p.add_argument_group("Congestion Manager")
    g.add_argument("--mss", type=int, default=mss, help=f"bytes per grant (default {mss})")
    g.add_argument("--initial-rate", type=positive_float, default=192.0, help="kbit/s")
    g.add_argument(
        "--max-rate", type=positive_float, default=max_rate_kbps, help="macroflow cap, kbit/s"
    )
    g.add_argument("--aging", choices=AGING_MODES, default="min_rtt", help="aging half-life")
    if probing:
        g.add_argument("--probes-per-rtt", type=positive_float, default=2.0, help="probe frequency")
        g.add_argument(
            "--probe-spread",
            type=unit_fraction,
            default=0.5,
            help="draw each probe interval from [1 - s, 1 + s] x the interval (default 0.5, "
            "RTCP's; 0: fixed)",
        )


def cm_config(args: argparse.Namespace, **extra: Any) -> CMConfig:
    """The ``CMConfig`` that ``add_cm_arguments``' arguments describe (``extra``: more fields)."""
    fields: dict[str, Any] = {
        "mss": args.mss,
        "initial_rate_Bps": args.initial_rate * 125.0,
        "max_rate_Bps": args.max_rate * 125.0,
        "burst_bytes": 2 * args.mss,
        "aging": args.aging,
    }
    if hasattr(args, "probes_per_rtt"):
        fields["probes_per_rtt"] = args.probes_per_rtt
        fields["probe_spread"] = args.probe_spread
    return CMConfig(**fields, **extra)
