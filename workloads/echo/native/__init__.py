"""Anchor echo servers: what a user would pick instead of the lab's loops, in native APIs.

Each is the echo server a user who just wants a fast one would write in a loop's own best API
(the lab's echo server runs through the contract instead): the rows the loops are compared
with. These are the only workload files that import a production loop directly; the list of
anchors and what each one is: ``workloads/README.md``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from loops.contract import Unavailable

# name -> (module in this package, function serving until SIGTERM/SIGINT)
SERVERS: dict[str, tuple[str, str]] = {
    "asyncio-streams": ("aio", "serve_asyncio_streams"),
    "asyncio-protocol": ("aio", "serve_asyncio_protocol"),
    "uvloop-streams": ("aio", "serve_uvloop_streams"),
    "uvloop-protocol": ("aio", "serve_uvloop_protocol"),
    "trio-streams": ("trio_streams", "serve"),
    "curio-sockets": ("curio_sockets", "serve"),
    "selectors-floor": ("floor", "serve"),
    "handlers-cookbook": ("handlers_cookbook", "serve"),
}

READ_SIZE = 65536  # bytes asked for per read, as the libraries' own examples do


def server(name: str) -> Callable[..., None]:
    """The serve(host, port, ready, tls=None) function of one anchor (tls: a server
    ssl.SSLContext, served with the anchor's library's own TLS), or a clear error naming them
    (an anchor whose library does not load here raises loops.Unavailable with the reason)."""
    if name not in SERVERS:
        raise LookupError(f"unknown anchor server {name!r}; known: {', '.join(SERVERS)}")
    module, function = SERVERS[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), function)


def unavailable(name: str) -> str | None:
    """Why the anchor `name` cannot run on this interpreter (its library does not load), or
    None: each anchor module fences its library's import as a variant folder does."""
    try:
        server(name)
    except Unavailable as why:
        return str(why)
    return None
