"""Micro benchmarks: the cost of a loop's basic operations, in nanoseconds per operation.

Four operations, each written once per style so that the same program runs on every loop:

- ``switch``: one trip through the loop. Tasks: two tasks taking turns with ``sleep(0)`` (a
  coroutine's ``send``; in the blocking style a greenlet switch through the hub, or on the
  threads variant a release of the GIL that the kernel hands to the other thread or not).
  Callbacks: a callback that schedules the next with ``call_soon`` (one loop iteration each).
- ``call_soon``: schedule a callback and run it, in batches of 1 000 per iteration (callbacks).
- ``spawn_join``: start a task that returns at once and wait for it (tasks).
- ``timer``: schedule a timer and cancel it before it fires. Callbacks: ``call_later`` +
  ``cancel()``. Tasks: ``timeout_after`` around work that ends at once, the tasks' way to arm
  and disarm a deadline.

An operation a style has no notion of is not measured (shown as "n/a").

Two harnesses run the same programs (:mod:`bench.studies.micro.measure`). The bench measures with
**pyperf** (:mod:`bench.studies.micro.pyperf_micro`), the harness CPython's own benchmarks use:
calibration, fresh worker processes, stability warnings, which the report prints. The full run
also keeps the lab's own harness on the same operations, so the two can be read side by side.
"""

from __future__ import annotations

import math

from bench.plan import Glance, Metric, Point, variant_rows
from bench.study import Study

NAME = "micro"
OPERATIONS = {
    "switch": ("callbacks", "generators", "coroutines", "blocking"),
    "call_soon": ("callbacks",),
    "spawn_join": ("generators", "coroutines", "blocking"),
    "timer": ("callbacks", "generators", "coroutines", "blocking"),
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
warnings. So a row is one figure, its spread pyperf's standard deviation (the detail table); a
ratio's 95% interval is drawn from that spread (a median's standard error over the worker
processes, normal on the log scale), as one value a side has no spread of its own.

The full run also measures with the lab's own harness (a fresh process per repetition,
calibrated, warmed up, timed seven times, its median) on the same programs, side by side.
"n/a": the style has no such operation.
"""


# pyperf's worker processes and values per process: its defaults in the full run (20 × 3
# after a warm-up each), fewer in the quick one; one bench repetition, since pyperf repeats
# in its own fresh processes.
PYPERF = {False: {"processes": 3, "values": 3}, True: {"processes": 20, "values": 3}}
PYPERF_CAP_S = 600.0
HEADLINE_POINT = {"harness": "pyperf"}  # the point the glance reads
GLANCE = (
    Glance(
        "switch (ns)",
        tuple(HEADLINE_POINT.items()),
        "switch",
        "ns per switch",
        "micro, one trip through the loop (pyperf)",
        place=20,
    ),
)


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


MEDIAN_ERROR = math.sqrt(math.pi / 2)


def harness_spread(params: dict, rep: dict) -> dict[str, float]:
    """Under pyperf, each operation's relative standard error: its standard deviation over the
    values, as a standard error of their median with n the worker processes, not the values
    (values inside one process share its state, so the processes are the independent draws;
    counting the values would make the interval √3 narrower than the data allows)."""
    if params.get("harness") != "pyperf" or not params.get("processes"):
        return {}
    draws = params["processes"]
    return {
        op: MEDIAN_ERROR * pct / 100 / math.sqrt(draws)
        for op, pct in (rep.get("stdev_pct") or {}).items()
    }


# pyperf's standard deviation (% of the mean) under which its figure is taken as steady: the
# pairs compared to tell the harnesses apart, not the machine's noise.
def settings(full: bool) -> dict[str, float]:
    return {"min_time": 0.1 if full else 0.03, "runs": 7 if full else 5}


STUDY = Study(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.studies.micro.measure",
    rendering="bench.studies.micro.render",
    glance=GLANCE,
    harness_spread=harness_spread,
)
