"""Connections: the memory an echo server holds per open connection, idle and after a request.

One repetition: a fresh server on the subject core (any echo row: a variant in a style, or an
anchor) and the memory peer, ``python -m workloads.echo.memory``, on the peer core: one
connection's round trip to warm the server, then N connections, accepted and left idle, then
one 1 KiB request echoed on each. The peer reads the server's resident memory (``VmRSS``)
before the N, with them idle, and after their request: memory per connection is the growth
over the memory before, divided by N.
"""

from __future__ import annotations

from bench.headline import server_rows
from bench.plan import USER_BASE, YARDSTICK, Metric, Point
from bench.study import Study

NAME = "connections"
TITLE = "Memory per connection"
CONNECTIONS = {False: (1_000,), True: (1_000, 10_000)}
SIZE = 1024  # the request each connection sends once, after the idle reading
REPETITIONS = 3

METRICS = (
    Metric("active_bytes_per_connection", "after one request (bytes)", higher_is_better=False),
    Metric("idle_bytes_per_connection", "idle (bytes)", higher_is_better=False),
    Metric("server_rss_mib", "server resident (MiB)", higher_is_better=False, digits=1),
)
HEADLINE = "active_bytes_per_connection"
DESCRIPTION = f"""\
What an open connection costs the server in memory, per echo row. A fresh server is warmed by
one connection's round trip; then N connections are opened and accepted and stay idle, and
then each sends one {SIZE:,} B request and reads its echo. The server's resident memory is read
before the N, with them idle, and after their request: **memory per connection** is the growth
over the memory before, divided by N, idle and after one request (a buffer kept per connection
shows in the second). Resident memory is what the process holds; the kernel's own memory for a
connection (its socket buffers) and for a thread (its kernel stack) is not in it, so a design
that keeps its state in the kernel looks lighter here than it is. A server the machine stops
before N (select()'s 1,024 descriptors; a thread per connection past the kernel's thread
limits) fails its row, saying why.
""".replace("\n", " ")


def points(full: bool) -> list[Point]:
    every_row = tuple(server_rows())
    return [
        Point(NAME, (("connections", n), ("size", SIZE)), every_row, REPETITIONS)
        for n in CONNECTIONS[full]
    ]


def point_title(params: dict) -> str:
    return f"{params['connections']:,} connections, idle then after one request"


STUDY = Study(
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.studies.connections.measure",
    bases=(f"{USER_BASE}/native", f"{YARDSTICK}/native"),
    timed=lambda params: False,  # sizes: the neighbours do not move them
)
