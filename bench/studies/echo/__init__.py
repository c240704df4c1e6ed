"""Echo: what each loop and style costs per request, and how many requests it can serve.

One repetition: a fresh server process on the subject core (``python -m workloads.echo`` on
the loop and style under test, or an anchor ``python -m workloads.echo.native NAME``), a
warm-up load from the load generator on the peer core, then, from the same generator process
on connections of their own, the measured load, then SIGTERM (the server must exit 0, with
every socket closed). The load generator (``python -m workloads.echo.load``, native: C on
epoll where the machine has a C compiler, else Python on uvloop, and each row says which)
verifies every byte and reports
requests/s, MiB/s and latency percentiles from its histogram, the server's CPU seconds over the
load window, and its own CPU. The window holds the load alone: before it opens, one byte has
gone each way on every connection (the server has accepted and is watching each one), and the
connections close only after the server's CPU has been read, so neither accepting nor
teardown, which grow with the connection count, is counted as the requests' cost.

Its second paragraph, the repetition, is part of the report's echo description
(``DESCRIPTION``). The two measures, closed loop and fixed offered load, and why the rate is
declared rather than chosen from data: this folder's README, "Method".
"""

from __future__ import annotations

from bench.headline import (  # the point the first screen reads, declared in the core
    CURVE,
    DERIVED,
    HEADLINE_AT,
    HEADLINE_CLOSED,
    HEADLINE_PACED,
    HEADLINE_POINT,
    HEADLINE_RATE,
    LOADED_RATE,
    PACED,
    PLAIN,
    TLS,
    offered_rate,
    point_title,
    server_rows,
    servers_unavailable,
    size_text,
)
from bench.plan import (  # the anchors, the echo servers beside the loops: named in plan
    FLOOR,
    USER_BASE,
    YARDSTICK,
    Chart,
    Glance,
    Metric,
    Point,
)
from bench.study import Study

NAME = "echo"
TITLE = "Echo"

# 10 000 connections is C10k: the bench raises its open-file limit (inherited by the server and
# the generator); handlers' select() ceiling shows there as its stated limit.
FULL = {"sizes": (64, 1024, 16384, 102400), "connections": (1, 10, 100, 1000, 10_000)}
QUICK_POINTS = ((1024, 1), (1024, 100))
# The full run is 40 points × 20 rows: its timing is what lets it run in a few sessions.
# 2 s holds thousands of requests even at 100 KiB × 10 000 connections (a full round each).
# A tenth of a second of warm-up is thousands of requests in the closed loop and 800 at the
# headline's fixed rate: every path of the server's code has run many times before the window.
TIMING = {  # seconds: (warm-up load, measured load)
    False: (0.1, 0.6),
    True: (0.5, 2.0),
}
# Seconds at a fixed offered load: (warm-up, measured). The server's CPU over the window is read
# in nanoseconds (machine.proc.schedstat), so 0.6 s, 4,800 requests at the headline rate, reads
# it far finer than the spread between fresh server processes, which only more rounds narrow:
# the quick run spends its hour on rounds (KEY_REPETITIONS), not on longer windows.
PACED_TIMING = {False: (0.1, 0.6), True: (0.5, 2.0)}
# Its rounds, in both regimes: the first screen's ratios are read from them, paired by round
# (bench.render.intervals), and three pairs make an interval no narrower than their range.
HEADLINE_REPETITIONS = 6
# The key rows' rounds there (bench.plan.key_row): twenty pairs hold a ratio to about ±5%
# within a session at the spread these rows show.
KEY_REPETITIONS = 20
# The headline point over TLS, in both measures: four rounds. TLS over plain is far from 1 on
# every row of bench.md's TLS table, which four pairs still tell; each round more costs the
# quick run, which should stay within an hour, a repetition of every echo row.
TLS_REPETITIONS = 4
REPETITIONS = {False: 3, True: 4}  # elsewhere, by run (quick, full)
# The cost-against-rate curve at HEADLINE_POINT (requests/s): the full run's rates, and in both
# runs the loaded rate (bench.headline.LOADED_RATE), at the headline's rounds (the first screen
# reads it); the headline rate itself is the headline point.
CURVE_RATES = {False: (LOADED_RATE,), True: (2000, 4000, 8000, 12000, LOADED_RATE)}
# The cost a design adds per request: the glance reads the user's servers against it.
COST_GLANCE = Glance(
    "echo server CPU per request at fixed load (µs)",
    HEADLINE_PACED,
    "server_cpu_us",
    "µs of server CPU per request",
    f"echo cost at a fixed offered load, {HEADLINE_AT}",
    place=11,
)
GLANCE = (
    Glance(
        "echo requests/s",
        HEADLINE_CLOSED,
        "requests_per_s",
        "requests/s",
        f"echo throughput (closed loop), {HEADLINE_AT}",
        place=10,
    ),
    COST_GLANCE,
)

