"""The echo workload's measurements (being written: waits for workloads/echo on main)."""

from __future__ import annotations

import importlib.util

from bench.plan import Metric, Point

NAME = "echo"
METRICS: tuple[Metric, ...] = ()
HEADLINE = ""
TITLE = "Echo"
DESCRIPTION = "(pending: workloads/echo)"


def point_title(params: dict) -> str:
    return str(params)


def unavailable() -> str | None:
    if importlib.util.find_spec("workloads.echo") is None:
        return "workloads/echo is not in this tree yet"
    return "the bench side of echo is not written yet"


def points(full: bool) -> list[Point]:
    return []


def anchor_names() -> list[str]:
    return []
