"""Anchor echo servers: what a user would pick instead of the lab's loops, in native APIs.

The lab's echo server (``workloads/echo``) is written once per style against the lab's
contract, so on asyncio it runs through the contract's thin adapter. A user who just wants a
fast echo server would instead write it in the loop's own best API. These servers are those
rows of the comparison, each as its library's documentation would have it:

- ``asyncio-streams`` and ``asyncio-protocol``: ``asyncio.start_server`` with
  ``StreamReader``/``StreamWriter``, and a ``Protocol`` over transports (the fastest asyncio);
- ``uvloop-streams`` and ``uvloop-protocol``: the same two programs on uvloop's loop;
- ``trio-streams``: ``trio.serve_tcp`` with ``receive_some``/``send_all``;
- ``curio-sockets``: curio's socket wrappers, ``recv``/``sendall``, one task per client;
- ``selectors-floor``: no abstraction at all, one ``selectors`` loop with a callback per
  ready socket: the pure-Python floor any loop written in Python pays at least;
- ``handlers-cookbook``: the lab's own ``handlers`` loop in its own idiom (the Python
  Cookbook's application handlers, recipe 11.12), beside the same loop through the contract.

These are the only workload files that import a production loop directly: naming the loop
and using its own API is what an anchor is (``handlers-cookbook`` gets its loop by discovery,
as every workload must, and then uses its ``add_handler``). Every server echoes bytes as they
come, applies backpressure (a client that does not read stalls only its own connection), prints
``listening on HOST:PORT`` once it accepts, and on SIGTERM or SIGINT closes every socket and
exits 0.
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


def server(name: str) -> Callable[[str, int, Callable[[int], None]], None]:
    """The serve(host, port, ready) function of one anchor, or a clear error naming them
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
