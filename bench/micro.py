"""Micro benchmarks: the cost of a loop's basic operations, in nanoseconds per operation.

Four operations, each written once per style so that the same program runs on every loop:

- ``switch``: one trip through the loop. Tasks: two tasks taking turns with ``sleep(0)``.
  Callbacks: a callback that schedules the next with ``call_soon`` (one loop iteration each).
- ``call_soon``: schedule a callback and run it, in batches of 1 000 per iteration (callbacks).
- ``spawn_join``: start a task that returns at once and wait for it (tasks).
- ``timer``: schedule a timer and cancel it before it fires. Callbacks: ``call_later`` +
  ``cancel()``. Tasks: ``timeout_after`` around work that ends at once, the tasks' way to arm
  and disarm a deadline.

An operation a style has no notion of is not measured (shown as "n/a").

Two harnesses run the same programs. The bench measures with **pyperf**
(:mod:`bench.pyperf_micro`), the harness CPython's own benchmarks use: calibration, fresh worker
processes, stability warnings, which the report prints. The full run also keeps the lab's own
harness below, on the same operations, so the two can be read side by side.

The lab's own harness, in the spirit of pyperf: each repetition is a fresh process (``python -m
bench.micro``) pinned to one core; in it each operation is calibrated (the count doubles until
one timed run takes at least ``--min-time`` seconds), run once more as warm-up, then timed
``--runs`` times; the process reports the median of its runs. The bench takes the median of
the processes and keeps their min and max. Timing uses ``perf_counter_ns`` inside the running
loop, so loop creation and interpreter start-up are not part of an operation's cost.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path

from bench.plan import Metric, Point, variant_rows
from bench.summary import summarize

NAME = "micro"
BATCH = 1000  # call_soon batch size: one loop iteration runs this many callbacks
LONG_DELAY = 3600.0  # timers armed in the benchmarks never come due
OPERATION_LIMIT = 20  # seconds one operation's whole measurement may take before it is failed

OPERATIONS = {
    "switch": ("callbacks", "generators", "coroutines"),
    "call_soon": ("callbacks",),
    "spawn_join": ("generators", "coroutines"),
    "timer": ("callbacks", "generators", "coroutines"),
}

METRICS = tuple(Metric(op, f"{op} (ns/op)", higher_is_better=False, digits=0) for op in OPERATIONS)
HEADLINE = "switch"
TITLE = "Micro"
DESCRIPTION = """\
The cost of a loop's basic operations, in nanoseconds per operation (lower is better), each
written once per style and timed by pyperf: **switch**, one trip through the loop (two tasks
taking turns with `sleep(0)`, or a callback scheduling the next with `call_soon`);
**call_soon**, schedule and run a callback, 1 000 per iteration (callbacks); **spawn_join**,
start a task that returns at once and wait for it (tasks); **timer**, arm a timer and cancel it
before it fires (`call_later` + `cancel()`, or `timeout_after` around work that ends at once).
pyperf, the harness of CPython's own benchmarks, calibrates each operation to values of at
least 100 ms, runs them in fresh worker processes (20 × 3 values in the full run, 6 × 3 in the
quick one, each after a warm-up; pinned to one core) and reports the median with its stability
warnings. The full run also measures with the lab's own harness (a fresh process per
repetition, calibrated, warmed up, timed seven times, its median) on the same programs, side by
side. "n/a": the style has no such operation.
"""


# pyperf's worker processes and values per process: its defaults in the full run (20 × 3
# after a warm-up each), fewer in the quick one; one bench repetition, since pyperf repeats
# in its own fresh processes.
PYPERF = {False: {"processes": 6, "values": 3}, True: {"processes": 20, "values": 3}}
PYPERF_CAP_S = 600.0


def point_title(params: dict) -> str:
    if params.get("harness") == "pyperf":
        return (
            f"Nanoseconds per operation, pyperf ({params['processes']} worker processes × "
            f"{params['values']} values, calibrated)"
        )
    return "Nanoseconds per operation, the lab's own harness (side by side with pyperf)"


def points(full: bool) -> list[Point]:
    """pyperf's point, and in the full run the lab harness's beside it on the same operations."""
    rows = tuple(variant_rows())
    config = PYPERF[full]
    pyperf_params = (
        ("harness", "pyperf"),
        ("processes", config["processes"]),
        ("values", config["values"]),
    )
    found = [Point(NAME, pyperf_params, rows, 1, cap_s=PYPERF_CAP_S)]
    if full:
        lab = settings(full)
        params = (("min_time_s", lab["min_time"]), ("runs", lab["runs"]))
        found.append(Point(NAME, params, rows, 5, min_repetitions=3, cap_s=300.0))
    return found


def detail_column(params: dict) -> str | None:
    """Under pyperf, a column with its standard deviation per operation (its own spread)."""
    return "pyperf std dev (% of mean)" if params.get("harness") == "pyperf" else None


def detail(reps: list[dict]) -> str:
    """pyperf's standard deviation per operation, from the one repetition that holds them."""
    spreads = next((rep["stdev_pct"] for rep in reps if rep.get("stdev_pct")), {})
    return ", ".join(f"{op} {pct:.1f}" for op, pct in spreads.items()) or "—"


