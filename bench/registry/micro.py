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

Two harnesses run the same programs (:mod:`bench.measure.micro`). The bench measures with
**pyperf** (:mod:`bench.measure.pyperf_micro`), the harness CPython's own benchmarks use:
calibration, fresh worker processes, stability warnings, which the report prints. The full run
also keeps the lab's own harness on the same operations, so the two can be read side by side.
"""

from __future__ import annotations

import math
import statistics

from bench.plan import Glance, Metric, Point, variant_rows
from bench.summary import summarize
from bench.workload import Workload

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
PYPERF = {False: {"processes": 6, "values": 3}, True: {"processes": 20, "values": 3}}
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


def detail_column(params: dict) -> str | None:
    """Under pyperf, a column with its standard deviation per operation (its own spread)."""
    return "pyperf std dev (% of mean)" if params.get("harness") == "pyperf" else None


def detail(reps: list[dict]) -> str:
    """pyperf's standard deviation per operation, from the one repetition that holds them."""
    spreads = next((rep["stdev_pct"] for rep in reps if rep.get("stdev_pct")), {})
    return ", ".join(f"{op} {pct:.1f}" for op, pct in spreads.items()) or "—"


# The standard error of a median over n normal draws is √(π/2) σ/√n.
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


WORKLOAD = Workload(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.measure.micro",
    glance=GLANCE,
    detail_column=detail_column,
    detail=detail,
    harness_spread=harness_spread,
    observations=observations,
    section_end=section_end,
)
