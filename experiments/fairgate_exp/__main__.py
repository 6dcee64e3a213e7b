"""``python -m fairgate_exp run FILE|NAME --engine sim|bmv2 [--scale S] [--algo A,B]``
and ``python -m fairgate_exp check FILE``.

A bad file gets one line on stderr and exit status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from fairgate_exp.engine import Engine
from fairgate_exp.load import ExperimentError, load
from fairgate_exp.schema import ALGORITHMS


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fairgate_exp", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run an experiment file")
    r.add_argument("exp", help="experiments/<name>.toml or a path")
    r.add_argument("--engine", choices=("sim", "bmv2"), default="sim")
    r.add_argument("--scale", default=None, help="a [scales.<name>] of the file (default: first)")
    r.add_argument("--algo", default="all", help="comma-separated, or all (the file's)")
    r.add_argument("--variant", default="all", help="comma-separated, or all (the file's)")
    r.add_argument("--results", type=Path, default=Path("results"))
    r.add_argument("--quiet", action="store_true", help="only the verdicts")
    r.add_argument("--json", action="store_true", help="print summary.json at the end")
    r.add_argument(
        "--workers", type=int, default=0, help="sweeps: processes (default 0: one per core)"
    )
    r.add_argument(
        "--scheduler",
        default=None,
        help="sweeps: 'local' (a Dask LocalCluster of --workers processes) or tcp://host:8786",
    )
    dash_args(r)
    d = sub.add_parser("dashboard", help="replay a run folder in the dashboard (docs/dashboard.md)")
    d.add_argument("run_dir", type=Path, help="results/<experiment>/<run-id> (or .../latest)")
    d.add_argument("--dashboard-host", default="127.0.0.1", help="another address needs a token")
    d.add_argument("--dashboard-port", type=int, default=0, help="0: a free port (printed)")
    rep = sub.add_parser(
        "report", help="regenerate docs/results.md from the newest runs and the files"
    )
    rep.add_argument("--results", type=Path, default=Path("results"))
    rep.add_argument(
        "--archive",
        type=Path,
        default=None,
        help="the committed archive of cited records (make report: docs/records), read "
        "before --results and refreshed with exactly the records the document cites",
    )
    rep.add_argument("--doc", type=Path, default=Path("docs/results.md"))
    rep.add_argument(
        "--strict",
        action="store_true",
        help="fail instead of keeping a previous section whose records are not here",
    )
    rep.add_argument(
        "--drop",
        default="",
        help="comma-separated experiments whose new section is written even if it shows "
        "less than the previous one (their absent records' numbers go)",
    )
    c = sub.add_parser("check", help="validate a file; print its resolved form")
    c.add_argument("exp")
    c.add_argument("--scale", default=None)
    return p


def dash_args(r: argparse.ArgumentParser) -> None:
    g = r.add_argument_group("dashboard (docs/dashboard.md)")
    g.add_argument("--dashboard", action="store_true", help="serve the live dashboard")
    g.add_argument("--dashboard-host", default="127.0.0.1", help="another address needs a token")
    g.add_argument("--dashboard-port", type=int, default=0, help="0: a free port (printed)")
    g.add_argument("--speed", type=float, default=1.0, help="sim s per wall s; 0: flat out")
    g.add_argument("--paused", action="store_true", help="start paused (step from the page)")
    g.add_argument("--dashboard-exit", action="store_true", help="stop serving when the run ends")


def report(args: argparse.Namespace) -> int:
    """``make report``: the document, a warning per previous section kept or removed."""
    from fairgate_exp.report import ReportError, update

    drop = {n for n in args.drop.split(",") if n}
    try:
        rep = update(args.doc, args.results, archive=args.archive, strict=args.strict, drop=drop)
    except ReportError as exc:
        print(f"report (strict): {exc}; {args.doc} not written", file=sys.stderr)
        return 1
    for k in rep.kept:
        why = (
            f"records {', '.join(k.absent)} are not on this machine"
            if k.absent
            else (f"experiments/{k.name}.toml could not be read")
        )
        line = f"report: WARNING kept section `{k.name}` from the previous report: {why}"
        if k.unshown:
            line += (
                f"; records here it would have shown instead: {', '.join(k.unshown)} "
                f"(make report DROP={k.name} shows them and drops the absent ones' numbers)"
            )
        print(line, file=sys.stderr)
    for name in rep.removed:
        print(f"report: removed section `{name}`: no experiments/{name}.toml", file=sys.stderr)
    roots = f"{args.archive} and {args.results}" if args.archive else str(args.results)
    print(f"report: {args.doc} {'updated' if rep.changed else 'unchanged'} from {roots}")
    if rep.archived is not None:
        print(
            f"report: archive {args.archive}: {len(rep.archived.written)} file(s) written, "
            f"{len(rep.archived.removed)} removed"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.cmd == "dashboard":
        from fairgate_exp.dashboard.serve import replay

        try:
            return replay(args.run_dir, args.dashboard_host, args.dashboard_port)
        except (ExperimentError, OSError) as exc:
            print(f"dashboard: {exc}", file=sys.stderr)
            return 2
    if args.cmd == "report":
        return report(args)
    try:
        plan = load(args.exp, args.scale)
        algos = plan.algorithms if getattr(args, "algo", "all") == "all" else args.algo.split(",")
        bad = [a for a in algos if a not in ALGORITHMS]
        if bad:
            raise ExperimentError(f"--algo: unknown algorithm(s) {', '.join(bad)}")
        if getattr(args, "engine", None) == "bmv2":
            from fairgate_exp.engines.bmv2 import frame_size_note, lab_topology

            try:
                lab_topology(plan)
            except ValueError as exc:
                raise ExperimentError(f"{plan.path}: {exc}") from None
            frames = frame_size_note(plan)
            if frames:
                print(f"experiment: note: {frames}", file=sys.stderr)
        if getattr(args, "variant", "all") != "all":
            names = [v.name for v in plan.variants]
            unknown = [n for n in args.variant.split(",") if n not in names]
            if unknown:
                raise ExperimentError(
                    f"--variant: unknown variant(s) {', '.join(unknown)} "
                    f"(the file has {', '.join(names) or 'none'})"
                )
            plan.variants = [v for v in plan.variants if v.name in args.variant.split(",")]
    except ExperimentError as exc:
        print(f"experiment: {exc}", file=sys.stderr)
        return 2
    if args.cmd == "check":
        print(json.dumps(plan.resolved(), indent=2))
        return 0
    make: Callable[[], Engine]
    sweep = plan.file.sweep is not None and bool(plan.file.sweep.grid)
    if sweep:
        from fairgate_exp.sweep import run_sweep, sweep_refusal

        refusal = "sweeps have no dashboard" if args.dashboard else None
        refusal = refusal or sweep_refusal(args.engine, args.workers, args.scheduler)
        if refusal:
            print(f"experiment: {refusal}", file=sys.stderr)
            return 2
    if args.engine == "sim":
        from fairgate_exp.engines.sim import SimEngine

        make = SimEngine
    else:
        from fairgate_exp.engines.bmv2 import Bmv2Engine, check_environment

        make = Bmv2Engine
        signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM tears down like Ctrl-C
        # and Ctrl-C always does, even when started from a script's background job
        # (a non-interactive shell starts those with SIGINT ignored, which Python keeps)
        signal.signal(signal.SIGINT, _interrupt)

        problem = check_environment()
        if problem:
            print(f"experiment: {problem}", file=sys.stderr)
            return 2
    from fairgate_exp.driver import RunError, run

    def say(msg: str) -> None:
        if not args.quiet or msg.lstrip().startswith(("PASS", "FAIL", "sweep")):
            print(msg, flush=True)

    if sweep:
        try:
            run_sweep(
                args.exp,
                args.scale,
                algos,
                args.results,
                args.workers,
                args.scheduler,
                say=say,
                engine=args.engine,
            )
        except KeyboardInterrupt:
            print("experiment: interrupted; everything started was stopped", file=sys.stderr)
            return 130
        except RunError as exc:
            line = str(exc).splitlines()[0][:300]
            print(f"experiment: {args.engine} sweep point failed: {line}", file=sys.stderr)
            return 1
        return 0

    served = None
    if args.dashboard:
        from fairgate_exp.dashboard.serve import live_engines, serve

        make, dash = live_engines(make, plan, args.engine, args.speed, args.paused)
        try:
            served = serve(dash, args.dashboard_host, args.dashboard_port)
        except OSError as exc:
            print(f"dashboard: cannot listen on {args.dashboard_host}: {exc}", file=sys.stderr)
            return 2
    try:
        if sys.stdout.isatty() and not args.quiet and not args.json:
            from fairgate_exp.live import LiveView, verdict_table

            with LiveView() as view:
                run_dir, summary = run(
                    plan, make, args.engine, args.results, algos, view.say, view.update
                )
            view.console.print(verdict_table(summary))
        else:
            run_dir, summary = run(plan, make, args.engine, args.results, algos, say)
    except KeyboardInterrupt:
        print("experiment: interrupted; everything started was stopped", file=sys.stderr)
        return 130
    except RunError as exc:
        line = str(exc).splitlines()[0][:300]
        print(
            f"experiment: {args.engine} run failed: {line} ({exc.run_dir}/error.txt)",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(summary, indent=2))
    verdict = "all expectations met" if summary["passed"] else "some expectations FAILED"
    if not summary["verdicts"]:
        verdict = f"nothing judged, {len(summary.get('measured', []))} values measured"
    print(f"experiment: {verdict}; record in {run_dir}")
    if served is not None and not args.dashboard_exit:
        print(f"dashboard: still serving {served.url} ; Ctrl-C stops it", flush=True)
        try:
            served.thread.join()
        except KeyboardInterrupt:
            served.stop()
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
