"""Observing a run: a scenario played under the tracer, and the record it leaves (plain data).

A record holds the rows (tasks, callbacks, thread work), the run slices with their marks, and
where it came from (loop, style, scenario, Python, commit). Storing and reading records is
:mod:`timeline.store`, which the rendering uses alone: rendering never imports this module or
the tracer, as the bench's report never imports its runner.
"""

from __future__ import annotations

import platform
from typing import Any

import loops
from machine import environment
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
