"""FairGate controller: python -m fairgate_controller --topo FILE --algo qfcp ..."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path
from typing import NoReturn

from fairgate_controller.agent import SESSION_COMPLETIONS, ControlConfig
from fairgate_controller.ficcrd import FiccrdConfig
from fairgate_controller.topology import TopologyError, load

DESCRIPTION = """\
FairGate's P4Runtime controller. For every switch in the topology file it
pushes the pipeline (when the switch holds another), installs shortest-path
IPv4 routes, histogram buckets and admission ports, and then every control
period reads the switch's counters, computes each port's fair rate and
congestion flag with the chosen algorithm, writes them in one batch, and (with
--session) searches the SYN admit rate of ports marked "admission" in the
topology. It reconnects to switches that restart and restores their state; a
second controller with a lower --election-id stays backup and writes nothing.
Stop it with Ctrl-C or SIGTERM: the switches keep the last rates.
"""


def period_arg(text: str) -> float | None:
    if text == "auto":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds or 'auto': {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError("the period must be > 0 s")
    return value


class OneLineParser(argparse.ArgumentParser):
    """Argument errors are one line (no usage block) and exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"fairgate_controller: {message} (see --help)\n")


def parser() -> argparse.ArgumentParser:
    p = OneLineParser(
        prog="python -m fairgate_controller",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--topo", required=True, type=Path, help="topology file (JSON, see docs/topology-file.md)"
    )
    p.add_argument(
        "--algo",
        choices=["qfcp", "rcp", "lestas", "xcp", "none"],
        default="qfcp",
        help="fair-rate algorithm per port; 'none' installs routes only and never "
        "stamps (default: qfcp)",
    )
    p.add_argument(
        "--session",
        choices=["off", "strategy1", "strategy2"],
        default="off",
        help="session control on admission ports: strategy1 maximises the completion "
        "rate, strategy2 also never admits faster than flows complete "
        "(default: off)",
    )
    p.add_argument(
        "--admit-rate",
        type=float,
        default=None,
        metavar="FLOWS_PER_S",
        help="a static SYN gate: this admit rate on every admission port, kept by the "
        "controller (rewritten after a switch restart) and recorded per --session-window "
        "as a search's would be; not with --session strategy1/2 (default: none)",
    )
    p.add_argument(
        "--period",
        type=period_arg,
        default=0.1,
        metavar="SECONDS|auto",
        help="control period; 'auto': every port on its own timer, its interval the mean "
        "RTT carried by its packets in its last interval (0.05 s before any), within "
        "--period-min/--period-max (default: 0.1)",
    )
    p.add_argument(
        "--period-min",
        type=float,
        default=0.001,
        help="lower bound for auto (s; default 0.001: the RTT histogram's first bucket)",
    )
    p.add_argument(
        "--period-max",
        type=float,
        default=1.0,
        help="upper bound for auto (s; default 1: RTTs above the histogram's 1 s overflow)",
    )
    p.add_argument(
        "--session-window",
        type=float,
        default=1.0,
        help="session-control measurement window in seconds (default: 1.0)",
    )
    p.add_argument(
        "--session-completions",
        choices=SESSION_COMPLETIONS,
        default="servers",
        help="where session control counts completed flows (first FINs: the switch counts "
        "a retransmitted FIN as a repeat) and admitted ones (SYNs through, SYN-ACKs "
        "back): the servers' FINs leaving this switch's other ports, sent once all of a "
        "flow's data arrived, and the clients' SYNs leaving the far-end switch of the gated "
        "link towards the servers ('servers', default); the clients' FINs and SYNs leaving "
        "that far-end switch, i.e. those that got through the gated queue ('downstream'; "
        "a client's FIN can get through before the data the queue dropped); for a gated "
        "port towards a host both fall back to 'reverse': the servers' FINs and SYN-ACKs "
        "leaving this switch's other ports ('reverse'); or FINs leaving the gated port "
        "itself ('same')",
    )
    p.add_argument(
        "--q-ref",
        type=float,
        default=10.0,
        help="Lestas target queue in packets of 1500 bytes (default: 10)",
    )
    p.add_argument(
        "--min-rate",
        type=int,
        default=8,
        help="never advertise less than this many kbit/s (default: 8)",
    )
    p.add_argument(
        "--ficcrd",
        action="store_true",
        help="enable FICCRD: resource discovery at edge ports, MAPR/DPF at core queues and "
        "receive-window rewriting for unmodified TCP (docs/ficcrd.md)",
    )
    p.add_argument(
        "--ficcrd-k",
        type=int,
        default=8,
        metavar="K",
        help="FICCRD: one resource-discovery packet per K packets of a flow (default: 8)",
    )
    p.add_argument(
        "--ficcrd-core",
        choices=["links", "all"],
        default="links",
        help="FICCRD: core queues on switch-to-switch links only, or on every port "
        "(default: links)",
    )
    p.add_argument(
        "--election-id",
        type=int,
        default=10,
        help="P4Runtime election id; the highest connected one is primary (default: 10)",
    )
    p.add_argument(
        "--device-id",
        type=int,
        default=None,
        help="P4Runtime device id for every switch (default: each switch's "
        "device_id in the topology; BMv2 uses 0)",
    )
    p.add_argument(
        "--switch-timeout",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="after this long, log an error naming every switch not yet reached "
        "(the controller keeps driving the others and keeps trying; default: 10)",
    )
    p.add_argument(
        "--records",
        type=Path,
        default=None,
        help="append one JSON record per port per period to this file",
    )
    p.add_argument(
        "--live",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="live terminal table (default: when stdout is a terminal)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        choices=["DEBUG", "INFO", "WARNING", "ERROR"],
        help="(default: INFO)",
    )
    return p


