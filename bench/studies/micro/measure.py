"""Micro, the running side: the operations' programs, the lab's harness, pyperf read back.

Each operation (:mod:`bench.studies.micro` names them, their figures and the report's prose)
is written once per style, so the same program runs on every loop; an operation a style has
no notion of is not measured. The bench measures with pyperf
(:mod:`bench.studies.micro.pyperf_micro`); the full run also keeps the lab's own harness below,
one pinned process per repetition (``python -m bench.studies.micro.measure``), so the two can
be read side by side: the folder's README.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import time
from pathlib import Path

from bench.plan import Point
from bench.procs import Child, python
from bench.studies.micro import OPERATIONS, PYPERF_CAP_S
from bench.study import Measuring

BATCH = 1000  # call_soon batch size: one loop iteration runs this many callbacks
LONG_DELAY = 3600.0  # timers armed in the benchmarks never come due
OPERATION_LIMIT = 20  # seconds one operation's whole measurement may take before it is failed


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


def _blk_nothing() -> None:
    return None


def _blk_turns(api, count: int) -> None:
    for _ in range(count):
        api.sleep(0)


def _blocking_program(api, op: str, n: int) -> int:
    clock = time.perf_counter_ns
    start = clock()
    if op == "switch":
        first = api.spawn(_blk_turns, api, n // 2)
        second = api.spawn(_blk_turns, api, n - n // 2)
        api.join(first)
        api.join(second)
    elif op == "spawn_join":
        for _ in range(n):
            api.join(api.spawn(_blk_nothing))
    elif op == "timer":
        for _ in range(n):
            api.timeout_after(LONG_DELAY, _blk_nothing)
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
    if style == "blocking":
        return entry.run(_blocking_program, entry, op, n)
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

    parser = argparse.ArgumentParser(
        prog="python -m bench.studies.micro.measure", description=__doc__
    )
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
    out = workdir / "micro.json"
    config = {"min_time": point.args["min_time_s"], "runs": point.args["runs"]}
    child = Child(
        python(
            "-m",
            "bench.studies.micro.measure",
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

    out = workdir / "pyperf.json"
    child = Child(
        python(
            "-m",
            "bench.studies.micro.pyperf_micro",
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


MEASURING = Measuring(measure=measure)

if __name__ == "__main__":
    sys.exit(main())
