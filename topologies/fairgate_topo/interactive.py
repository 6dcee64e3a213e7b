"""Interactive lab: ``make run EXP=<experiment>`` puts the network at a ``mininet>`` prompt.

``python -m fairgate_topo.interactive --exp two-bottleneck [--algo qfcp] [--pcap]`` builds the
network of an experiment file (``experiments/<name>.toml`` or a path; ``lab_spec`` reads it as
the BMv2 experiment engine does), starts the controller with the file's control settings and,
on every host, a receiver agent (UDP 7471, acks held by the host's ``ack_delay``) and a TCP
sink (5001); the file's flows are not started. It prints a cheat sheet and leaves
the user at the Mininet CLI, where the host commands ``fg-send``, ``fg-recv``, ``fg-tcp``,
``fg-cm`` (``fairgate_hosts.cli``) and ``fg-status`` work. Everything goes to the run folder
``results/<experiment>/cli-<run-id>/``; with ``--pcap`` BMv2 writes ``pcap/<interface>_in.pcap``
and ``_out.pcap`` per switch port (e.g. ``pcap/s1-eth1_out.pcap``: what leaves s1 by port 1).

Leaving the CLI (``exit``, Ctrl-D), SIGTERM or SIGHUP stops, by PID: the commands the user
started (``pids/``), every other process left in the hosts' namespaces, the agents and the
controller (``ProcessGroup``), then ``net.stop()`` stops the switches and removes the veths.
Ctrl-C at the prompt interrupts the running host command (Mininet's behaviour); during start-up
it aborts with the same clean-up. ``session.json`` lists what was started (PIDs, namespaces,
interfaces) so a test can check that nothing is left.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from fairgate_topo.labnet import LabTopology, pps_to_kbps
from fairgate_topo.labrun import PY

TCP_SINK_PORT = 5001
COMMANDS = {
    "fg-send": "fairgate_hosts.cli.send",
    "fg-recv": "fairgate_hosts.cli.recv",
    "fg-tcp": "fairgate_hosts.cli.tcp",
    "fg-cm": "fairgate_hosts.cli.cm",
    "fg-status": "fairgate_hosts.cli.status",
}


class LabError(Exception):
    """Bad input or a missing tool: one line, exit 2."""


class Terminated(BaseException):
    """SIGTERM/SIGHUP: leave the CLI (Mininet's CLI swallows KeyboardInterrupt)."""


@dataclass(frozen=True)
class LabSpec:
    """What the interactive lab needs from an experiment file."""

    name: str
    paper: str
    topology: LabTopology
    host_sysctls: dict[str, str]
    algos: tuple[str, ...]  # accepted by --algo
    default_algo: str
    ack_delay_ms: dict[str, float]  # per host: its receiver holds acks this long
    controller_args: tuple[str, ...]


def lab_spec(exp: str, scale: str | None = None) -> LabSpec:
    """The network, hosts and algorithms of an experiment file (``experiments/<name>.toml``
    or a path), as the BMv2 experiment engine builds them; the file's flows are not started."""
    from fairgate_exp.engines.bmv2 import controller_args, lab_topology, tcp_sysctls
    from fairgate_exp.load import ExperimentError, load

    try:
        plan = load(exp, scale)
        topology = lab_topology(plan)
    except (ExperimentError, ValueError) as exc:
        raise LabError(str(exc).splitlines()[0]) from None
    algos = tuple(dict.fromkeys([*plan.algorithms, "qfcp", "rcp", "lestas", "none"]))
    return LabSpec(
        plan.name,
        plan.file.experiment.paper or plan.file.experiment.title or plan.name,
        topology,
        tcp_sysctls(plan),
        algos,
        plan.algorithms[0],
        {h.name: h.ack_delay_s * 1000 for h in plan.hosts.values()},
        tuple(controller_args(plan)),
    )


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fairgate_topo.interactive", description=__doc__)
    p.add_argument("--exp", required=True, help="experiment file: a name in experiments/ or a path")
    p.add_argument("--scale", default=None, help="the file's scale (default: its first)")
    p.add_argument("--algo", default=None, help="controller algorithm (default: the experiment's)")
    p.add_argument("--pcap", action="store_true", help="per-port pcaps into the run folder")
    p.add_argument("--results", type=Path, default=Path("results"), help="results folder")
    p.add_argument("--run-id", default=None, help="default: cli-<date-time>")
    return p


def choose_algo(spec: LabSpec, algo: str | None) -> str:
    if algo in (None, "", "all"):
        return spec.default_algo
    if algo not in spec.algos:
        raise LabError(f"{spec.name} runs with {', '.join(spec.algos)}, not {algo!r}")
    return algo


def port_peers(topo: LabTopology) -> dict[str, str]:
    """'s1:1' -> what that port leads to (a host or a switch)."""
    peers = {f"{h.switch}:{h.port}": h.name for h in topo.hosts.values()}
    for x in topo.links:
        peers[f"{x.a}:{x.a_port}"] = x.b
        peers[f"{x.b}:{x.b_port}"] = x.a
    return peers


def cheat_sheet(spec: LabSpec, algo: str, run_dir: Path, thrift: dict[str, int]) -> str:
    """The text printed above the first prompt."""
    topo = spec.topology
    lines = [
        "=" * 78,
        f"FairGate lab {spec.name} ({spec.paper}); controller algorithm {algo}",
        f"run folder {run_dir}",
        "hosts: "
        + "  ".join(f"{h.name} {h.ip} ({h.switch}:{h.port})" for h in topo.hosts.values()),
        "bottlenecks (BMv2 egress queues; C = queue rate x 1242 B frames):",
    ]
    peers = port_peers(topo)
    for sw, port, rate, depth in topo.queues():
        cap = "" if rate is None else f"{rate} pkt/s = {pps_to_kbps(rate) / 1000:.2f} Mbit/s"
        lines.append(f"  {sw}:{port} -> {peers.get(f'{sw}:{port}', '?')}  {cap}  depth {depth}")
    hosts = list(topo.hosts)
    a, b = hosts[0], hosts[-1]
    c = hosts[1] if len(hosts) > 2 else a
    d = hosts[-2] if len(hosts) > 2 else b
    delays = sorted({round(d, 3) for d in spec.ack_delay_ms.values()})
    held = (
        f"acks held {delays[0]:g} ms"
        if len(delays) == 1
        else "acks held " + ", ".join(f"{h} {d:g} ms" for h, d in spec.ack_delay_ms.items() if d)
    )
    lines += [
        f"every host runs a receiver (UDP 7471, {held}: the emulated RTT)",
        f"and a TCP sink (port {TCP_SINK_PORT}). Commands (host names become addresses):",
        f"  {a} fg-send {b} --for 30 &         rate-controlled UDP flow (--rate 20M: ask <= 20M)",
        f"  {c} fg-send {d} --for 30 &         a second flow: watch the first one's rate fall",
        "  fg-status                          fair rate, arrivals, queue, drops of every port",
        f"  {b} fg-recv --for 5                what {b} receives, a line a second",
        f"  {c} fg-tcp {d} --flows poisson:50/s --sizes pareto:1.5,10k --for 20",
        f"  {a} fg-cm {b} --flows 3 --for 10     flows sharing one Congestion Manager",
        f"  {a} ping -c3 {b}    nodes    net    help    <cmd> --help",
        "  sh simple_switch_CLI --thrift-port "
        + ", ".join(f"{p} ({s})" for s, p in thrift.items()),
        "  exit or Ctrl-D stops everything (Ctrl-C stops the running host command)",
        "=" * 78,
    ]
    return "\n".join(lines)


def write_wrappers(bin_dir: Path, python: str = PY) -> None:
    """``bin/fg-*``: shell wrappers that run the commands with this interpreter."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, module in COMMANDS.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\nexec {shlex.quote(python)} -m {module} "$@"\n')
        path.chmod(0o755)


def process_start_ticks(pid: int) -> int | None:
    """Start time of a live process (clock ticks since boot); None if gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] in ("Z", "X") else int(fields[19])


