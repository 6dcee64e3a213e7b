"""The terminal view of a run (rich): a progress bar per algorithm (simulated or wall
seconds, ETA) with a live line of per-port utilisation, queue and stamped rate, and a
final table of every expectation against what was measured, and the values measured
without a verdict (``[measure]`` metrics)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeRemainingColumn
from rich.table import Table


class LiveView:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed:5.1f}/{task.total:g} s"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[line]}"),
            console=self.console,
        )
        self.tasks: dict[str, TaskID] = {}

    def __enter__(self) -> LiveView:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def say(self, msg: str) -> None:
        self.progress.console.print(msg, markup=False, highlight=False)

    def update(self, algo: str, t: float, end: float, line: str) -> None:
        if algo not in self.tasks:
            self.tasks[algo] = self.progress.add_task(algo, total=end, line="")
        live = line.split("s  ", 1)[-1]
        self.progress.update(self.tasks[algo], completed=min(t, end), line=live)


def verdict_table(summary: dict[str, Any]) -> Table:
    table = Table(title=f"{summary['experiment']} ({summary['engine']}, scale {summary['scale']})")
    algos = summary["algos"]
    table.add_column("expectation")
    for a in algos:
        table.add_column(a, justify="right")
    keys: list[tuple[int, str, str]] = []
    cells: dict[tuple[int, str], str] = {}
    for v in summary["verdicts"]:
        key = (
            v["expect"],
            v["metric"],
            f"{v['expected']} ({v['window_s'][0]:g}-{v['window_s'][1]:g} s)",
        )
        if key not in keys:
            keys.append(key)
        mark = "[green]pass" if v["passed"] else "[red]FAIL"
        cells[(v["expect"], v["algo"])] = f"{mark} {v['measured']}"
    for idx, metric, want in keys:
        table.add_row(f"{metric} {want}", *(cells.get((idx, a), "-") for a in algos))
    measured: dict[tuple[int, str], dict[str, str]] = {}  # [measure] metrics: no verdict
    for m in summary.get("measured", []):
        t0, t1 = m["window_s"]
        key = (m["measure"], f"{m['metric']} measured ({t0:g}-{t1:g} s)")
        measured.setdefault(key, {})[m["algo"]] = str(m["measured"])
    for (_idx, label), by in measured.items():
        table.add_row(label, *(by.get(a, "-") for a in algos))
    return table
