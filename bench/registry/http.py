"""HTTP: real programs nobody here wrote, uvicorn serving a small ASGI app, loaded by wrk.

One point is one path (plaintext) and a number of keep-alive connections. Each repetition is a
fresh ``python -m workloads.http`` run: uvicorn (its httptools parser) on the loop under test
in its own process on the subject core, every body checked once, a warm-up, then wrk from its
own process on the peer core. The rows are the variants that can serve as asyncio's event loop
(``Variant.asyncio_loop``: asyncio, its eager-task form on 3.12+, uvloop, and the callbacks
loop through its drop-in), so the style column reads "asyncio": the program is asyncio code.
"""

from __future__ import annotations

import loops
from bench.plan import Chart, Glance, Metric, Point, Row
from bench.workload import Workload

NAME = "http"
TITLE = "HTTP"
STYLE = "asyncio"  # the rows' style: the program is asyncio code on each loop
PATH = "/plaintext"
CONNECTIONS = {False: (50,), True: (10, 50, 200)}
SECONDS = {False: 2.0, True: 4.0}
WARMUP_S = 1.0
HEADLINE_POINT = {"connections": 50}  # the point the glance reads
GLANCE = (
    Glance(
        "http requests/s (uvicorn)",
        tuple(HEADLINE_POINT.items()),
        "requests_per_s",
        "requests/s",
        f"HTTP, uvicorn under wrk, {HEADLINE_POINT['connections']} connections",
        per_loop=True,
        place=40,
    ),
)
REPETITIONS = (3, 5)

METRICS = (
    Metric("requests_per_s", "requests/s", higher_is_better=True, digits=0),
    Metric("server_cpu_us", "server CPU (µs / request)", higher_is_better=False, digits=1),
    Metric("latency_p50_ms", "p50 latency (ms)", higher_is_better=False, digits=2),
    Metric("latency_p99_ms", "p99 latency (ms)", higher_is_better=False, digits=2),
    Metric(
        "peer_cpu_share", "wrk CPU (% of a core)", higher_is_better=False, scale=100, ratio=False
    ),
)
HEADLINE = "requests_per_s"
CHARTS = (
    Chart(
        name="cost",
        metric="server_cpu_us",
        x="connections",
        title="HTTP under uvicorn: server CPU per request by connections",
        x_label="keep-alive connections",
    ),
)
DESCRIPTION = f"""\
A real server and a real client that nobody here wrote: uvicorn (with httptools) serves a small
ASGI application (`workloads/http/app.py`: plaintext and JSON, keep-alive) on each loop that
can be asyncio's event loop, and wrk loads `{PATH}` from its own process on the other core.
**requests/s** is wrk's count over its window; **server CPU** is the uvicorn process's CPU over
that window per request (the steadier figure on a shared machine); latency percentiles are
wrk's. Every body is checked before the load, and a run with any failed request (wrk's socket
errors and non-2xx answers) or a server that died is a failed repetition, never a figure.
Quick run: {CONNECTIONS[False][0]} connections for {SECONDS[False]:g} s after {WARMUP_S:g} s of
warm-up; full run: {", ".join(map(str, CONNECTIONS[True]))} connections for
{SECONDS[True]:g} s.
""".replace("\n", " ")


def rows() -> tuple[Row, ...]:
    """Every available variant that offers an asyncio event loop, in discovery order."""
    return tuple(
        Row(variant.name, STYLE)
        for variant in loops.available().values()
        if variant.asyncio_loop is not None
    )


def unavailable() -> str | None:
    import importlib.util

    if importlib.util.find_spec("uvicorn") is None:
        return "uvicorn is not installed (the dependency group 'http' has it)"
    return None


def points(full: bool) -> list[Point]:
    least, most = REPETITIONS
    return [
        Point(NAME, (("path", PATH), ("connections", n)), rows(), most, least if full else None)
        for n in CONNECTIONS[full]
    ]


def point_title(params: dict) -> str:
    return f"uvicorn, GET {params['path']}, {params['connections']} keep-alive connections"


HOME_MADE, FLOOR_LOOP, FAST_LOOP = "callbacks", "asyncio", "uvloop"  # the sentence's three


def observations(params: dict, rendered: list) -> list[str]:
    """Where the pure-Python loop stands between asyncio and uvloop, in CPU per request."""
    cost = {
        r.row.variant: r.summary.stats["server_cpu_us"].median
        for r in rendered
        if r.summary.status == "ok" and "server_cpu_us" in r.summary.stats
    }
    if not {HOME_MADE, FLOOR_LOOP, FAST_LOOP} <= cost.keys():
        return []
    mine, floor, fast = cost[HOME_MADE], cost[FLOOR_LOOP], cost[FAST_LOOP]
    if floor == fast:
        where = "at both (they cost the same)"
    else:
        share = (floor - mine) / (floor - fast)  # 0: asyncio's cost, 1: uvloop's
        where = (
            f"{share:.0%} of the way from asyncio's cost to uvloop's"
            if 0 <= share <= 1
            else ("cheaper than uvloop" if share > 1 else "dearer than asyncio")
        )
    return [
        f"Under a real server, the pure-Python callbacks loop (its asyncio drop-in) costs "
        f"{mine:.1f} µs of server CPU per request, against asyncio's {floor:.1f} and uvloop's "
        f"{fast:.1f}: {where}."
    ]


WORKLOAD = Workload(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.measure.http",
    charts=CHARTS,
    glance=GLANCE,
    unavailable=unavailable,
    observations=observations,
)
