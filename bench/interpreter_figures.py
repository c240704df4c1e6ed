"""The figures the bench reads across interpreters (the report's "Interpreters" section).

Declared once, read by both rooms: the runner's ``--across`` measures only the points these
figures are read at (on every ``--python`` asked for), and ``bench/pages/interpreters.py``
renders them per interpreter with their ratios to the reference interpreter's same row and to
asyncio on the same interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass

from bench.headline import HEADLINE_CLOSED, HEADLINE_PACED
from bench.plan import Point
from bench.studies import crawler, micro

SLEEPERS = 100_000  # sleep CPU per sleeper is read at this many sleepers


@dataclass(frozen=True)
class Figure:
    """One figure at one point of one workload."""

    name: str  # the id its table and chart are linked by
    title: str
    workload: str
    where: tuple[tuple[str, object], ...]  # the point: these parameter values (None: absent)
    metric: str
    digits: int
    higher_is_better: bool

    def matches(self, params: dict) -> bool:
        return all(params.get(name) == value for name, value in self.where)


FIGURES = (
    Figure(
        "echo-closed",
        "echo server CPU per request, closed loop, 1 KiB × 100 connections (µs)",
        "echo",
        HEADLINE_CLOSED,
        "server_cpu_us",
        1,
        False,
    ),
    Figure(
        "echo-paced",
        "echo server CPU per request at a fixed offered load, 1 KiB × 100 connections (µs)",
        "echo",
        HEADLINE_PACED,  # the declared rate: never an old point at a derived one
        "server_cpu_us",
        1,
        False,
    ),
    Figure(
        "switch",
        "the switch, one trip through the loop (ns, pyperf)",
        "micro",
        tuple(micro.HEADLINE_POINT.items()),
        "switch",
        0,
        False,
    ),
    Figure(
        "sleep",
        f"sleep CPU per sleeper at {SLEEPERS:,} sleepers (µs)".replace(",", " "),
        "sleep",
        (("mode", "sleepers"), ("tasks", SLEEPERS)),
        "cpu_per_sleeper_us",
        2,
        False,
    ),
    Figure(
        "crawl",
        "crawler pages/s, 20 ms latency × 100 workers",
        "crawler",
        tuple(crawler.HEADLINE_POINT.items()),
        "pages_per_s",
        0,
        True,
    ),
)
COST = FIGURES[1]  # the figure the sentences on order and gains read


def read_at(point: Point) -> bool:
    """True if some figure of the section is read at this point."""
    return any(f.workload == point.workload and f.matches(point.args) for f in FIGURES)