def check_arguments(args: argparse.Namespace) -> None:
    """What argparse's types do not check; ValueError names the option."""
    if not args.election_id >= 1:
        raise ValueError(f"--election-id must be >= 1 (P4Runtime), got {args.election_id}")
    if args.device_id is not None and args.device_id < 0:
        raise ValueError(f"--device-id must be >= 0, got {args.device_id}")
    if not args.ficcrd_k >= 1:
        raise ValueError(f"--ficcrd-k must be >= 1, got {args.ficcrd_k}")
    if args.switch_timeout is not None and not args.switch_timeout > 0:
        raise ValueError(f"--switch-timeout must be > 0 s, got {args.switch_timeout}")
    if args.records is not None:
        if args.records.is_dir():
            raise ValueError(f"--records {args.records}: is a directory, not a file")
        parent = args.records.parent
        if parent.exists() and not parent.is_dir():
            raise ValueError(f"--records {args.records}: {parent} is not a directory")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        topo = load(args.topo)
        config = ControlConfig(
            algo=args.algo,
            session=args.session,
            admit_fps=args.admit_rate,
            period_s=args.period,
            period_min_s=args.period_min,
            period_max_s=args.period_max,
            session_window_s=args.session_window,
            session_completions=args.session_completions,
            q_ref_pkts=args.q_ref,
            min_rate_kbps=args.min_rate,
            ficcrd=FiccrdConfig(rd_interval=args.ficcrd_k, core=args.ficcrd_core)
            if args.ficcrd
            else None,
        )
        check_arguments(args)
        gating = f"--session {args.session}"
        if args.admit_rate is not None:
            gating = f"--admit-rate {args.admit_rate:g}"
        if gating != "--session off" and not any(p.admission for p in topo.ports.values()):
            raise ValueError(
                f"{gating}: {args.topo} has no admission port to gate (mark a link's "
                '"admission": true, docs/topology-file.md)'
            )
    except (TopologyError, ValueError) as exc:
        print(f"fairgate_controller: {exc}", file=sys.stderr)
        return 2
    from fairgate_controller.app import run

    live = sys.stdout.isatty() if args.live is None else args.live
    asyncio.run(
        run(
            topo,
            config,
            args.election_id,
            args.records,
            args.device_id,
            live,
            switch_timeout_s=args.switch_timeout,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
