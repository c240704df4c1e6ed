"""The headline point: where the lab's figures are read first. Echo at 1 KiB × 100 connections,
in the closed loop and at a fixed offered load, is what the first screen, the verdict, the
cost anatomy, the instruction counts, TLS's cost, the latency ladder and the reproductions all
read; it lives in the core, beside the plan, with the words for an echo server's point, so that
each of those studies names it without naming echo's folder. Echo's declaration measures its
points here (its README, "Method")."""

from __future__ import annotations

import importlib.util

from bench.plan import Row, anchor_names, implemented_styles, variant_rows
from bench.store import DERIVED_RATE

# The echo servers' programs: a loop's server in each style, and the anchors'.
SERVERS = "workloads.echo"
HEADLINE_POINT = {"size": 1024, "connections": 100}
# A fixed-load point's "measure" (a closed-loop point has none, so its key stays as it was).
PACED = "paced"
# The declared offered load, requests/s (echo's README, "Method"): about half what the
# slowest row (asyncio · coroutines) serves closed-loop on a quiet machine (its closed-loop rows
# in reports/results/full/echo.json); bigger messages cost the kernel more. A repetition that
# still falls short while its server was mostly idle is a stall, not a slow server, and its
# table says so.
OFFERED = {1: 4000, "more": 8000}
# A stored fixed-load point from before the rate was declared (its rate was derived from the
# slowest row of its session) carries this parameter: shown with its rate, as an old point.
DERIVED = DERIVED_RATE
# A curve point's extra parameter: the cost chart at declared rates leaves it out.
CURVE = ("curve", True)
# A TLS point's extra parameter (the server and the generator run with --tls). Plain points do
# not carry it, so their keys, and the rows stored under them, stay as they were; everything
# that reads a plain point asks for it absent (PLAIN). TLS is measured at the headline point
# alone, in both measures, each at the same declared rate as its plain twin.
TLS = "tls"
PLAIN = (TLS, None)


def offered_rate(size: int, connections: int) -> int:
    """The declared offered rate at one size and connection count, the same in every run."""
    base = OFFERED[1] if connections == 1 else OFFERED["more"]
    return base if size <= 1024 else base // 2 if size <= 16384 else base // 5


HEADLINE_RATE = offered_rate(HEADLINE_POINT["size"], HEADLINE_POINT["connections"])
# The loaded fixed rate at the headline point, requests/s, declared: eight times the
# idle-service rate, where a request's cost is mostly the server's own work rather than its
# wake-ups, and about the most one load generator core offers here. In the quick latency ladder
# committed at 87cedb4 (reports/results/quick/latency.json, Intel Xeon), uvloop-protocol used
# 46% of its core at 57,851 requests/s and 53% at 80,991, asyncio-protocol 55% and 64%, most
# other rows 60-90%; above that the generator's own core ran out first. A row that cannot keep
# it says so: a result.
LOADED_RATE = 64_000
# The headline fixed-load point's parameters: the declared rate, and never an old point at a
# derived one.
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


# The headline point in words: "1 KiB × 100 connections".
HEADLINE_AT = f"{size_text(HEADLINE_POINT['size'])} × {HEADLINE_POINT['connections']:,} connections"


def server_rows() -> list[Row]:
    """The echo servers measured: every variant in every style echo's programs are written
    in, then the anchor servers whose library loads here."""
    return [
        *variant_rows(implemented_styles(SERVERS)),
        *(Row(name, "native", anchor=True) for name in anchor_names()),
    ]


def servers_unavailable() -> str | None:
    """Why echo's servers cannot run in this tree (None: they can)."""
    if importlib.util.find_spec(f"{SERVERS}.load") is None:
        return "workloads/echo is not in this tree yet"
    return None


def point_title(params: dict) -> str:
    """An echo server point's table heading, from its parameters."""
    count = params["connections"]
    title = f"{size_text(params['size'])} messages, {count:,} connection{'s' * (count != 1)}"
    title += " over TLS" if params.get(TLS) else ""
    if params.get("measure") == PACED:
        rate = f", {params['rate']:,.0f} requests/s" if "rate" in params else ""
        old = " (old point: rate derived, not declared)" if params.get(DERIVED) else ""
        return f"Fixed offered load: {title}{rate}{old}"
    return f"Closed loop, maximum throughput: {title}"
