"""The bench run: walk the matrix, measure what is not stored yet, store it as it goes.

For each workload and each point of its matrix, the runner picks the rows that need measuring
(missing, incomplete, or measured on code that has changed since, see :mod:`bench.store`) and,
if there are any, the asyncio rows too, so every ratio has a baseline from the same session.
Repetitions are interleaved (all rows once, then all rows again, in a rotating order) so a
burst of load from elsewhere on a shared machine spreads over every row instead of landing on
one. Every repetition is saved as soon as it is done: an interrupted run resumes where it
stopped, row by row and repetition by repetition (the asyncio baseline of a resumed point is
measured afresh in the new session, so ratios stay within one session). A row stops early when
its spread allows, and a repetition that overruns the point's time cap is stored as "did not
finish" (see :mod:`bench.summary`). The runner raises its soft open-file limit to the hard
one first, so every server, generator and sleeping loop it starts inherits room for 10 000
connections or idle sockets.
"""

from __future__ import annotations

import datetime
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bench import environment, matrix
from bench.plan import BASELINE, Point, Row, narrow, unavailable_variants
from bench.procs import ChildFailed, Cores, DidNotFinish
from bench.store import RESULTS, ResultStore, results_path, row_fingerprint
from bench.summary import complete, summarize
from bench.workload import Measuring, Workload
from workloads.common import raise_open_file_limit


@dataclass
class Job:
    """The rows to measure at one point, where to store them, and what each row already has."""

    workload: Workload
    measuring: Measuring
    store: ResultStore
    point: Point
    rows: list[Row]
    resumed: dict[Row, list[dict]] | None = None  # stored repetitions a row continues from

    @property
    def headline(self) -> str:
        return self.workload.columns_at(self.point.args)[0].name

    def left(self, row: Row) -> int:
        """Repetitions still to run for a row, at most."""
        done = len((self.resumed or {}).get(row, []))
        return max(0, self.point.repetitions - done)


def plan_jobs(
    store: ResultStore,
    workload: Workload,
    full: bool,
    loop_names: list[str] | None,
    redo: bool,
    where: dict[str, str] | None = None,
) -> tuple[list[Job], int]:
    """What to measure for one workload, and how many stored rows are skipped."""
    jobs, skipped = [], 0
    measuring = workload.measuring()
    for point in workload.points(full):
        if not matches(point, where):
            continue
        headline = workload.columns_at(point.args)[0].name
        rows = narrow(point.rows, loop_names)
        todo = [
            row
            for row in rows
            if redo or store.needs(point, row, row_fingerprint(point.workload, row), headline)
        ]
        skipped += len(rows) - len(todo)
        if todo:
            # The baseline is measured in the same session as the rows compared to it.
            baseline = [r for r in point.rows if r.variant == BASELINE and not r.anchor]
            resumed = {}
            if not redo:
                for row in todo:
                    reps = store.resumable(point, row, row_fingerprint(point.workload, row))
                    if reps and row not in baseline:
                        resumed[row] = list(reps)
            todo = [*baseline, *(r for r in todo if r not in baseline)]
            jobs.append(Job(workload, measuring, store, point, todo, resumed))
    return jobs, skipped


def matches(point: Point, where: dict[str, str] | None) -> bool:
    """True if the point has every parameter value asked for (compared as text)."""
    args = point.args
    return all(name in args and str(args[name]) == value for name, value in (where or {}).items())


def measure_point(job: Job, session: str, cores: Cores, full: bool, progress, task) -> None:
    """Every repetition of every row of one point, interleaved, each stored as it ends."""
    point = job.point
    resumed = job.resumed or {}
    reps: dict[Row, list[dict]] = {row: list(resumed.get(row, [])) for row in job.rows}
    total = point.repetitions
    job.measuring.prepare(point, job.store)  # a workload may settle a point's settings from data

    def done(row: Row) -> bool:
        return complete(reps[row], total, point.min_repetitions, job.headline)

    for rep in range(total):
        shift = rep % len(job.rows)
        for row in job.rows[shift:] + job.rows[:shift]:
            if len(reps[row]) > rep or done(row):
                continue  # resumed past this round, or complete (failed, capped, steady)
            progress.update(
                task,
                description=f"{point.workload} {point.key} · {row.label} "
                f"(rep {len(reps[row]) + 1}/{total})",
            )
            reps[row].append(measure_once(job, row, cores, full, session))
            progress.advance(task)
            if done(row):  # steady after its minimum, or failed: its last rounds are not run
                progress.advance(task, total - len(reps[row]))
            code = row_fingerprint(point.workload, row)
            job.store.put(point, row, session, code, reps[row])
            job.store.save()