METRICS = (
    Metric("requests_per_s", "requests/s", higher_is_better=True),
    # the fixed-offered-load figures
    Metric("server_cpu_us", "server CPU (µs / request)", higher_is_better=False, digits=1),
    Metric(
        "server_cpu_share", "server CPU (% of a core)", higher_is_better=False, scale=100, digits=1
    ),
    Metric("latency_p999_ms", "p99.9 (ms)", higher_is_better=False, digits=3),
    Metric("rate_achieved", "achieved (req/s)", higher_is_better=True, ratio=False),
    Metric("mib_per_s", "MiB/s", higher_is_better=True, digits=2),
    Metric("latency_p50_ms", "p50 (ms)", higher_is_better=False, digits=3),
    Metric("latency_p99_ms", "p99 (ms)", higher_is_better=False, digits=3),
    Metric("server_cpu_per_100k", "server CPU (s / 100k req)", higher_is_better=False, digits=2),
    Metric("server_rss_mib", "server peak RSS (MiB)", higher_is_better=False, digits=1),
    Metric(
        "peer_cpu_share",
        "generator CPU (% of a core)",
        higher_is_better=False,
        scale=100,
        ratio=False,
    ),
    Metric("peer_cpu_us", "generator CPU (µs / request)", higher_is_better=False, digits=1),
)
HEADLINE = "requests_per_s"
CLOSED_COLUMNS = (
    "requests_per_s",
    "mib_per_s",
    "latency_p50_ms",
    "latency_p99_ms",
    "server_cpu_us",
    "server_rss_mib",
    "peer_cpu_share",
    "peer_cpu_us",
)
PACED_COLUMNS = (
    "server_cpu_us",
    "server_cpu_share",
    "latency_p50_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "rate_achieved",
    "server_rss_mib",
    "peer_cpu_share",
)
CHARTS = (
    Chart(
        name="requests",
        metric="requests_per_s",
        x="connections",
        panels="size",
        where=(("measure", None), PLAIN),
        title="Echo: requests per second by connections (closed loop)",
        x_label="connections",
    ),
    Chart(
        name="cost",
        metric="server_cpu_us",
        x="connections",
        panels="size",
        where=(("measure", PACED), (DERIVED, None), (CURVE[0], None), PLAIN),
        title="Echo: server CPU per request by connections (fixed offered load, declared rates)",
        x_label="connections",
    ),
    Chart(
        name="cost-curve",
        metric="server_cpu_us",
        x="rate",
        where=(("measure", PACED), *HEADLINE_POINT.items(), (DERIVED, None), PLAIN),
        title=f"Echo: server CPU per request by offered rate, {HEADLINE_POINT['size']:,} B × "
        f"{HEADLINE_POINT['connections']} connections",
        x_label="offered load (requests/s)",
    ),
)


