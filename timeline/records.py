"""Records as data: where they are stored, and the readings the report makes of one.

The report (:mod:`timeline.render`) reads records through this module alone, never through
:mod:`timeline.record`, which runs scenarios under the tracer: observing and rendering are
separate rooms, as the bench's measuring and rendering are. :func:`metrics` reduces a record
to the per-loop table's figures; the charts and the report are rendered from records alone.
"""

from __future__ import annotations

import json
import statistics
from itertools import pairwise
from pathlib import Path
from typing import Any

STORE = Path("reports/timelines")  # the records, their charts and the failures file
REPORT = Path("reports/timelines.md")
FAILURES = "failures.json"  # in the store: the runs that did not record, and why


def save(record: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def load_all(store: Path) -> list[dict[str, Any]]:
    """Every record in the store, in file-name order."""
    return [load(p) for p in sorted(store.glob("*.json")) if p.name != FAILURES]


def load_failures(store: Path) -> dict[str, str]:
    """The runs that did not record, by name, each with why ({} if none is stored)."""
    path = store / FAILURES
    return json.loads(path.read_text()) if path.exists() else {}


def save_failures(store: Path, failures: dict[str, str]) -> None:
    (store / FAILURES).write_text(json.dumps(failures, indent=1, sort_keys=True) + "\n")


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