def netns_inode(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def processes_in(namespaces: set[str], exclude: set[int]) -> list[int]:
    """PIDs of every process whose network namespace is one of ``namespaces``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        if netns_inode(int(entry.name)) in namespaces:
            out.append(int(entry.name))
    return out


def stop_pids(pids: dict[int, int | None], grace_s: float = 3.0) -> list[int]:
    """SIGINT, SIGTERM, SIGKILL to each PID whose start time still matches; the PIDs stopped."""

    def ours(pid: int) -> bool:
        start = pids[pid]
        now = process_start_ticks(pid)
        return now is not None and (start is None or now == start)

    stopped = [p for p in pids if ours(p)]
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in stopped if ours(p)]
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while any(ours(p) for p in alive) and time.monotonic() < deadline:
            time.sleep(0.05)
    return stopped


def user_commands(pid_dir: Path) -> dict[int, int | None]:
    """The fg-* commands still registered in ``pids/`` (PID -> start ticks)."""
    out: dict[int, int | None] = {}
    for path in pid_dir.glob("*"):
        if not path.name.isdigit():
            continue
        try:
            start = json.loads(path.read_text()).get("start")
        except (OSError, json.JSONDecodeError):
            start = None
        out[int(path.name)] = start
    return out


@contextlib.contextmanager
def lab_environment(run_dir: Path) -> Iterator[None]:
    """PATH with the fg-* wrappers and FG_RUN_DIR, for the host shells Mininet starts."""
    saved = {k: os.environ.get(k) for k in ("PATH", "FG_RUN_DIR")}
    os.environ["PATH"] = f"{run_dir / 'bin'}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    os.environ["FG_RUN_DIR"] = str(run_dir.resolve())
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def settle_shells(hosts: Iterable[Any], timeout_s: float = 5.0) -> list[str]:
    """Hosts whose shell still ran a foreground command, now idle again.

    Mininet cannot stop a network while a host shell runs a foreground command: removing
    the host's veth goes through ``Node.cmd``, which asserts the shell is not waiting, and
    the half-stopped network then leaves its switches running. So: interrupt the command,
    read the shell's output up to its prompt (bounded), and mark the shell idle."""
    settled = []
    for host in hosts:
        if not getattr(host, "waiting", False):
            continue
        settled.append(str(host.name))
        with contextlib.suppress(Exception):
            host.sendInt()
            deadline = time.monotonic() + timeout_s
            while host.waiting and time.monotonic() < deadline:
                host.monitor(timeoutms=200)
        host.waiting = False
    return settled


def tell(text: str) -> None:
    """Print, unless the terminal is gone (SIGHUP, a closed pipe): clean-up must go on."""
    with contextlib.suppress(OSError, ValueError):
        print(text, flush=True)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def background_marked(line: str) -> str:
    """``h1 fg-send r1 &`` -> ``h1 FG_BACKGROUND=1 fg-send r1 &``: a background fg-* command
    prints only its first and last lines (Mininet's host shells have no job control)."""
    words = line.split()
    if len(words) >= 2 and words[1] in COMMANDS and line.rstrip().endswith("&"):
        node, rest = line.strip().split(None, 1)
        return f"{node} FG_BACKGROUND=1 {rest}"
    return line


def make_cli_class() -> type:
    from mininet.cli import CLI

    class FairGateCLI(CLI):  # type: ignore[misc]
        """Mininet's CLI plus ``fg-status`` (and a hint for fg-* typed without a host)."""

        run_dir: Path = Path(".")

        def precmd(self, line: str) -> str:
            line = super().precmd(line)
            return background_marked(line)

        def default(self, line: str) -> None:
            head, _, rest = line.strip().partition(" ")
            if head in COMMANDS:
                getattr(self, f"do_{head.replace('-', '_')}")(rest)
            else:
                super().default(line)

        def do_fg_status(self, line: str) -> None:
            """Per port of every switch: fair rate, arrivals, queue, drops (fg-status --help)."""
            sys.stdout.flush()
            subprocess.call([str(self.run_dir / "bin" / "fg-status"), *shlex.split(line)])

        def _on_a_host(self, line: str, name: str) -> None:
            print(f"{name} runs on a host, e.g. h1 {name} {line}".rstrip(), flush=True)

        def do_fg_send(self, line: str) -> None:
            """Run on a host: h1 fg-send r1 --for 30 & (fg-send --help)."""
            self._on_a_host(line, "fg-send")

        def do_fg_recv(self, line: str) -> None:
            """Run on a host: r1 fg-recv --for 5."""
            self._on_a_host(line, "fg-recv")

        def do_fg_tcp(self, line: str) -> None:
            """Run on a host: h2 fg-tcp r2 --flows poisson:50/s --sizes pareto:1.5,10k."""
            self._on_a_host(line, "fg-tcp")

        def do_fg_cm(self, line: str) -> None:
            """Run on a host: h1 fg-cm r1 --flows 3 --for 10."""
            self._on_a_host(line, "fg-cm")

    return FairGateCLI


def start_agents(ctx: Any, ack_delay_ms: dict[str, float]) -> None:
    """A receiver agent (acks held as the file says) and a TCP sink on every host."""
    for h, delay in ack_delay_ms.items():
        cmd = [PY, "-m", "fairgate_hosts.receiver", "--ack-delay-ms", f"{delay:g}"]
        cmd += ["--log", str(ctx.log_path(f"rx-{h}")), "--log-interval", "0.2"]
        ctx.procs.start(f"rx-{h}", cmd, ctx.net.host(h))
        cmd = [PY, "-m", "fairgate_hosts.traffic.server", "--port", str(TCP_SINK_PORT)]
        cmd += ["--records", str(ctx.log_path(f"tcp-sink-{h}"))]
        ctx.procs.start(f"tcp-sink-{h}", cmd, ctx.net.host(h))


def session_doc(spec: LabSpec, algo: str, net: Any, procs: Any) -> dict[str, Any]:
    """What was started (for fg-* commands and for a check that nothing is left)."""
    mn = net.net
    hosts = {h.name: h.ip for h in spec.topology.hosts.values()}
    shells = {n.name: n.pid for n in mn.hosts}
    pids = {f"switch {s.name}": s.proc.pid for s in mn.switches if s.proc is not None}
    pids |= {f"agent {t.name}": t.proc.pid for t in procs.procs}
    pids |= {f"shell {k}": v for k, v in shells.items()}
    intfs = sorted(i.name for s in mn.switches for i in s.intfList() if i.name != "lo")
    return {
        "experiment": spec.name,
        "algo": algo,
        # fg-recv's own receiver holds acks this long: the file's receivers' delay (the
        # largest), per host in ack_delay_ms_by_host
        "ack_delay_ms": max(spec.ack_delay_ms.values(), default=0.0),
        "ack_delay_ms_by_host": spec.ack_delay_ms,
        "hosts": hosts,
        "ports": port_peers(spec.topology),
        "pids": {k: [v, process_start_ticks(v)] for k, v in pids.items()},
        "netns": sorted({ns for p in shells.values() if (ns := netns_inode(p))}),
        "intfs": intfs,
        "started": time.time(),
        "lab_pid": [os.getpid(), process_start_ticks(os.getpid())],
    }


def run_session(spec: LabSpec, algo: str, run_dir: Path, pcap: bool) -> None:
    from mininet.log import setLogLevel

    from fairgate_topo.labnet import LabNet
    from fairgate_topo.labrun import LabContext
    from fairgate_topo.procs import ProcessGroup

    setLogLevel("output")
    run_dir.mkdir(parents=True, exist_ok=True)
    write_wrappers(run_dir / "bin")
    procs = ProcessGroup(run_dir / "logs")
    switch_cls = pcap_switch_class(run_dir / "pcap") if pcap else None
    tell(f"[{spec.name}] building the network ({run_dir})")
    with lab_environment(run_dir):
        net = LabNet(spec.topology, run_dir, host_sysctls=spec.host_sysctls, switch_cls=switch_cls)
        with net:
            namespaces: set[str] = set()
            shells: set[int] = set()
            try:
                ctx = LabContext(spec.name, algo, run_dir, net, procs, say=print)
                tell(f"[{spec.name}] starting the controller ({algo}) and the host agents")
                ctx.start_controller(algo, list(spec.controller_args))
                start_agents(ctx, spec.ack_delay_ms)
                doc = session_doc(spec, algo, net, procs)
                namespaces = set(doc["netns"])
                shells = {n.pid for n in net.net.hosts}
                (run_dir / "session.json").write_text(json.dumps(doc, indent=1) + "\n")
                thrift = {s: net.net.get(s).thrift_port for s in spec.topology.switches}
                print(cheat_sheet(spec, algo, run_dir, thrift), flush=True)
                cli = make_cli_class()
                cli.run_dir = run_dir
                cli(net.net)
            finally:
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_IGN)  # clean-up is not interruptible
                tell(f"[{spec.name}] stopping everything started")
                steps = [
                    procs.stop_all,
                    lambda: stop_pids(user_commands(run_dir / "pids")),
                    lambda: stop_pids(
                        {
                            p: process_start_ticks(p)
                            for p in processes_in(namespaces, shells | {os.getpid()})
                        }
                    ),
                    lambda: settle_shells(net.net.hosts),  # before net.stop() (``with net``)
                ]
                for step in steps:  # each runs, whatever the others do
                    try:
                        step()
                    except Exception as exc:
                        tell(f"[{spec.name}] clean-up step failed: {exc}")


