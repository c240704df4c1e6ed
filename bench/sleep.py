"""The sleep workload's measurements (being written: waits for workloads/sleep on main)."""

from __future__ import annotations

import importlib.util

from bench.plan import Metric, Point

NAME = "sleep"
METRICS: tuple[Metric, ...] = ()
HEADLINE = ""
TITLE = "Sleep"
DESCRIPTION = "(pending: workloads/sleep)"


def point_title(params: dict) -> str:
    return str(params)


def unavailable() -> str | None:
    if importlib.util.find_spec("workloads.sleep") is None:
        return "workloads/sleep is not in this tree yet"
    return "the bench side of sleep is not written yet"


def points(full: bool) -> list[Point]:
    return []


def anchor_names() -> list[str]:
    return []
