"""The bench run: walk the points, measure what is not stored yet, store it as it goes.

For each study and each of its points, the runner picks the rows that need measuring
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

import dataclasses
import datetime
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
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

from bench import length, registry
from bench.fingerprint import fingerprint
from bench.plan import BASELINE, Point, Row, narrow, unavailable_variants
from bench.procs import ChildFailed, Cores, DidNotFinish, subject_on
from bench.store import RESULTS, ResultStore, results_path
from bench.study import Measuring, Study
from bench.summary import complete, counted, known_limit, redo_reason, summarize
from bench.venvs import Interpreter, NoInterpreter, interpreter
from machine import activity
from machine.interpreters import RUNNING
from machine.proc import raise_open_file_limit

# How many times one repetition is measured again when it stalls; the last is kept as measured
# (invalid, with its reason) if every attempt stalled.
REDOS = 3


@dataclass
class Job:
    """The rows to measure at one point, where to store them, and what each row already has."""

    workload: Study
    measuring: Measuring
    store: ResultStore
    point: Point
    rows: list[Row]
    resumed: dict[Row, list[dict]] | None = None  # stored repetitions a row continues from
    python: Interpreter | None = None  # the interpreter its rows run on (None: this one)

    @property
    def headline(self) -> str:
        return self.workload.columns_at(self.point.args)[0].name

    def left(self, row: Row) -> int:
        """Repetitions still to run for a row, at most."""
        done = len((self.resumed or {}).get(row, []))
        return max(0, self.point.rounds(row) - done)


def plan_jobs(
    store: ResultStore,
    workload: Study,
    full: bool,
    loop_names: list[str] | None,
    redo: bool,
    where: dict[str, str] | None = None,
    python: Interpreter | None = None,
    only: Callable[[Point], bool] | None = None,
    rounds: int | None = None,
) -> tuple[list[Job], int]:
    """What to measure for one study (on one interpreter), and how many stored rows are
    skipped; `only`: only the points it holds for (the Interpreters section's, say)."""
    jobs, skipped = [], 0
    measuring = running_side(workload)
    for point in workload.points(full):
        if not matches(point, where) or (only is not None and not only(point)):
            continue
        point = dataclasses.replace(point, rows=tuple(rows_on(point.rows, python)))
        if rounds is not None:  # every row this many times (a reproduction's session)
            point = dataclasses.replace(point, repetitions=rounds, key_repetitions=None)
        headline = workload.columns_at(point.args)[0].name
        rows = narrow(point.rows, loop_names)
        todo = [
            row
            for row in rows
            if redo or store.needs(point, row, fingerprint(workload, row), headline)
        ]
        skipped += len(rows) - len(todo)
        if todo:
            # The baseline is measured in the same session as the rows compared to it.
            baseline = [r for r in point.rows if r.variant == BASELINE and not r.anchor]
            resumed = {}
            if not redo:
                for row in todo:
                    reps = store.resumable(point, row, fingerprint(workload, row))
                    if reps and row not in baseline:
                        resumed[row] = list(reps)
            todo = [*baseline, *(r for r in todo if r not in baseline)]
            jobs.append(Job(workload, measuring, store, point, todo, resumed, python))
    return jobs, skipped


def running_side(workload: Study) -> Measuring:
    """The study's running side: the MEASURING of the module its registration names."""
    return importlib.import_module(workload.running).MEASURING


def rows_on(rows: tuple[Row, ...], python: Interpreter | None) -> list[Row]:
    """A point's rows on one interpreter: without the variants it cannot run, and with those
    only it can (unavailable here), in the styles the point measures."""
    if python is None or python.running:
        return list(rows)
    kept = [
        row
        for row in rows
        if (
            row.variant in python.anchors
            if row.anchor
            else row.style in python.styles.get(row.variant, ())
        )
    ]
    styles = {row.style for row in rows if not row.anchor}
    here_only = unavailable_variants()
    kept += [
        Row(name, style)
        for name, spoken in python.styles.items()
        if name in here_only
        for style in spoken
        if style in styles
    ]
    return kept


def matches(point: Point, where: dict[str, str] | None) -> bool:
    """True if the point has every parameter value asked for (compared as text; "None" asks
    for the parameter absent, as ``tls=None`` selects echo's plain points)."""
    args = point.args
    return all(str(args.get(name)) == value for name, value in (where or {}).items())


def measure_point(group: list[Job], session: str, cores: Cores, full: bool, progress, task) -> None:
    """Every repetition of every row of one point on every interpreter, interleaved (the
    interpreter rotates with the rows), each stored as it ends."""
    point = group[0].point
    units = [(job, row) for job in group for row in job.rows]
    reps = {(id(job), row): list((job.resumed or {}).get(row, [])) for job, row in units}
    # A study may settle a point's settings from data (echo's fixed offered load): once per
    # point, from the first interpreter's store, so every interpreter gets the same settings.
    group[0].measuring.prepare(point, group[0].store)

    def done(job: Job, row: Row) -> bool:
        return complete(reps[id(job), row], point.rounds(row), point.min_repetitions, job.headline)

    # Round by round, so rows compared round by round share their rounds; a row with fewer
    # rounds (not a key row) stops at its own count while the key rows go on.
    for rep in range(max(point.rounds(row) for _, row in units)):
        shift = rep % len(units)
        for job, row in units[shift:] + units[:shift]:
            kept, total = reps[id(job), row], point.rounds(row)
            if rep >= total or len(counted(kept)) > rep or done(job, row):
                continue  # past its rounds, resumed past this one, or complete
            if (stop := stopped_below(job, row)) is not None:
                kept.append({**stop, "session": session})
                job.store.put(point, row, session, fingerprint(job.workload, row), kept)
                job.store.save()
                progress.advance(task, total - rep)
                continue
            for attempt in range(REDOS + 1):
                progress.update(
                    task,
                    description=f"{point.workload} {point.key} · {row.label}{on(job)} "
                    f"(rep {len(counted(kept)) + 1}/{total}"
                    + (", again: it stalled)" if attempt else ")"),
                )
                record = measure_once(job, row, cores, full, session)
                why = redo_reason(record, job.workload.timed(point.args))
                if why and attempt < REDOS:  # kept, with its reason, and never counted
                    record["redone"] = why
                kept.append(record)
                job.store.put(point, row, session, fingerprint(job.workload, row), kept)
                job.store.save()
                if "redone" not in record:
                    break
            progress.advance(task)
            if done(job, row):  # steady after its minimum, or failed: its last rounds not run
                progress.advance(task, total - len(counted(kept)))


# A point's size: a row that did not finish, or met a stated limit, at a smaller size of a point
# otherwise the same is not run at a larger one (threads past the kernel's thread limit, say);
# likewise a row whose climb ended at a lower step of a ladder (climbed_past).
SIZES = ("tasks", "connections")


def stopped_below(job: Job, row: Row) -> dict | None:
    """The record that stopped the row at a smaller size of this point (its current code, this
    store's sessions), marked with where it stopped; None if nothing stopped it."""
    args, code = job.point.args, fingerprint(job.workload, row)
    for name in SIZES:
        if name not in args:
            continue
        for entry in job.store.data["points"].values():
            other = entry["params"]
            if (
                other.keys() != args.keys()
                or other[name] >= args[name]
                or any(other[k] != args[k] for k in args if k != name)
            ):
                continue
            stored = entry["rows"].get(row.key)
            if not stored or stored["code"] != code or not stored["reps"]:
                continue
            first = stored["reps"][0]
            if "error" in first and (
                first.get("did_not_finish_s") is not None or known_limit(first["error"])
            ):
                return {**first, "stopped_at": [name, other[name]]}
    return climbed_past(job, row)


def climbed_past(job: Job, row: Row) -> dict | None:
    """On a study's ladder (``Study.climbs``: latency's offered rate), the record of a
    row whose climb ended at a lower step of this point (its current code, this store):
    not measured, marked with the step and why; None if it goes on."""
    name, args = job.workload.climbs, job.point.args
    if name is None or name not in args:
        return None
    code = fingerprint(job.workload, row)
    below = sorted(
        (entry["params"][name], entry)
        for entry in job.store.data["points"].values()
        if entry["params"].keys() == args.keys()
        and entry["params"][name] < args[name]
        and all(entry["params"][k] == args[k] for k in args if k != name)
    )
    for value, entry in below:
        stored = entry["rows"].get(row.key)
        if not stored or stored["code"] != code or not stored["reps"]:
            continue
        why = job.workload.climb_ends(stored["reps"])
        if why is not None:
            error = f"not measured: its climb ended at {value:,} {name} ({why})"
            return {"error": error, "stopped_at": [name, value]}
    return None


def on(job: Job) -> str:
    """ " on Python 3.13" when the job's rows run on an interpreter other than this one."""
    return "" if job.python is None or job.python.running else f" on Python {job.python.version}"


def measure_once(job: Job, row: Row, cores: Cores, full: bool, session: str) -> dict:
    """One repetition of one row, as the record to store (an error is a record too)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    before = activity.read()
    with tempfile.TemporaryDirectory(prefix="lab-bench-") as workdir:
        try:
            with subject_on(job.python.executable if job.python else sys.executable):
                record = job.measuring.measure(job.point, row, cores, Path(workdir), full)
        except DidNotFinish as error:  # over its cap: the row's result is that it did not finish
            record = {"error": str(error), "did_not_finish_s": error.cap_s}
            record["did_not_finish_kind"] = getattr(error, "kind", "wall")  # CPU or wall time
            record["point_cap_s"] = job.point.cap_s  # under another cap, measured again
        except ChildFailed as error:
            record = {"error": str(error)}
        except Exception as error:  # a record the bench cannot read: say so, go on
            record = {"error": f"{type(error).__name__}: {error}"}
    record["load_average"] = load  # the machine's 1-minute load as this repetition began
    # When it ran and what else the machine did meanwhile (pressure, steal, others' CPU).
    record |= activity.window(before, activity.read())
    record["session"] = session  # a resumed row holds repetitions of more than one session
    return record


def console_line(job: Job, row: Row, reps: list[dict]) -> str:
    """One line per measured row: its headline figure, or why it has none."""
    summary = summarize(reps, job.workload.metrics)
    if summary.status != "ok":
        climbed = summary.status == "failed" and reps and reps[0].get("stopped_at")
        status = "past its climb" if climbed else summary.status  # a ladder's, not a failure
        return f"  {row.label:<34} {status}: {summary.reason.splitlines()[0][:90]}"
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
    pythons: list[str] | None = None,
    only: Callable[[Point], bool] | None = None,
    rounds: int | None = None,
) -> int:
    """Measure what the selection needs on each interpreter asked for (by default this one);
    0 when every selected row has a result stored, 2 when an interpreter cannot be had.
    `rounds`: every row this many times, whatever its points declare (a reproduction)."""
    console = console or Console(stderr=True)
    mode = "full" if full else "quick"
    raise_open_file_limit()  # inherited by every child: room for C10k and 10 000 idle sockets
    cores = Cores.plan()
    try:
        targets = [interpreter(spec, console.print) for spec in dict.fromkeys(pythons or [""])]
    except NoInterpreter as error:
        console.print(f"[red]{error}[/]")
        return 2
    # Sortable by time, and distinct even for two runs started within the same second.
    session = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    console.print(header(mode, cores, targets))
    jobs: list[Job] = []
    stores: list[ResultStore] = []
    for python in targets:
        for name, why in python.unavailable.items():  # discovery keeps it; the plan has no row
            if not loop_names or name in loop_names:
                console.print(f"[yellow]skipping {name}[/] on Python {python.version}: {why}")
        # What the rows ran on, and what could not run there (the report says so).
        env = {**python.environment, "pinning": cores.describe(), "unavailable": python.unavailable}
        for name in workloads:
            planned = plan_workload(
                registry.get(name), mode, env, session, console, results, loop_names, redo, where,
                python, only, rounds,
            )  # fmt: skip
            if planned is not None:
                jobs += planned[0]
                stores.append(planned[1])
    total = sum(job.left(row) for job in jobs for row in job.rows)
    if not total:
        console.print("nothing to measure: every selected row is stored and current")
        return 0
    timed_run(jobs, stores, session, cores, full, console, total)
    return 0


def timed_run(
    jobs: list[Job],
    stores: list[ResultStore],
    session: str,
    cores: Cores,
    full: bool,
    console: Console,
    total: int,
) -> None:
    """Measure the jobs, saying first how long that should take (bench.length) and last how
    long it took; each store's session records both, and the load at its end."""
    expected = length.estimate(
        (job.store.path, job.point.key, sum(job.left(row) for row in job.rows)) for job in jobs
    )
    console.print(f"{total} repetitions to run: {length.said(*expected)}, by the last runs' pace")
    started = time.monotonic()
    try:
        measure_jobs(jobs, session, cores, full, console, total)
    finally:
        # Peers kept across points (the crawler's site server) end with the run.
        for measuring in {id(job.measuring): job.measuring for job in jobs}.values():
            measuring.finish()
    took = time.monotonic() - started
    console.print(f"measured in {length.said(took)} (estimated {length.said(expected[0])})")
    end_load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    for store in stores:
        store.sessions.get(session, {}).update(estimated_s=round(expected[0]), took_s=round(took))
        store.end_session(session, end_load)


def header(mode: str, cores: Cores, targets: list[Interpreter]) -> str:
    """The run's first line: what it measures on, and how busy the machine is."""
    env = targets[0].environment
    return (
        f"[bold]bench[/] {mode} · {env['cpu']} · {len(env['usable_cores'])} cores "
        f"({cores.describe()}) · Python {', '.join(t.environment['python'] for t in targets)}"
        f" · load average {', '.join(f'{x:.2f}' for x in env['load_average'] or [])}"
    )


def plan_workload(
    workload: Study,
    mode: str,
    env: dict,
    session: str,
    console: Console,
    results: Path,
    loop_names: list[str] | None = None,
    redo: bool = False,
    where: dict[str, str] | None = None,
    python: Interpreter | None = None,
    only: Callable[[Point], bool] | None = None,
    rounds: int | None = None,
) -> tuple[list[Job], ResultStore] | None:
    """One study's jobs and its store on one interpreter (None: the study cannot run in
    this tree)."""
    missing = workload.unavailable()
    if missing:
        console.print(f"[yellow]skipping {workload.name}[/]: {missing}")
        return None
    version = python.version if python else RUNNING
    path = results_path(results, mode, workload.name, version)
    store = ResultStore.load(path, workload.name, mode, workload.kept)
    if store.sessions and not store.machine_matches(env):
        console.print(f"{path} was measured on another machine or Python: measuring afresh")
        store = ResultStore.empty(path, workload.name, mode, workload.kept)
    jobs, skipped = plan_jobs(
        store, workload, mode == "full", loop_names, redo, where, python, only, rounds
    )
    if skipped:
        console.print(
            f"{workload.name} on Python {version}: {skipped} stored rows are current, skipped "
            "(--redo measures)"
        )
    if jobs:
        store.add_session(session, env, sys.argv)
    return jobs, store


def measure_jobs(
    jobs: list[Job], session: str, cores: Cores, full: bool, console: Console, total: int
) -> None:
    """Every point in turn under one progress bar, its rows on every interpreter interleaved,
    each point's rows printed as it ends."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    groups: dict[tuple[str, Point], list[Job]] = {}
    for job in jobs:  # one point's jobs on every interpreter measure together
        groups.setdefault((job.point.workload, job.point), []).append(job)
    with Progress(*columns, console=console, refresh_per_second=2) as progress:
        task = progress.add_task("starting", total=total)
        for group in groups.values():
            measure_point(group, session, cores, full, progress, task)
            progress.console.print(f"[bold]{group[0].point.workload}[/] {group[0].point.key}")
            for job in group:
                for row in job.rows:
                    stored = job.store.stored(job.point, row)
                    line = console_line(job, row, stored.reps if stored else [])
                    progress.console.print(line + on(job))
