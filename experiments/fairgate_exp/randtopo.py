"""Seeded random experiments: 3-8 switches, trees or graphs with cycles, uneven
capacities in both directions (bit/s, so acks cost their size), 2-12 paced flows with
staggered starts, each judged against max-min. ``python -m fairgate_exp random SEED``
writes one as a file."""

from __future__ import annotations

import random
from typing import Any

CAPACITIES_MBPS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
MAX_PORTS = 15


def random_experiment(
    seed: int,
    algorithms: list[str] | None = None,
    duration_s: float = 20.0,
    symmetric_pps: bool = False,
) -> dict[str, Any]:
    """An experiment document (what tomllib would return for the file).
    ``symmetric_pps``: one capacity per link for both directions, in packets/s (BMv2's
    queue unit, where an ack costs a packet), which the BMv2 engine can run (the
    controller's topology file has one capacity per link)."""
    rng = random.Random(seed)
    n = rng.randint(3, 8)
    switches = [f"s{i + 1}" for i in range(n)]
    edges: list[tuple[str, str]] = []
    for i in range(1, n):  # a random tree
        edges.append((switches[rng.randrange(i)], switches[i]))
    shape = "tree"
    if rng.random() < 0.6 and n >= 3:  # and some cycles
        shape = "graph"
        for _ in range(rng.randint(1, max(1, n // 2))):
            a, b = rng.sample(switches, 2)
            if (a, b) not in edges and (b, a) not in edges:
                edges.append((a, b))
    used = {s: 0 for s in switches}
    for a, b in edges:
        used[a] += 1
        used[b] += 1
    links = [
        {
            "a": a,
            "b": b,
            "capacity": f"{rng.choice(CAPACITIES_MBPS):g}Mbit/s",
            "reverse_capacity": f"{rng.choice(CAPACITIES_MBPS):g}Mbit/s",
            "buffer": "64pkt",
        }
        for a, b in edges
    ]
    if symmetric_pps:
        for link in links:
            pps = round(float(link["capacity"].removesuffix("Mbit/s")) * 1e6 / (8 * 1242))
            link["capacity"] = link["reverse_capacity"] = f"{pps}pkt/s"
    hosts: list[dict[str, Any]] = []
    flows: list[dict[str, Any]] = []
    for i in range(rng.randint(2, 12)):
        free = [s for s in switches if used[s] < MAX_PORTS]
        src, dst = rng.choice(free), rng.choice(free)
        while dst == src and len(free) > 1:
            dst = rng.choice(free)
        if src == dst or used[src] >= MAX_PORTS - 1:
            break
        used[src] += 1
        used[dst] += 1
        hosts.append({"name": f"h{i + 1}", "switch": src})
        hosts.append(
            {"name": f"r{i + 1}", "switch": dst, "ack_delay": f"{rng.choice((10, 20, 40))}ms"}
        )
        flows.append(
            {
                "name": f"f{i + 1}",
                "src": f"h{i + 1}",
                "dst": f"r{i + 1}",
                "start": f"{round(rng.uniform(0, 3), 1):g}s",
            }
        )
    return {
        "experiment": {
            "name": f"random-{seed}",
            "title": f"random {shape}: {n} switches, {len(flows)} flows (seed {seed})",
            "duration": f"{duration_s:g}s",
            "warmup": f"{duration_s / 2:g}s",
            "seed": seed,
            "algorithms": algorithms or ["qfcp", "rcp", "lestas"],
        },
        # q_ref in time: 3 packets of 1500 B are 36 ms on a 1 Mbit/s link (10 would be 120 ms,
        # more than the RTTs, and Lestas's senders then see very unequal queueing delays)
        "control": {"q_ref": "3pkt"},
        "switches": switches,
        "hosts": hosts,
        "links": links,
        "flows": flows,
        "expect": [{"metric": "maxmin", "within": "10%"}],
    }
