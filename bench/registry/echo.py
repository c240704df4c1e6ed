"""Echo: what each loop and style costs per request, and how many requests it can serve.

One repetition: a fresh server process on the subject core (``python -m workloads.echo`` on
the loop and style under test, or an anchor ``python -m workloads.echo.native NAME``), a
warm-up load from the load generator on the peer core, then the measured load from a fresh
load generator process, then SIGTERM (the server must exit 0, with every socket closed). The
load generator (``python -m workloads.echo.load``, native: C on epoll where the machine has a
C compiler, else Python on uvloop, and each row says which) verifies every byte and reports
requests/s, MiB/s and latency percentiles from its histogram, the server's CPU seconds over the
load window, and its own CPU. The window holds the load alone: before it opens, one byte has
gone each way on every connection (the server has accepted and is watching each one), and the
connections close only after the server's CPU has been read, so neither accepting nor
teardown, which grow with the connection count, is counted as the requests' cost.

Its second paragraph, the repetition, is part of the report's echo description
(``DESCRIPTION``). The two measures, closed loop and fixed offered load, and why the rate is
declared rather than chosen from data: ``bench/README.md``, "Echo, two measures".
"""

from __future__ import annotations

import importlib.util
import statistics

from bench.plan import (
    FLOOR,
    USER_BASE,
    YARDSTICK,
    Chart,
    Glance,
    Metric,
    Point,
    Row,
    implemented_styles,
    variant_rows,
)
from bench.store import DERIVED_RATE
from bench.summary import valid_values
from bench.workload import Workload

NAME = "echo"
TITLE = "Echo"

# 10 000 connections is C10k: the bench raises its open-file limit (inherited by the server and
# the generator); handlers' select() ceiling shows there as its stated limit.
FULL = {"sizes": (64, 1024, 16384, 102400), "connections": (1, 10, 100, 1000, 10_000)}
QUICK_POINTS = ((1024, 1), (1024, 100))
# The full run is 40 points × 20 rows: its timing is what lets it run in a few sessions.
# 2 s holds thousands of requests even at 100 KiB × 10 000 connections (a full round each).
TIMING = {  # seconds: (warm-up load, measured load)
    False: (0.2, 0.6),
    True: (0.5, 2.0),
}
# A paced run needs enough requests for the server's CPU time to be read to 1%.
PACED_TIMING = {False: (0.2, 2.0), True: (0.5, 2.0)}
PACED = "paced"
# The point every summary of echo reads (the glance, the cost anatomy): 1 KiB × 100 connections.
HEADLINE_POINT = {"size": 1024, "connections": 100}
# Its rounds, in both regimes: the first screen's ratios are read from them, paired by round
# (bench.render.intervals), and three pairs make an interval no narrower than their range.
HEADLINE_REPETITIONS = 6
REPETITIONS = {False: 3, True: 4}  # elsewhere, by run (quick, full)
# The declared offered load, requests/s (bench/README.md, "Echo, two measures"): about half
# what the slowest row (asyncio · coroutines) serves closed-loop on a quiet machine (its
# closed-loop rows in reports/results/full/echo.json); bigger messages cost the kernel more. A
# repetition that still falls short while its server was mostly idle is a stall, not a slow
# server, and its table says so.
OFFERED = {1: 4000, "more": 8000}
# The full run's cost-against-rate curve at HEADLINE_POINT (requests/s).
CURVE_RATES = (2000, 4000, 8000, 12000)
# A stored fixed-load point from before the rate was declared (its rate was derived from the
# slowest row of its session) carries this parameter: shown with its rate, as an old point.
DERIVED = DERIVED_RATE


def offered_rate(size: int, connections: int) -> int:
    """The declared offered rate at one size and connection count, the same in every run."""
    base = OFFERED[1] if connections == 1 else OFFERED["more"]
    return base if size <= 1024 else base // 2 if size <= 16384 else base // 5


# A curve point's extra parameter: the cost chart at declared rates leaves it out.
CURVE = ("curve", True)
# A TLS point's extra parameter (the server and the generator run with --tls). Plain points do
# not carry it, so their keys, and the rows stored under them, stay as they were; everything
# that reads a plain point asks for it absent (PLAIN). TLS is measured at the headline point
# alone, in both measures, each at the same declared rate as its plain twin.
TLS = "tls"
PLAIN = (TLS, None)
HEADLINE_RATE = offered_rate(HEADLINE_POINT["size"], HEADLINE_POINT["connections"])
# The headline fixed-load point's parameters (the glance, the verdict, the anatomy read it):
# the declared rate, and never an old point at a derived one.
HEADLINE_PACED = (
    ("measure", PACED),
    *HEADLINE_POINT.items(),
    ("rate", HEADLINE_RATE),
    (DERIVED, None),
    (CURVE[0], None),
    PLAIN,
)
# The headline closed-loop point (plain).
HEADLINE_CLOSED = (("measure", None), *HEADLINE_POINT.items(), PLAIN)


