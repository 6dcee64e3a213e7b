"""Time series the newer scenarios share: sender-log fields, per-phase
windows of port records, drop accounting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_topo.scenarios.common import read_jsonl, rx_series


def sender_series(run_dir: Path, t0: float, name: str, key: str) -> list[list[float]]:
    """[t_s, value] of one field (e.g. ``cwnd``) of the sender log ``tx-<name>``."""
    recs = read_jsonl(run_dir / "hosts" / f"tx-{name}.jsonl")
    agent = next((r for r in recs if r.get("type") == "agent"), None)
    if agent is None:
        return []
    base = agent["wall_time"] - t0
    return [
        [round(base + r["t_us"] / 1e6, 3), float(r[key])]
        for r in recs
        if r.get("type") == "sample" and r.get(key) is not None
    ]


def in_window(port: dict[str, Any], column: str, t_from: float, t_to: float) -> list[float]:
    return [v for t, v in zip(port["t"], port[column], strict=True) if t_from <= t < t_to]


def mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def losses_between(run_dir: Path, t0: float, names: list[str], t_from: float, t_to: float) -> int:
    """Packets the senders `names` found lost (gap or timeout) in [t_from, t_to):
    the drops, counted end to end. (The controller's ``drop_pkts`` is
    arrivals - departures per period, so it also counts queue growth.)"""
    total = 0
    for name in names:
        s = sender_series(run_dir, t0, name, "losses")
        before = [v for t, v in s if t < t_from]
        upto = [v for t, v in s if t < t_to]
        if upto:
            total += int(upto[-1] - (before[-1] if before else 0))
    return total


def stack(series: dict[str, list[list[float]]]) -> list[list[float]]:
    """Sum of several [t, v] series on a 0.2 s grid (aggregate rate)."""
    bins: dict[int, float] = {}
    for s in series.values():
        for t, v in s:
            k = int(t / 0.2)
            bins[k] = bins.get(k, 0.0) + v
    return [[round(k * 0.2, 3), round(v, 2)] for k, v in sorted(bins.items())]


def peer_series(run_dir: Path, t0: float) -> dict[str, list[list[float]]]:
    """From the receivers' logs, [t_s, pkt/s] per 0.2 s interval keyed by the
    sender's ``ip:port`` (one key per flow, also when a host runs several)."""
    return rx_series(run_dir, t0)


def by_host(peers: dict[str, list[list[float]]], host_ip: str) -> list[list[list[float]]]:
    """The flows of one sender host, in the order they started."""
    flows = [s for peer, s in peers.items() if peer.rsplit(":", 1)[0] == host_ip and s]
    return sorted(flows, key=lambda s: s[0][0])


def merge(flows: list[list[list[float]]]) -> list[list[float]]:
    return sorted((p for s in flows for p in s), key=lambda p: p[0])


def port_drops(
    records: list[dict[str, Any]], switch: str, port: int, t0: float, t_from: float
) -> int:
    """Packets dropped by one port's queue from `t_from` to the end of the run
    (the queue is empty then): arrivals - departures summed over the periods,
    plus what was queued at `t_from`. Exact where the controller's per-period
    ``drop_pkts`` (max(0, arrivals - departures)) also counts queue growth."""
    rs = [r for r in records if r["switch"] == switch and r["port"] == port]
    after = [r for r in rs if r["t"] - t0 >= t_from]
    before = [r for r in rs if r["t"] - t0 < t_from]
    total = max(0, sum(r["arrival_pkts"] - r["departure_pkts"] for r in rs))
    if not before:
        return total  # exact: the queue is empty at both ends of the run
    # the queue at `t_from` is known only as a period mean: estimate, bounded by
    # the exact total (drops are never negative, so those after <= all of them)
    queued = before[-1]["queue_mean_bytes"] / 1242
    net = sum(r["arrival_pkts"] - r["departure_pkts"] for r in after)
    return min(total, max(0, round(net + queued)))
