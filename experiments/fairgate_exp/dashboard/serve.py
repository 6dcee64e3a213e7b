"""Starting the dashboard: beside a live run (``run --dashboard``, ``make sim|lab ...
DASHBOARD=1``) or on a finished run folder (``python -m fairgate_exp dashboard RUN``).

It binds 127.0.0.1 unless ``--dashboard-host`` names another address; then every
request must carry a random access token, printed with the URL.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from fairgate_exp.dashboard.feed import RunFeed, plan_of_run
from fairgate_exp.dashboard.gate import Gate
from fairgate_exp.dashboard.server import Dashboard, make_app, new_token
from fairgate_exp.engine import Engine
from fairgate_exp.plan import FlowPlan, Plan
from fairgate_exp.records import read_t0, write_t0

LOOPBACK = ("127.0.0.1", "localhost", "::1")
BMV2_FLOW_POLL_S = 0.5  # BMv2: how often the receivers' logs are copied to flows.jsonl


@dataclass
class Served:
    server: uvicorn.Server
    thread: threading.Thread
    url: str
    token: str | None

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve(
    dash: Dashboard, host: str = "127.0.0.1", port: int = 0, say: Callable[[str], None] = print
) -> Served:
    """Starts uvicorn in a thread on ``host:port`` (0: a free port) and prints the URL;
    any address but 127.0.0.1/localhost/::1 gets a fresh access token."""
    token = None if host in LOOPBACK else new_token()
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(make_app(dash, token), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    say(f"dashboard: {url}" + ("  (access token required: keep this URL private)" if token else ""))
    return Served(server, thread, url, token)


class Watched:
    """An engine as the driver sees it, telling the feed where the run folder is. On BMv2
    it also writes ``t0.json`` (records carry wall time) and copies the receivers' samples
    into ``flows.jsonl`` as the run goes; the simulator engine writes that file itself."""

    def __init__(self, inner: Any, feed: RunFeed) -> None:
        self.inner, self.feed = inner, feed
        self.name: str = inner.name
        self._folder: Path | None = None
        self._written: dict[str, int] = {}

    def build(self, plan: Plan, algo: str, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        self._folder = run_dir
        self.feed.attach(run_dir.parent)
        self.inner.build(plan, algo, run_dir)
        # the BMv2 engine writes it; an engine that does not
        if self.name == "bmv2" and read_t0(run_dir) is None:
            write_t0(run_dir, self.inner.t0)

    def start_flow(self, flow: FlowPlan) -> None:
        self.inner.start_flow(flow)

    def start_tcp(self, gen: Any) -> None:
        self.inner.start_tcp(gen)

    def start_cm(self, app: Any) -> None:
        self.inner.start_cm(app)

    def tcp_records(self) -> list[dict[str, Any]]:
        return list(self.inner.tcp_records())

    def tcp_retransmits(self) -> dict[str, list[tuple[float, int]]]:
        return dict(self.inner.tcp_retransmits())

    def set_capacity(self, switch: str, port: int, pps: float | None, bps: float | None) -> None:
        self.inner.set_capacity(switch, port, pps, bps)

    def advance(self, until_s: float) -> None:
        if self.name != "bmv2":
            self.inner.advance(until_s)
            return
        while self.inner.now() < until_s:
            self.inner.advance(min(until_s, self.inner.now() + BMV2_FLOW_POLL_S))
            self._copy_samples()

    def _copy_samples(self) -> None:
        assert self._folder is not None
        lines = []
        for name, samples in self.inner.flow_samples().items():
            for t, n in samples[self._written.get(name, 0) :]:
                lines.append(json.dumps({"t": t, "flow": name, "rx_pkts": n}) + "\n")
            self._written[name] = len(samples)
        with (self._folder / "flows.jsonl").open("a") as f:
            f.writelines(lines)

    def now(self) -> float:
        return float(self.inner.now())

    def port_records(self) -> list[dict[str, Any]]:
        return list(self.inner.port_records())

    def flow_samples(self) -> dict[str, list[tuple[float, int]]]:
        return dict(self.inner.flow_samples())

    def close(self) -> dict[str, Any]:
        return dict(self.inner.close())


def live_engines(
    make: Callable[[], Any], plan: Plan, engine: str, speed: float, paused: bool
) -> tuple[Callable[[], Engine], Dashboard]:
    """The engine factory the driver gets and the dashboard that watches it."""
    feed = RunFeed(plan)
    gate = Gate(speed, paused) if engine == "sim" else None

    def factory() -> Engine:
        inner = make()
        if gate is not None:
            inner.gate = gate
        return Watched(inner, feed)

    return factory, Dashboard(feed, gate, live=True)


def replay(run_dir: Path, host: str, port: int) -> int:
    """Serves a finished (or still growing) run folder until Ctrl-C."""
    plan = plan_of_run(run_dir)
    served = serve(Dashboard(RunFeed(plan, run_dir)), host, port)
    print(f"dashboard: replaying {run_dir}; Ctrl-C stops it", flush=True)
    try:
        served.thread.join()
    except KeyboardInterrupt:
        served.stop()
    return 0
