"""One figure per run: per algorithm, flow rates (max-min shares dashed) and queues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fairgate_exp import units
from fairgate_exp.oracle import maxmin_pps
from fairgate_exp.plan import Plan


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


#: flow-rate panels label their lines only up to this many flows
MAX_LEGEND = 12


def _save(plt: Any, fig: Any, out: Path) -> list[Path]:
    """Lay out, write ``out`` (90 dpi) and free the figure."""
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return [out]


def plot_run(
    run_dir: Path, plan: Plan, flows: list[dict[str, Any]], ports: list[dict[str, Any]]
) -> list[Path]:
    plt = _pyplot()

    algos = (
        list(dict.fromkeys(r["algo"] for r in flows))
        or list(dict.fromkeys(r["algo"] for r in ports))
        or plan.algorithms
    )
    fig, axes = plt.subplots(2, len(algos), figsize=(5 * len(algos), 6), squeeze=False)
    oracle = maxmin_pps(plan, plan.flows + plan.tcp_flows)
    targets = sorted({float(units.parse_packets(e.target)) for e in plan.file.expect if e.target})
    for j, algo in enumerate(algos):
        ax = axes[0][j]
        for f in plan.flows + plan.tcp_flows:
            pts = [
                (r["t"], r["rate_pps"]) for r in flows if r["algo"] == algo and r["flow"] == f.name
            ]
            if pts:
                line = ax.plot(*zip(*pts, strict=True), label=f.name)[0]
                ax.axhline(oracle[f.name], ls="--", lw=0.8, color=line.get_color())
        ax.set_title(f"{plan.name} [{algo}]")
        ax.set_ylabel("flow rate (pkt/s); max-min dashed")
        # a legend of more entries buries the axes (cm-feedback's 115 on/off CBR periods)
        if 0 < len(ax.get_legend_handles_labels()[0]) <= MAX_LEGEND:
            ax.legend(fontsize=7)
        ax = axes[1][j]
        for lab in dict.fromkeys(r["port"] for r in ports if r["algo"] == algo):
            pts = [
                (r["t"], r["queue_pkts"]) for r in ports if r["algo"] == algo and r["port"] == lab
            ]
            ax.plot(*zip(*pts, strict=True), label=lab)
        for q in targets:
            ax.axhline(q, color="g", ls="--", lw=1, label=f"target {q:g} pkt")
        ax.set_xlabel("time (s)")
        ax.set_ylabel("queue (pkt)")
        ax.legend(fontsize=7)
    return _save(plt, fig, run_dir / f"{plan.name}.png")


def plot_tcp(run_dir: Path, plan: Plan, tcp: list[dict[str, Any]]) -> list[Path]:
    """Completed TCP flows per second over time (by completion time), one line per run."""
    plt = _pyplot()

    fig, ax = plt.subplots(figsize=(7, 3.5))
    for label in dict.fromkeys(r["algo"] for r in tcp):
        bins: dict[int, int] = {}
        for r in tcp:
            if r["algo"] == label and r["outcome"] == "completed" and r["fct_s"] is not None:
                b = int(r["scheduled_s"] + r["fct_s"])
                bins[b] = bins.get(b, 0) + 1
        if bins:
            xs = list(range(max(bins) + 1))
            ax.plot([x + 0.5 for x in xs], [bins.get(x, 0) for x in xs], label=label)
    ax.set_title(f"{plan.name}: TCP completions")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("completed flows/s")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    return _save(plt, fig, run_dir / f"{plan.name}-tcp.png")


def plot_bulk(run_dir: Path, plan: Plan, per_algo: dict[str, Any]) -> list[Path]:
    """Bulk TCP flows after warm-up, per run: goodput over the max-min share (Jain in the
    legend) and retransmissions, one bar per flow labelled with its base RTT."""
    plt = _pyplot()

    runs = {a: r for a, r in per_algo.items() if "tcp_flows" in r}
    if not runs:
        return []
    names = [f.name for f in plan.tcp_flows]
    fig, (ax_g, ax_r) = plt.subplots(2, 1, figsize=(max(7, 0.8 * len(names)), 6), sharex=True)
    width = 0.8 / len(runs)
    for k, (algo, res) in enumerate(runs.items()):
        xs = [i + k * width for i in range(len(names))]
        flows, tf = res["flows"], res["tcp_flows"]
        share = [
            (flows[n]["mean_pps"] or 0) / flows[n]["maxmin_pps"]
            if n in flows and flows[n]["maxmin_pps"]
            else 0.0
            for n in names
        ]
        ax_g.bar(xs, share, width, label=f"{algo} (Jain {tf['jain']:.3f})")
        per = tf["retrans_per_flow"]
        retrans = [per.get(n, {}).get("after_warmup", 0) for n in names]
        ax_r.bar(xs, retrans, width, label=f"{algo} ({tf['retrans_after_warmup']} after warm-up)")
    rtt = next(iter(runs.values()))["tcp_flows"].get("base_rtt_ms", {})
    ax_r.set_xticks(
        [i + 0.4 - width / 2 for i in range(len(names))],
        [f"{n}\n{rtt[n]:g} ms" if n in rtt else n for n in names],
    )
    ax_g.axhline(1.0, color="k", ls=":", lw=1)
    ax_g.set_title(f"{plan.name}: goodput after warm-up / max-min share")
    ax_g.set_ylabel("goodput / share")
    ax_g.legend(fontsize=8)
    ax_r.set_ylabel("retransmissions after warm-up")
    ax_r.set_xlabel("flow (base RTT)")
    ax_r.legend(fontsize=8)
    return _save(plt, fig, run_dir / f"{plan.name}-goodput.png")


def plot_traces(
    run_dir: Path, plan: Plan, traces: list[dict[str, Any]], ports: list[dict[str, Any]]
) -> list[Path]:
    """``measure.traces``: per run, the flows' sequence traces (packets delivered over
    time, x at each new loss event), their rates over 1 s and the measured ports' loss
    events per period (the CM papers' Figs. 2, 6, 9 are sequence traces)."""
    plt = _pyplot()

    algos = list(dict.fromkeys(r["algo"] for r in traces))
    fig, axes = plt.subplots(3, len(algos), figsize=(6 * len(algos), 9), squeeze=False)
    for j, algo in enumerate(algos):
        ax_s, ax_r, ax_d = axes[0][j], axes[1][j], axes[2][j]
        for name in dict.fromkeys(r["flow"] for r in traces if r["algo"] == algo):
            rs = [r for r in traces if r["algo"] == algo and r["flow"] == name]
            line = ax_s.plot([r["t"] for r in rs], [r["seq_pkts"] for r in rs], label=name)[0]
            lost = [r for a, r in zip(rs, rs[1:], strict=False) if r["losses"] > a["losses"]]
            ax_s.plot(
                [r["t"] for r in lost],
                [r["seq_pkts"] for r in lost],
                "x",
                ms=4,
                color=line.get_color(),
            )
            pts = [(r["t"], r["rate_pps"]) for r in rs if r["rate_pps"] is not None]
            k = max(1, round(1.0 / plan.sample_s))
            smooth = [
                (
                    pts[i][0],
                    sum(v for _t, v in pts[max(0, i - k + 1) : i + 1])
                    / len(pts[max(0, i - k + 1) : i + 1]),
                )
                for i in range(len(pts))
            ]
            if smooth:
                ax_r.plot(*zip(*smooth, strict=True), label=name, color=line.get_color())
        ax_s.set_title(f"{plan.name} [{algo}]: sequence traces (x: loss events)")
        ax_s.set_ylabel("packets delivered")
        ax_s.legend(fontsize=7)
        ax_r.set_ylabel("rate (pkt/s, 1 s mean)")
        for lab in dict.fromkeys(r["port"] for r in ports if r["algo"] == algo):
            rs = [r for r in ports if r["algo"] == algo and r["port"] == lab]
            drops = [
                r["queue_drops"] if r.get("queue_drops") is not None else r["drops"] for r in rs
            ]
            ax_d.plot([r["t"] for r in rs], drops, label=lab, lw=0.8)
        ax_d.set_ylabel("drops per period")
        ax_d.set_xlabel("time (s)")
        if ax_d.get_legend_handles_labels()[0]:
            ax_d.legend(fontsize=7)
    return _save(plt, fig, run_dir / f"{plan.name}-traces.png")


def plot_losses(run_dir: Path, plan: Plan, per_algo: dict[str, Any]) -> list[Path]:
    """Loss rate (drops over arrivals, after warm-up) of each measured port, labelled with
    the CM apps whose receiver it serves (the CM paper's Fig. 4: loss vs feedback
    frequency; Fig. 6: aging's half-life), when the run has CM apps and several ports."""
    plt = _pyplot()

    if not plan.cm or len(plan.measured) < 2:
        return []
    labels = [plan.ports[k].label for k in plan.measured]
    names = {}
    for lab in labels:
        apps = [
            f"{a.name} ({a.probes_per_rtt:g}/RTT, aging {a.aging})"
            for a in plan.cm
            if lab.endswith("->" + a.dst)
        ]
        names[lab] = "\n".join([lab, *apps])
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(labels)), 4))
    width = 0.8 / max(1, len(per_algo))
    for k, (algo, res) in enumerate(per_algo.items()):
        vals = [(res.get("ports", {}).get(lab) or {}).get("loss_rate") or 0.0 for lab in labels]
        ax.bar([i + k * width for i in range(len(labels))], vals, width, label=algo)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(labels))], [names[x] for x in labels])
    ax.tick_params(axis="x", labelsize=7)
    ax.set_ylabel("loss rate after warm-up")
    ax.set_title(f"{plan.name}: loss rate per bottleneck")
    ax.legend(fontsize=8)
    return _save(plt, fig, run_dir / f"{plan.name}-loss.png")
