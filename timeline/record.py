"""Running a scenario under the tracer, and the record it leaves (plain data, stored as JSON).

A record holds the rows (tasks, callbacks, thread work), the run slices with their marks, and
where it came from (loop, style, scenario, Python, commit). :func:`metrics` reduces a record
to the per-loop table's figures; the charts and the report are rendered from records alone.
"""

from __future__ import annotations

import json
import platform
import statistics
from itertools import pairwise
from pathlib import Path
from typing import Any

import loops
from bench import environment
from timeline.scenarios import SCENARIOS, play
from timeline.tracer import Tracer, traced

REPEATS = 5  # traced runs per record; the least disturbed one is kept


def run(loop: str, style: str, scenario: str, repeats: int = REPEATS) -> dict[str, Any]:
    """Play `scenario` on (loop, style) once untraced (imports, caches), then traced `repeats`
    times; the record of the least disturbed traced run (least time inside slices, as timeit
    keeps its minimum: on a shared machine, preemption only ever adds time to a slice)."""
    variant = loops.get(loop)
    api = variant.api(style)  # a clear error if the variant does not speak the style
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; scenarios are {', '.join(SCENARIOS)}")
    play(api, style, scenario)  # warm-up: the traced run should show scheduling, not imports
    tracers = []
    for _ in range(repeats):
        tracers.append(Tracer())
        play(traced(variant, tracers[-1]).api(style), style, scenario)
    tracer = min(tracers, key=_busy)
    return {
        "loop": loop,
        "style": style,
        "scenario": scenario,
        "reference": variant.reference,
        "summary": variant.summary,
        "python": platform.python_version(),
        "cpu": environment.cpu_model(),
        "libraries": environment.library_versions(),
        "commit": _commit(),
        "repeats": repeats,
        "rows": list(tracer.rows),
        "slices": sorted(tracer.slices, key=lambda s: s["start"]),
    }


def _commit() -> str:
    """HEAD's short hash, marked "+dirty" where the loops' or the bench's code differs from it."""
    head = environment.commit()
    if not head["hash"]:
        return "unknown"
    return str(head["hash"])[:10] + ("+dirty" if head["dirty"] else "")


def _busy(tracer: Tracer) -> float:
    return sum(s["end"] - s["start"] for s in tracer.slices)


def save(record: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


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