def pcap_switch_class(pcap_dir: Path) -> type:
    """Bmv2Switch writing ``<pcap_dir>/<interface>_in.pcap`` and ``_out.pcap`` per port."""
    from fairgate_topo.bmv2 import Bmv2Switch

    class PcapBmv2Switch(Bmv2Switch):  # type: ignore[misc]
        def command(self) -> list[str]:
            pcap_dir.mkdir(parents=True, exist_ok=True)
            cmd: list[str] = super().command()
            return [cmd[0], f"--pcap={pcap_dir}", *cmd[1:]]

    return PcapBmv2Switch


def main(argv: list[str] | None = None) -> int:
    from fairgate_exp.engines.bmv2 import check_environment

    args = parser().parse_args(argv)
    try:
        spec = lab_spec(args.exp, args.scale)
        algo = choose_algo(spec, args.algo)
    except LabError as exc:
        print(f"make run: {exc}", file=sys.stderr)
        return 2
    problem = check_environment()
    if problem:
        print(f"make run: {problem}", file=sys.stderr)
        return 2
    run_id = args.run_id or "cli-" + time.strftime("%Y%m%d-%H%M%S")
    run_dir = (args.results / spec.name / run_id).resolve()
    # Ctrl-C must reach the prompt and, through Mininet, the host commands, even when this
    # process was started with SIGINT ignored (a background job of a non-interactive shell,
    # as CI starts it): handled signals are reset to their default at exec, ignored ones
    # are inherited by every host shell and command.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    code = 0
    try:
        run_session(spec, algo, run_dir, args.pcap)
    except (KeyboardInterrupt, Terminated):
        code = 130
    except Exception as exc:  # start-up failed (a switch, the controller, Mininet): one line
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "error.txt").write_text(traceback.format_exc())
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        tell(f"make run: {first} (details: {run_dir / 'error.txt'}, logs in {run_dir})")
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
    tell(f"[{spec.name}] stopped; run folder {run_dir}")
    return code


if __name__ == "__main__":
    sys.exit(main())
