"""The crawler workload's measurements (being written: waits for workloads/crawler on main)."""

from __future__ import annotations

import importlib.util

from bench.plan import Metric, Point

NAME = "crawler"
METRICS: tuple[Metric, ...] = ()
HEADLINE = ""
TITLE = "Crawler"
DESCRIPTION = "(pending: workloads/crawler)"


def point_title(params: dict) -> str:
    return str(params)


def unavailable() -> str | None:
    if importlib.util.find_spec("workloads.crawler") is None:
        return "workloads/crawler is not in this tree yet"
    return "the bench side of crawler is not written yet"


def points(full: bool) -> list[Point]:
    return []


def anchor_names() -> list[str]:
    return []
