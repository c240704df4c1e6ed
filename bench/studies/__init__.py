"""The registry: every workload the bench measures and the report renders, in report order.

Each module here declares one :class:`bench.workload.Workload` (its points, figures, titles
and the prose written from its data); its running side lives in :mod:`bench.measure`.
Adding a workload is its CLI, a module here, its running module in :mod:`bench.measure`
(named by the registration, never imported from here) and one line in ``WORKLOADS``
(``bench/README.md``'s recipe); the runner, the store and the report read this tuple and
nothing else (readers look it up here at call time, so a test may
register a workload of its own for the length of the test).
"""

from __future__ import annotations

from bench.studies import connections, crawler, echo, http, latency, micro, sleep
from bench.workload import Workload

WORKLOADS: tuple[Workload, ...] = (
    echo.WORKLOAD,
    latency.WORKLOAD,
    sleep.WORKLOAD,
    connections.WORKLOAD,
    crawler.WORKLOAD,
    http.WORKLOAD,
    micro.WORKLOAD,
)


def names() -> list[str]:
    """The registered workloads' names, in report order."""
    return [workload.name for workload in WORKLOADS]


def get(name: str) -> Workload:
    """The registered workload of that name (LookupError if there is none)."""
    for workload in WORKLOADS:
        if workload.name == name:
            return workload
    raise LookupError(f"no workload {name!r}; registered: {', '.join(names())}")