DESCRIPTION = f"""\
A TCP echo server per loop and style, and the anchor servers a user would write instead in
each production loop's native API (asyncio and uvloop streams and Protocol, trio streams,
curio sockets) plus `{FLOOR}`, a bare selectors loop with one callback per ready
socket: the pure-Python floor. Each connection of the load generator sends a message, reads
the whole echo and verifies every byte before the next. {__doc__.split(chr(10) * 2)[1]}
Two measures per size and connection count. **Fixed offered load** (the tables titled so):
the generator offers the same rate to every server, on a schedule, with latency counted from
each request's scheduled time (as wrk2 does), and the figure is the server's CPU per request
in µs (lower is cheaper) with its share of a core: what each design costs, comparable on every
row, even the fastest. A row that completed fewer than 95% of the scheduled requests could not
keep the rate and has no figure. **Closed loop** (the tables titled so): each connection sends
its next request as soon as the echo is back, and the figure is requests per second; on a
two-core machine the generator has one core, and where it saturates (it costs about as much
per request as the fastest servers, since on loopback the client pays the kernel's TCP work
too) the row has no figure and says what the server and the generator each cost per request.
The generator column says which load generator measured a row: native (C on epoll, built on
first use) or python (uvloop, the fallback where no C compiler exists). Peak RSS is the server
process's. Quick run: closed loop {TIMING[False][1]:g} s measured after {TIMING[False][0]:g} s
of warm-up, fixed load {PACED_TIMING[False][1]:g} s; full run: {TIMING[True][1]:g} s and
{PACED_TIMING[True][1]:g} s after {TIMING[True][0]:g} s.
""".replace("\n", " ")


def points(full: bool) -> list[Point]:
    """Closed-loop points (their keys as before the paced measure existed), then paced ones at
    their declared rates, then the cost-against-rate curve at the headline point (the loaded
    rate; the full run adds more), then the headline point over TLS in both measures."""
    pairs = [(s, c) for s in FULL["sizes"] for c in FULL["connections"]] if full else QUICK_POINTS
    every_row = tuple(server_rows())
    repetitions = REPETITIONS[full]
    least = 3 if full else None  # full: stop at 3 where the spread allows (bench.summary)

    def point(size: int, connections: int, paced: tuple, timing: tuple, tls: tuple = ()) -> Point:
        warmup, duration = timing
        at = {"size": size, "connections": connections}
        headline = at == HEADLINE_POINT and CURVE not in paced  # the curve's rates: its own
        loaded = CURVE in paced and dict(paced[:2]).get("rate") == LOADED_RATE
        return Point(
            NAME,
            (
                *paced[:1],
                ("size", size),
                ("connections", connections),
                *paced[1:],
                *tls,
                ("warmup_s", warmup),
                ("duration_s", duration),
            ),
            every_row,
            (TLS_REPETITIONS if tls else HEADLINE_REPETITIONS)
            if headline or loaded
            else repetitions,
            None if headline or loaded else least,
            key_repetitions=KEY_REPETITIONS if headline and not tls else None,
        )

    # no "measure" parameter: the closed-loop keys stay as they were
    closed = [point(s, c, (), TIMING[full]) for s, c in pairs]
    paced = [
        point(s, c, (("measure", PACED), ("rate", offered_rate(s, c))), PACED_TIMING[full])
        for s, c in pairs
    ]
    size, connections = HEADLINE_POINT["size"], HEADLINE_POINT["connections"]
    curve = [
        point(size, connections, (("measure", PACED), ("rate", r), CURVE), PACED_TIMING[full])
        for r in CURVE_RATES[full]
        if r != HEADLINE_RATE
    ]
    over_tls = [
        point(size, connections, (), TIMING[full], ((TLS, True),)),
        point(
            size,
            connections,
            (("measure", PACED), ("rate", HEADLINE_RATE)),
            PACED_TIMING[full],
            ((TLS, True),),
        ),
    ]
    return closed + paced + curve + over_tls


def columns(params: dict) -> list[Metric]:
    """The figures shown at a point: throughput first (closed loop) or cost first (paced)."""
    names = PACED_COLUMNS if params.get("measure") == PACED else CLOSED_COLUMNS
    by_name = {m.name: m for m in METRICS}
    return [by_name[name] for name in names]


def panel_title(parameter: str, value) -> str:
    return f"{size_text(value)} messages"


STUDY = Study(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.studies.echo.measure",
    rendering="bench.studies.echo.render",
    charts=CHARTS,
    glance=GLANCE,
    columns=columns,
    panel_title=panel_title,
    unavailable=servers_unavailable,
    bases=(f"{USER_BASE}/native", f"{YARDSTICK}/native"),
    controls=(f"{USER_BASE}/native", f"{YARDSTICK}/native", f"{FLOOR}/native"),
    row_names=(("asyncio/coroutines", "asyncio · coroutines (contract adapter over sock_recv)"),),
)