# pyperf's standard deviation (% of the mean) under which its figure is taken as steady: the
# pairs compared to tell the harnesses apart, not the machine's noise.
STEADY_PCT = 6.0


def section_end(stored_points: dict) -> list[str]:
    """Both harnesses side by side, per row and operation: what keeping the lab's shows.

    Full run only (the quick one has pyperf alone). Each pair is one operation of one row, both
    figures from the same session; the summary sentence separates the pairs pyperf found
    steady from the rest, so a disagreement can be read as the harness's or the machine's.
    """
    by_harness = {}
    for point in stored_points.values():
        by_harness["pyperf" if point["params"].get("harness") == "pyperf" else "lab"] = point
    if len(by_harness) < 2:
        return []
    pyperf, lab = by_harness["pyperf"], by_harness["lab"]
    lines = [
        "### The two harnesses side by side",
        "",
        "The same programs and operations, pyperf's figure against the lab harness's median, "
        "row by row (ns per operation). A ratio near 1 where pyperf's standard deviation is "
        f'small (under {STEADY_PCT:g}%, "steady") says the harnesses agree; a ratio far from 1 '
        "with a large standard deviation is the shared machine's noise in one of them.",
        "",
        "| variant · style | operation | pyperf (std dev) | lab harness median [min–max] "
        "| lab / pyperf |",
        "|---|---|--:|--:|--:|",
    ]
    steady, noisy = [], []
    for key, entry in pyperf["rows"].items():
        figures = next((rep for rep in entry["reps"] if rep.get("stdev_pct")), None)
        beside = lab["rows"].get(key)
        if figures is None or beside is None:
            continue
        label = f"{entry['variant']} · {entry['style']}"
        stats = summarize(beside["reps"], METRICS).stats
        for op in OPERATIONS:
            if figures.get(op) is None or op not in stats:
                continue
            spread, ratio = figures["stdev_pct"].get(op), stats[op].median / figures[op]
            (steady if spread is not None and spread < STEADY_PCT else noisy).append(ratio)
            lines.append(
                f"| {label} | {op} | {figures[op]:,.0f} ({spread:.1f}%) | "
                f"{stats[op].median:,.0f} [{stats[op].low:,.0f}–{stats[op].high:,.0f}] | "
                f"{ratio:.2f} |"
            )
    if not steady and not noisy:
        return []
    said = []
    for name, ratios in (("steady", steady), ("noisier", noisy)):
        if ratios:
            said.append(
                f"on the {len(ratios)} {name} pairs lab / pyperf runs from {min(ratios):.2f} "
                f"to {max(ratios):.2f} (median {statistics.median(ratios):.2f})"
            )
    lines += [
        "",
        f"*What this shows:* {'; '.join(said)}. pyperf is the headline; the lab harness is "
        "kept beside it as a second, independent figure taken minutes apart, which is what "
        "makes a pyperf stability warning readable.",
        "",
    ]
    return lines


def observations(params: dict, rows: list) -> list[str]:
    """Per operation other than the headline: the cheapest row and its ratio to asyncio.

    Under pyperf, also which rows pyperf warned about (its stability checks).
    """
    sentences = []
    warned = sorted(
        {f"{r.label} ({', '.join(sorted(r.summary.warned))})" for r in rows if r.summary.warned}
    )
    if warned:
        sentences.append(
            "pyperf warned that these may be unstable (standard deviation ≥ 10% of the mean, "
            f"outliers or too few samples; the shared machine): {'; '.join(warned)}."
        )
    for metric in METRICS:
        if metric.name == HEADLINE:
            continue
        measured = [r for r in rows if r.summary.status == "ok" and metric.name in r.summary.stats]
        if measured:
            best = min(measured, key=lambda r: r.summary.stats[metric.name].median)
            share = best.ratio(metric)
            ratio_text = f", ×{share:.2f} asyncio" if share is not None else ""
            sentences.append(
                f"Cheapest {metric.name}: {best.label} "
                f"({best.summary.stats[metric.name].median:,.0f} ns{ratio_text})."
            )
    return sentences


