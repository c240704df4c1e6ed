"""The callbacks reactor as asyncio's event loop: ``asyncio.run(main(), loop_factory=...)``.

This module is the drop-in's face: :func:`new_event_loop`, the zero-argument factory that
``asyncio.run``, ``asyncio.Runner`` and ``uvicorn --loop loops.callbacks.dropin:new_event_loop``
take, and the two classes a program may meet. The loop is built in a module per seam:

- ``asyncio_loop.py``: :class:`AsyncioLoop`, the loop proper (running coroutines, the
  async-generator hooks, executors, subprocesses, signals), the reactor subclassed;
- ``sockets.py``: the ``sock_*`` coroutines, which lose nothing when cancelled (the task calls
  the socket after it resumes; the readiness callback only wakes it), and ``sock_sendfile``;
- ``connections.py``: ``create_connection`` and its siblings, pipes, ``start_tls``,
  ``sendfile``;
- ``servers.py``: ``create_server``, ``create_unix_server`` and :class:`Server` with its accept
  path;
- ``datagrams.py``: ``create_datagram_endpoint`` and its transport;
- ``transports.py``, ``tls.py``, ``subprocesses.py``: the transports they hand out.

Where it follows asyncio on purpose (argument rules, exception and log messages, the order of
events) and where CPython's wording is reused is said in each module's docstring; the
notice that reuse needs is ``LICENSE-PSF`` in this folder.
"""

from __future__ import annotations

from loops.callbacks.asyncio_loop import AsyncioLoop
from loops.callbacks.servers import Server

__all__ = ["AsyncioLoop", "Server", "new_event_loop"]


def new_event_loop() -> AsyncioLoop:
    """A new loop: the zero-argument factory ``asyncio.run``, ``Runner`` and uvicorn take."""
    return AsyncioLoop()