def measure_once(job: Job, row: Row, cores: Cores, full: bool, session: str) -> dict:
    """One repetition of one row, as the record to store (an error is a record too)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    with tempfile.TemporaryDirectory(prefix="lab-bench-") as workdir:
        try:
            record = job.measuring.measure(job.point, row, cores, Path(workdir), full)
        except DidNotFinish as error:  # over its cap: the row's result is that it did not finish
            record = {"error": str(error), "did_not_finish_s": error.cap_s}
            record["did_not_finish_kind"] = getattr(error, "kind", "wall")  # CPU or wall time
        except ChildFailed as error:
            record = {"error": str(error)}
        except Exception as error:  # a record the bench cannot read: say so, go on
            record = {"error": f"{type(error).__name__}: {error}"}
    record["load_average"] = load  # the machine's 1-minute load as this repetition began
    record["session"] = session  # a resumed row holds repetitions of more than one session
    return record


def console_line(job: Job, row: Row, reps: list[dict]) -> str:
    """One line per measured row: its headline figure, or why it has none."""
    summary = summarize(reps, job.workload.metrics)
    if summary.status != "ok":
        return f"  {row.label:<34} {summary.status}: {summary.reason.splitlines()[0][:90]}"
    metric = job.workload.columns_at(job.point.args)[0]
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
    where: dict[str, str] | None = None,
) -> int:
    """Measure what the selection needs; 0 when every selected row has a result stored."""
    console = console or Console(stderr=True)
    mode = "full" if full else "quick"
    raise_open_file_limit()  # inherited by every child: room for C10k and 10 000 idle sockets
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
    for name, why in unavailable_variants().items():  # discovery keeps it; the plan has no row
        if not loop_names or name in loop_names:
            console.print(f"[yellow]skipping {name}[/]: {why}")
    jobs: list[Job] = []
    stores: list[ResultStore] = []
    for name in workloads:
        planned = plan_workload(
            matrix.get(name), mode, env, session, console, results, loop_names, redo, where
        )
        if planned is not None:
            jobs += planned[0]
            stores.append(planned[1])
    total = sum(job.left(row) for job in jobs for row in job.rows)
    if not total:
        console.print("nothing to measure: every selected row is stored and current")
        return 0
    try:
        measure_jobs(jobs, session, cores, full, console, total)
    finally:
        # Peers kept across points (the crawler's site server) end with the run.
        for measuring in {id(job.measuring): job.measuring for job in jobs}.values():
            measuring.finish()
    end_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    for store in stores:
        store.end_session(session, end_load)
    return 0


def plan_workload(
    workload: Workload,
    mode: str,
    env: dict,
    session: str,
    console: Console,
    results: Path,
    loop_names: list[str] | None = None,
    redo: bool = False,
    where: dict[str, str] | None = None,
) -> tuple[list[Job], ResultStore] | None:
    """One workload's jobs and its store (None: the workload cannot run in this tree)."""
    missing = workload.unavailable()
    if missing:
        console.print(f"[yellow]skipping {workload.name}[/]: {missing}")
        return None
    path = results_path(results, mode, workload.name)
    store = ResultStore.load(path, workload.name, mode)
    if store.sessions and not store.machine_matches(env):
        console.print(f"{path} was measured on another machine or Python: measuring afresh")
        store = ResultStore.empty(path, workload.name, mode)
    jobs, skipped = plan_jobs(store, workload, mode == "full", loop_names, redo, where)
    if skipped:
        console.print(
            f"{workload.name}: {skipped} stored rows are current, skipped (--redo measures)"
        )
    if jobs:
        store.add_session(session, env, sys.argv)
    return jobs, store


def measure_jobs(
    jobs: list[Job], session: str, cores: Cores, full: bool, console: Console, total: int
) -> None:
    """Every job in turn under one progress bar, each point's rows printed as it ends."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, refresh_per_second=2) as progress:
        task = progress.add_task("starting", total=total)
        for job in jobs:
            measure_point(job, session, cores, full, progress, task)
            progress.console.print(f"[bold]{job.point.workload}[/] {job.point.key}")
            for row in job.rows:
                stored = job.store.stored(job.point, row)
                progress.console.print(console_line(job, row, stored.reps if stored else []))