def settings(full: bool) -> dict[str, float]:
    return {"min_time": 0.1 if full else 0.03, "runs": 7 if full else 5}


# -- the operations, per style: each returns elapsed nanoseconds for n operations -------------


def _callbacks_program(loop, op: str, n: int) -> int:
    """Run one timed callbacks-style program of n operations on a fresh loop."""
    clock = time.perf_counter_ns
    times: list[int] = []
    remaining = [n]

    def noop() -> None:
        pass

    def hop() -> None:
        remaining[0] -= 1
        if remaining[0]:
            loop.call_soon(hop)
        else:
            finish()

    def batch() -> None:
        count = min(BATCH, remaining[0])
        remaining[0] -= count
        for _ in range(count):
            loop.call_soon(noop)
        loop.call_soon(batch if remaining[0] else finish)

    def timers() -> None:
        for _ in range(n):
            loop.call_later(LONG_DELAY, noop).cancel()
        loop.call_soon(finish)

    def start() -> None:
        times.append(clock())
        {"switch": hop, "call_soon": batch, "timer": timers}[op]()

    def finish() -> None:
        times.append(clock())
        loop.stop()

    loop.call_soon(start)
    loop.run_forever()
    return times[1] - times[0]


async def _co_nothing() -> None:
    return None


async def _co_turns(api, count: int) -> None:
    for _ in range(count):
        await api.sleep(0)