def regime(params: dict) -> str:
    """A point's measure in words: "closed loop" or "fixed load"."""
    return "fixed load" if params.get("measure") == PACED else "closed loop"


def size_text(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 and size % 1024 == 0 else f"{size} B"


# Where the glance reads echo, in words: "1 KiB × 100 connections".
HEADLINE_AT = f"{size_text(HEADLINE_POINT['size'])} × {HEADLINE_POINT['connections']:,} connections"
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


def unavailable() -> str | None:
    if importlib.util.find_spec("workloads.echo.load") is None:
        return "workloads/echo is not in this tree yet"
    return None


def anchor_names() -> list[str]:
    """The anchor servers whose library loads here (curio's does not on Python 3.12+)."""
    return [name for name, why in anchor_reasons().items() if why is None]


def anchor_reasons() -> dict[str, str | None]:
    """Every anchor server, with why it cannot run here (None: it can)."""
    if importlib.util.find_spec("workloads.echo.native") is None:
        return {}
    from workloads.echo.native import SERVERS, unavailable

    return {name: unavailable(name) for name in SERVERS}


def rows() -> list[Row]:
    return [
        *variant_rows(implemented_styles("workloads.echo")),
        *(Row(name, "native", anchor=True) for name in anchor_names()),
    ]


def points(full: bool) -> list[Point]:
    """Closed-loop points (their keys as before the paced measure existed), then paced ones at
    their declared rates, then (full run) the cost-against-rate curve at the headline point,
    then the headline point over TLS in both measures."""
    pairs = [(s, c) for s in FULL["sizes"] for c in FULL["connections"]] if full else QUICK_POINTS
    every_row = tuple(rows())
    repetitions = REPETITIONS[full]
    least = 3 if full else None  # full: stop at 3 where the spread allows (bench.summary)

    def point(size: int, connections: int, paced: tuple, timing: tuple, tls: tuple = ()) -> Point:
        warmup, duration = timing
        at = {"size": size, "connections": connections}
        headline = at == HEADLINE_POINT and CURVE not in paced  # the curve's rates: its own
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
            HEADLINE_REPETITIONS if headline else repetitions,
            None if headline else least,
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
        for r in CURVE_RATES
        if full and r != HEADLINE_RATE
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


def detail_column(params: dict) -> str:
    """Every echo table has a column naming which load generator measured each row."""
    return "generator"


def detail(reps: list[dict]) -> str:
    """Which load generator measured a row (records from before the native one: Python)."""
    kinds = sorted({rep.get("generator", "python") for rep in reps if "error" not in rep})
    return ", ".join(kinds) or "—"


def point_title(params: dict) -> str:
    count = params["connections"]
    title = f"{size_text(params['size'])} messages, {count:,} connection{'s' * (count != 1)}"
    title += " over TLS" if params.get(TLS) else ""
    if params.get("measure") == PACED:
        rate = f", {params['rate']:,.0f} requests/s" if "rate" in params else ""
        old = " (old point: rate derived, not declared)" if params.get(DERIVED) else ""
        return f"Fixed offered load: {title}{rate}{old}"
    return f"Closed loop, maximum throughput: {title}"


def panel_title(parameter: str, value) -> str:
    return f"{size_text(value)} messages"


def observations(params: dict, rendered: list) -> list[str]:
    """Where the best home-made loop stands against the pure-Python floor."""
    if params.get("measure") == PACED:
        return paced_observations(rendered)
    costs = [(r.label, *r.summary.costs) for r in rendered if r.summary.costs]
    lines = []
    if costs:
        cheaper = [label for label, server, peer in costs if server <= peer]
        close = [label for label, server, peer in costs if peer < server <= 1.5 * peer]
        said = []
        if cheaper:
            said.append(f"{', '.join(cheaper)} cost less per request than the generator")
        if close:
            said.append(
                f"{', '.join(close)} cost less than 1.5× what the generator costs per request"
            )
        if said:
            lines.append(
                f"Where the generator saturated, {'; '.join(said)}: on loopback the client "
                "pays the kernel's TCP work too, so on two cores such a server outruns a "
                "one-core client. Their cost is in the fixed-offered-load table."
            )
    return lines + floor_observations(rendered)


def floor_observations(rendered: list) -> list[str]:
    """Closed loop: where the best home-made loop stands against the pure-Python floor."""
    figures = {
        r.row.variant if r.row.anchor else r.label: r.summary.stats["requests_per_s"].median
        for r in rendered
        if r.summary.status == "ok" and "requests_per_s" in r.summary.stats
    }
    floor = figures.get(FLOOR)
    home = [
        (r.summary.stats["requests_per_s"].median, r.label)
        for r in rendered
        if r.kind == "home-made"
        and r.summary.status == "ok"
        and "requests_per_s" in r.summary.stats
    ]
    if floor is None or not home:
        return []
    best, label = max(home)
    return [
        f"The best home-made loop ({label}) runs at {best / floor:.0%} of the bare-selectors floor."
    ]


def paced_observations(rendered: list) -> list[str]:
    """At a fixed load: the cheapest home-made loop against the floor and uvloop's Protocol."""
    cost = {
        r.label: r.summary.stats["server_cpu_us"].median
        for r in rendered
        if r.summary.status == "ok" and "server_cpu_us" in r.summary.stats
    }
    home = sorted(
        (cost[r.label], r.label) for r in rendered if r.kind == "home-made" and r.label in cost
    )
    lines = []
    if home:
        best, label = home[0]
        for anchor in (f"{FLOOR} (anchor)", f"{YARDSTICK} (anchor)"):
            if anchor in cost:
                lines.append(
                    f"{label} costs {best / cost[anchor]:.2f}× what {anchor} does per request "
                    f"({best:.1f} against {cost[anchor]:.1f} µs)."
                )
    generators = {r.summary.detail for r in rendered if r.summary.status == "ok"}
    if generators - {"native"}:
        lines.append(f"Generators in this table: {', '.join(sorted(generators))}.")
    return lines


def point_notes(params: dict, stored_points: dict) -> list[str]:
    """A paced point: the rate offered, and where it comes from (declared, or an old point's)."""
    if params.get("measure") != PACED or "rate" not in params:
        return []
    count = params["connections"]
    spread = f"{params['rate']:,.0f} requests/s over {count:,} connection{'s' * (count != 1)}"
    if params.get(DERIVED):
        where = (
            "an old point: its rate was derived from the slowest row's closed-loop figure in "
            "the session that measured it, not declared, so its figures compare only within "
            "this table"
        )
    else:
        where = "declared in `bench/registry/echo.py`, the same in every session, quick and full"
    return [
        f"*Offered load:* {spread}, {where}. Every request is scheduled and its latency counted "
        "from its scheduled time; a row whose server completed fewer than 95% of the scheduled "
        "requests could not keep the rate and has no figure."
    ]


def fixed_against_closed(stored_points: dict) -> list[str]:
    """Per row at the headline size and connection count: its server CPU per request at the
    declared fixed load over its closed-loop cost per request, both from one session (the
    figures alone: what makes the difference is not measured here, so no cause is claimed)."""

    def point(paced: bool) -> dict | None:
        for found in stored_points.values():
            params = found["params"]
            if (
                all(params.get(k) == v for k, v in HEADLINE_POINT.items())
                and (params.get("measure") == PACED) == paced
                and (not paced or params.get("rate") == HEADLINE_RATE)
                and not params.get(DERIVED)
                and not params.get(CURVE[0])
                and not params.get(TLS)
            ):
                return found
        return None

    closed, paced = point(False), point(True)
    if closed is None or paced is None:
        return []
    rises = []
    for key, entry in paced["rows"].items():
        other = closed["rows"].get(key)
        if other is None or other["session"] != entry["session"]:
            continue
        # Each side as its own table reads it: a closed-loop row whose load generator saturated
        # has no figure there, so it has none here (its server waited on the generator, and
        # its cost per request is not the loaded cost of the rows beside it).
        fixed = valid_values(entry["reps"], "server_cpu_us")
        loop = valid_values(other["reps"], "server_cpu_us")
        if fixed and loop:
            a, b = statistics.median(fixed), statistics.median(loop)
            rises.append((a / b, a, b, key.replace("/native", " (anchor)").replace("/", " · ")))
    if len(rises) < 2:
        return []
    rises.sort()
    low, high = rises[0], rises[-1]
    return [
        f"*Fixed load against closed loop* ({HEADLINE_AT}, {HEADLINE_RATE:,} requests/s, rows "
        f"measured in one session at both): server CPU per request at the fixed load is "
        f"{low[0]:.1f}× ({low[3]}: {low[1]:.1f} against {low[2]:.1f} µs) to {high[0]:.1f}× "
        f"({high[3]}: {high[1]:.1f} against {high[2]:.1f} µs) its closed-loop cost, median "
        f"{statistics.median(r[0] for r in rises):.1f}× over {len(rises)} rows.",
        "",
    ]


def section_end(stored_points: dict) -> list[str]:
    """After echo's tables: fixed load against closed loop, then TLS's cost per request."""
    from bench.render import tls  # the rendering room; it reads this declaration

    return fixed_against_closed(stored_points) + tls.lines(stored_points)


WORKLOAD = Workload(
    section_end=section_end,
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.measure.echo",
    charts=CHARTS,
    glance=GLANCE,
    columns=columns,
    panel_title=panel_title,
    unavailable=unavailable,
    detail_column=detail_column,
    detail=detail,
    point_notes=point_notes,
    observations=observations,
    bases=(f"{USER_BASE}/native", f"{YARDSTICK}/native"),
    controls=(f"{USER_BASE}/native", f"{YARDSTICK}/native", f"{FLOOR}/native"),
    row_names=(("asyncio/coroutines", "asyncio · coroutines (contract adapter over sock_recv)"),),
)
