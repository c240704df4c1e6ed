"""The readings the report makes of one record: what ran on the loop, in which order, and the
per-loop table's figures (:func:`metrics`), and the unit its time axis reads in."""

from __future__ import annotations

import statistics
from itertools import pairwise
from typing import Any


def on_loop(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The slices that ran on the loop's thread (thread work runs beside it), in time order."""
    threads = {row["id"] for row in record["rows"] if row["kind"] == "thread"}
    return [s for s in record["slices"] if s["row"] not in threads]


def order(record: dict[str, Any]) -> list[str]:
    """The names of the rows that ran on the loop's thread, one per slice, in time order."""
    names = {row["id"]: row["name"] for row in record["rows"]}
    return [names[s["row"]] for s in on_loop(record)]


def metrics(record: dict[str, Any]) -> dict[str, Any]:
    """The per-loop table's figures for one record.

    switches: consecutive slices of different rows; loop share: the part of the span from the
    first slice's start to the last one's end in which no task or callback ran (the loop's own
    work, and its waiting for timers, I/O or the thread); gaps: time between one slice's end
    and the next one's start, the cost of a switch plus any waiting.
    """
    ran = on_loop(record)
    if not ran:
        return {"slices": 0, "switches": 0, "longest": 0.0, "span": 0.0, "loop_share": 0.0}
    span = max(s["end"] for s in ran) - ran[0]["start"]
    busy = sum(s["end"] - s["start"] for s in ran)
    gaps = [max(0.0, b["start"] - a["end"]) for a, b in pairwise(ran)]
    return {
        "slices": len(ran),
        "switches": sum(a["row"] != b["row"] for a, b in pairwise(ran)),
        "longest": max(s["end"] - s["start"] for s in ran),
        "span": span,
        "loop_share": 1 - busy / span if span > 0 else 0.0,
        "median_gap": statistics.median(gaps) if gaps else 0.0,
        "tasks": sum(row["kind"] != "thread" for row in record["rows"]),
    }


def time_unit(record: dict[str, Any]) -> tuple[str, float]:
    """The unit a chart of this record's time axis reads in, and seconds' factor to it.

    Microseconds while the run spans under 10 ms (a slice is then a few µs, and a millisecond
    axis would show only 0.0x), milliseconds above.
    """
    ends = [s["end"] for s in record["slices"]]
    span = max(ends) - min(s["start"] for s in record["slices"]) if ends else 0.0
    return ("µs", 1e6) if span < 0.01 else ("ms", 1e3)