async def _coroutines_program(api, op: str, n: int) -> int:
    clock = time.perf_counter_ns
    start = clock()
    if op == "switch":
        first = await api.spawn(_co_turns(api, n // 2))
        second = await api.spawn(_co_turns(api, n - n // 2))
        await api.join(first)
        await api.join(second)
    elif op == "spawn_join":
        for _ in range(n):
            await api.join(await api.spawn(_co_nothing()))
    elif op == "timer":
        for _ in range(n):
            await api.timeout_after(LONG_DELAY, _co_nothing())
    return clock() - start


def _gen_nothing():
    return None
    yield  # a generator function that returns at once


def _gen_turns(api, count: int):
    for _ in range(count):
        yield from api.sleep(0)


def _generators_program(api, op: str, n: int):
    clock = time.perf_counter_ns
    start = clock()
    if op == "switch":
        first = yield from api.spawn(_gen_turns(api, n // 2))
        second = yield from api.spawn(_gen_turns(api, n - n // 2))
        yield from api.join(first)
        yield from api.join(second)
    elif op == "spawn_join":
        for _ in range(n):
            yield from api.join((yield from api.spawn(_gen_nothing())))
    elif op == "timer":
        for _ in range(n):
            yield from api.timeout_after(LONG_DELAY, _gen_nothing())
    return clock() - start


def timed_run(variant, style: str, op: str, n: int) -> int:
    """Nanoseconds for n operations of `op` in `style` on a fresh loop of `variant`."""
    entry = variant.api(style)
    if style == "callbacks":
        loop = entry()
        try:
            return _callbacks_program(loop, op, n)
        finally:
            loop.close()
    program = _coroutines_program if style == "coroutines" else _generators_program
    return entry.run(program(entry, op, n))


class OperationHung(Exception):
    """Raised by SIGALRM when one operation's measurement takes far longer than it should."""


def _hung(signum, frame) -> None:
    raise OperationHung


def measure_operation(variant, style: str, op: str, min_time: float, runs: int) -> dict:
    """Calibrate, warm up, then time `runs` runs of one operation: ns per operation.

    A loop that hangs on an operation (a bug the bench should show, not wait on) is stopped
    after OPERATION_LIMIT seconds and reported as an error for that operation alone.
    """
    previous = signal.signal(signal.SIGALRM, _hung)
    signal.alarm(OPERATION_LIMIT)
    try:
        return _measure_operation(variant, style, op, min_time, runs)
    except OperationHung:
        return {"error": f"did not finish within {OPERATION_LIMIT} s (hung?)"}
    except Exception as error:  # the loop's own failure, reported per operation
        return {"error": f"{type(error).__name__}: {error}"}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _measure_operation(variant, style: str, op: str, min_time: float, runs: int) -> dict:
    n = 64
    while timed_run(variant, style, op, n) < min_time * 1e9 and n < 1 << 24:
        n *= 2
    timed_run(variant, style, op, n)  # warm-up at the final count
    values = [timed_run(variant, style, op, n) / n for _ in range(runs)]
    return {"n": n, "ns_per_op": values, "median": statistics.median(values)}


def main(argv: list[str] | None = None) -> None:
    import loops

    parser = argparse.ArgumentParser(prog="python -m bench.micro", description=__doc__)
    parser.add_argument("--loop", required=True)
    parser.add_argument("--style", required=True, choices=loops.STYLES)
    parser.add_argument("--op", action="append", choices=sorted(OPERATIONS))
    parser.add_argument("--min-time", type=float, default=0.05)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    try:
        variant = loops.get(args.loop)
        variant.api(args.style)
    except (LookupError, ValueError) as error:
        parser.error(str(error))
    ops = [op for op in args.op or OPERATIONS if args.style in OPERATIONS[op]]
    result = {"loop": args.loop, "style": args.style, "operations": {}}
    for op in ops:
        outcome = measure_operation(variant, args.style, op, args.min_time, args.runs)
        result["operations"][op] = outcome
        shown = outcome["error"] if "error" in outcome else f"{outcome['median']:.0f} ns/op"
        print(f"{args.loop} {args.style} {op}: {shown}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


# -- the bench side: one repetition is one fresh process ---------------------------------------


def measure(point: Point, row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh pinned process measuring every operation of the row's style."""
    if point.args.get("harness") == "pyperf":
        return measure_pyperf(point, row, cores, workdir)
    from bench.procs import Child, python

    out = workdir / "micro.json"
    config = {"min_time": point.args["min_time_s"], "runs": point.args["runs"]}
    child = Child(
        python(
            "-m",
            "bench.micro",
            "--loop",
            row.variant,
            "--style",
            row.style,
            "--min-time",
            str(config["min_time"]),
            "--runs",
            str(config["runs"]),
            "--json",
            str(out),
        ),
        cores.subject,
        stderr_path=workdir / "micro.err",
    )
    usage = child.wait(timeout=point.cap_s or 300)
    child.check(usage)
    operations = json.loads(out.read_text())["operations"]
    record: dict = {op: data["median"] for op, data in operations.items() if "median" in data}
    record["calibrated_n"] = {op: data["n"] for op, data in operations.items() if "n" in data}
    errors = {op: data["error"] for op, data in operations.items() if "error" in data}
    if errors:
        record["failed_figures"] = errors
    return record


def measure_pyperf(point: Point, row, cores, workdir: Path) -> dict:
    """pyperf's run of every operation of the row's style, in its own worker processes."""
    import pyperf
    from pyperf._cli import format_checks  # the checks `pyperf show` prints as warnings

    from bench.procs import Child, python

    out = workdir / "pyperf.json"
    child = Child(
        python(
            "-m",
            "bench.pyperf_micro",
            "--loop",
            row.variant,
            "--style",
            row.style,
            "--processes",
            str(point.args["processes"]),
            "--values",
            str(point.args["values"]),
            "--quiet",
            "-o",
            str(out),
        ),
        cores.subject,  # pyperf's workers inherit the pinning
        stderr_path=workdir / "pyperf.err",
    )
    usage = child.wait(timeout=point.cap_s or PYPERF_CAP_S)
    child.check(usage)
    record: dict = {"calibrated_n": {}, "stdev_pct": {}, "pyperf_warnings": {}}
    for benchmark in pyperf.BenchmarkSuite.load(str(out)).get_benchmarks():
        op = benchmark.get_name()
        record[op] = benchmark.median() * 1e9  # pyperf's values are seconds per operation
        record["stdev_pct"][op] = benchmark.stdev() / benchmark.mean() * 100
        record["calibrated_n"][op] = benchmark.get_loops()
        warnings = [line[2:] for line in format_checks(benchmark) if line.startswith("* ")]
        if warnings:
            record["pyperf_warnings"][op] = warnings
    return record


if __name__ == "__main__":
    sys.exit(main())
