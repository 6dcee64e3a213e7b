"""Bulk transfers sharing one CM macroflow (paper 001, Fig. 9).

Several flows to one destination open CM flows in the same macroflow; the CM's scheduler
splits the macroflow's rate by weight, so the flows share fairly instead of competing.
Reports per-flow throughput every ``--interval`` and Jain's fairness index at the end.

``python -m fairgate_hosts.apps.bulk --dst 10.0.0.2 --flows 3 --duration 10 --log bulk.jsonl``
(with ``python -m fairgate_hosts.receiver`` on the destination).
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from fairgate_hosts.agentio import JsonlLog, StopFlag, monotonic_us
from fairgate_hosts.apps.cm_args import add_cm_arguments, cm_config
from fairgate_hosts.apps.cmhost import CMHost, UdpFlow
from fairgate_p4 import generated as g

BIG_REQUEST = 1 << 40


def jain(xs: list[float]) -> float | None:
    """Jain's fairness index (1 = equal shares); None for no flows or all zero."""
    s, s2 = sum(xs), sum(x * x for x in xs)
    return s * s / (len(xs) * s2) if xs and s2 > 0 else None


@dataclass
class BulkApp:
    log: JsonlLog
    weights: list[float]
    joins_s: list[float]
    interval_s: float
    start_us: int = field(default_factory=monotonic_us)
    flows: list[UdpFlow] = field(default_factory=list)
    joined_us: dict[int, int] = field(default_factory=dict)
    last_bytes: dict[int, int] = field(default_factory=dict)
    next_sample_us: int = 0

    def on_grant(self, host: CMHost, flow: UdpFlow, nbytes: int, now_us: int) -> None:
        host.send(flow, nbytes, now_us)

    def on_rate(self, host: CMHost, flow: UdpFlow, rate_Bps: float, now_us: int) -> None:
        pass

    def on_timer(self, host: CMHost, now_us: int) -> None:
        t = (now_us - self.start_us) / 1e6
        while len(self.flows) < len(self.weights) and t >= self.joins_s[len(self.flows)]:
            flow = host.open(self.weights[len(self.flows)])
            self.flows.append(flow)
            self.log.write({"type": "open", "role": "bulk", "fid": flow.fid, "sport": flow.sport})
            self.joined_us[flow.fid] = now_us
            self.last_bytes[flow.fid] = 0
            host.request(flow, BIG_REQUEST, self)
        if now_us >= self.next_sample_us:
            self.sample(host, now_us)
            self.next_sample_us = now_us + int(self.interval_s * 1e6)

    def sample(self, host: CMHost, now_us: int) -> None:
        per: dict[str, Any] = {}
        for flow in self.flows:
            delta = flow.sent_bytes - self.last_bytes[flow.fid]
            self.last_bytes[flow.fid] = flow.sent_bytes
            per[str(flow.fid)] = {
                "kbps": round(delta * 8 / self.interval_s / 1000, 1),
                "share_kbps": round(flow.rate_Bps * 8 / 1000, 1),
            }
        mf = host.cm.macroflows.get(host.dst)
        self.log.write(
            {
                "type": "sample",
                "t_s": round((now_us - self.start_us) / 1e6, 3),
                "flows": per,
                "macroflow_kbps": round(mf.rate_Bps * 8 / 1000, 1) if mf else None,
                "srtt_ms": round(mf.aimd.srtt_us / 1000, 2) if mf else None,
                "losses": mf.aimd.losses + mf.aimd.timeouts if mf else None,
            }
        )

    def done(self, host: CMHost, now_us: int) -> dict[str, Any]:
        per = {}
        for flow in self.flows:
            secs = max(1e-6, (now_us - self.joined_us[flow.fid]) / 1e6)
            per[str(flow.fid)] = {
                "weight": flow.weight,
                "bytes": flow.sent_bytes,
                "packets": flow.sent_packets,
                "seconds": round(secs, 3),
                "kbps": round(flow.sent_bytes * 8 / secs / 1000, 2),
            }
        norm = [v["kbps"] / v["weight"] for v in per.values()]
        return {
            "type": "done",
            "t_s": round((now_us - self.start_us) / 1e6, 3),
            "flows": per,
            "total_kbps": round(sum(v["kbps"] for v in per.values()), 2),
            "jain_index_per_weight": jain(norm),
            "cm": host.stats(),
        }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fairgate_hosts.apps.bulk",
        description="Bulk UDP transfers sharing one Congestion Manager macroflow (in-process "
        "CM; feedback from the receiver agent's probe responses and the acks' rate field).",
    )
    p.add_argument("--dst", required=True, help="receiver agent's IPv4 address")
    p.add_argument("--port", type=int, default=g.FG_UDP_PORT, help="receiver agent's UDP port")
    p.add_argument("--flows", type=int, default=3, help="number of flows (default 3)")
    p.add_argument("--weights", default=None, help="comma-separated weights (default all 1)")
    p.add_argument("--stagger", type=float, default=0.0, help="flow i joins at i x S seconds")
    p.add_argument("--duration", type=float, default=10.0, help="seconds")
    p.add_argument("--interval", type=float, default=0.5, help="sample interval, s")
    p.add_argument("--no-explicit", action="store_true", help="ignore the acks' rate field")
    add_cm_arguments(p, mss=1200, max_rate_kbps=20_000.0, probing=True)
    p.add_argument("--log", default="-", help="JSONL output (default stdout)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    weights = [float(w) for w in args.weights.split(",")] if args.weights else [1.0] * args.flows
    if len(weights) != args.flows or min(weights) <= 0:
        print("bulk: need --flows positive weights", file=sys.stderr)
        return 2
    cfg = cm_config(args)
    log = JsonlLog(args.log)
    log.write({"type": "agent", "agent": "bulk", "wall_time": time.time(), "args": vars(args)})
    host = CMHost(args.dst, args.port, cfg, explicit=not args.no_explicit)
    app = BulkApp(log, weights, [i * args.stagger for i in range(args.flows)], args.interval)
    stop = StopFlag().install()
    try:
        host.run(app, args.duration, 0.01, stop)
        log.write(app.done(host, monotonic_us()))
    finally:
        host.close_all()
        log.close()
    return 1 if stop.stopped else 0


if __name__ == "__main__":
    raise SystemExit(main())
