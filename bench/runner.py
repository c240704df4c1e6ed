"""The bench run: walk the matrix, measure what is not stored yet, store it as it goes.

For each workload and each point of its matrix, the runner picks the rows that need measuring
(missing, incomplete, or measured on code that has changed since, see :mod:`bench.store`) and,
if there are any, the asyncio rows too, so every ratio has a baseline from the same session.
Repetitions are interleaved (all rows once, then all rows again, in a rotating order) so a
burst of load from elsewhere on a shared machine spreads over every row instead of landing on
one. Each point is saved as soon as it is done: an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import datetime
import importlib
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bench import environment
from bench.plan import BASELINE, Point, Row, columns, narrow
from bench.procs import ChildFailed, Cores
from bench.store import ResultStore, row_fingerprint
from bench.summary import summarize

WORKLOADS = ("echo", "sleep", "crawler", "micro")
RESULTS = environment.ROOT / "reports" / "results"


def workload_module(name: str) -> ModuleType:
    return importlib.import_module(f"bench.{name}")


def results_path(results: Path, mode: str, workload: str) -> Path:
    return results / mode / f"{workload}.json"


@dataclass
class Job:
    """The rows to measure at one point, and where to store them."""

    module: ModuleType
    store: ResultStore
    point: Point
    rows: list[Row]


def plan_jobs(
    store: ResultStore,
    module: ModuleType,
    full: bool,
    loop_names: list[str] | None,
    redo: bool,
) -> tuple[list[Job], int]:
    """What to measure for one workload, and how many stored rows are skipped."""
    jobs, skipped = [], 0
    for point in module.points(full):
        rows = narrow(point.rows, loop_names)
        todo = [
            row
            for row in rows
            if redo or store.needs(point, row, row_fingerprint(point.workload, row))
        ]
        skipped += len(rows) - len(todo)
        if todo:
            # The baseline is measured in the same session as the rows compared to it.
            baseline = [r for r in point.rows if r.variant == BASELINE and not r.anchor]
            todo = [*baseline, *(r for r in todo if r not in baseline)]
            jobs.append(Job(module, store, point, todo))
    return jobs, skipped


def measure_point(job: Job, session: str, cores: Cores, full: bool, progress, task) -> None:
    """Every repetition of every row of one point, interleaved; then store them."""
    reps: dict[Row, list[dict]] = {row: [] for row in job.rows}
    failed: set[Row] = set()
    total = job.point.repetitions
    if hasattr(job.module, "prepare"):  # a workload settles a point's settings from data
        job.module.prepare(job.point, job.store)
    for rep in range(total):
        shift = rep % len(job.rows)
        for row in job.rows[shift:] + job.rows[:shift]:
            progress.update(
                task,
                description=f"{job.point.workload} {job.point.key} · {row.label} "
                f"(rep {rep + 1}/{total})",
            )
            if row in failed:
                progress.advance(task)
                continue
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            with tempfile.TemporaryDirectory(prefix="lab-bench-") as workdir:
                try:
                    record = job.module.measure(job.point, row, cores, Path(workdir), full)
                except ChildFailed as error:
                    record = {"error": str(error)}
                    failed.add(row)
                except Exception as error:  # a record the bench cannot read: say so, go on
                    record = {"error": f"{type(error).__name__}: {error}"}
                    failed.add(row)
            record["load_average"] = load  # the machine's 1-minute load as this repetition began
            reps[row].append(record)
            progress.advance(task)
    for row, records in reps.items():
        job.store.put(job.point, row, session, row_fingerprint(job.point.workload, row), records)
    job.store.save()


def console_line(job: Job, row: Row, reps: list[dict]) -> str:
    """One line per measured row: its headline figure, or why it has none."""
    module = job.module
    summary = summarize(reps, module.METRICS)
    if summary.status != "ok":
        return f"  {row.label:<34} {summary.status}: {summary.reason.splitlines()[0][:90]}"
    metric = columns(module, job.point.args)[0]
    stat = summary.stats.get(metric.name)
    if stat is None:
        return f"  {row.label:<34} n/a"
    value = stat.median * metric.scale
    return f"  {row.label:<34} {metric.label}: {value:,.{metric.digits}f}"


def run(
    workloads: list[str],
    full: bool,
    loop_names: list[str] | None,
    redo: bool,
    results: Path = RESULTS,
    console: Console | None = None,
) -> int:
    """Measure what the selection needs; 0 when every selected row has a result stored."""
    console = console or Console(stderr=True)
    mode = "full" if full else "quick"
    env = environment.capture()
    cores = Cores.plan()
    env["pinning"] = cores.describe()
    # Sortable by time, and distinct even for two runs started within the same second.
    session = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    console.print(
        f"[bold]bench[/] {mode} · {env['cpu']} · {len(env['usable_cores'])} cores "
        f"({cores.describe()}) · Python {env['python']} · load average "
        f"{', '.join(f'{x:.2f}' for x in env['load_average'] or [])}"
    )

    jobs: list[Job] = []
    stores: list[ResultStore] = []
    for name in workloads:
        module = workload_module(name)
        missing = module.unavailable() if hasattr(module, "unavailable") else None
        if missing:
            console.print(f"[yellow]skipping {name}[/]: {missing}")
            continue
        path = results_path(results, mode, name)
        store = ResultStore.load(path, name, mode)
        if store.sessions and not store.machine_matches(env):
            console.print(f"{path} was measured on another machine or Python: measuring afresh")
            store = ResultStore.empty(path, name, mode)
        workload_jobs, skipped = plan_jobs(store, module, full, loop_names, redo)
        if skipped:
            console.print(f"{name}: {skipped} stored rows are current, skipped (--redo measures)")
        if workload_jobs:
            store.add_session(session, env, sys.argv)
        jobs += workload_jobs
        stores.append(store)

    total = sum(len(job.rows) * job.point.repetitions for job in jobs)
    if not total:
        console.print("nothing to measure: every selected row is stored and current")
        return 0
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    try:
        with Progress(*columns, console=console, refresh_per_second=2) as progress:
            task = progress.add_task("starting", total=total)
            for job in jobs:
                measure_point(job, session, cores, full, progress, task)
                progress.console.print(f"[bold]{job.point.workload}[/] {job.point.key}")
                for row in job.rows:
                    stored = job.store.stored(job.point, row)
                    progress.console.print(console_line(job, row, stored.reps if stored else []))
    finally:
        # Peers kept across points (the crawler's site server) end with the run.
        for module in {id(job.module): job.module for job in jobs}.values():
            if hasattr(module, "finish"):
                module.finish()
    end_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    for store in stores:
        store.end_session(session, end_load)
    return 0
