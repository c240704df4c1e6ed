"""Reference: uvloop, asyncio's API implemented in Cython over libuv.

uvloop leaves ``sock_recvfrom``/``sock_sendto`` unimplemented (NotImplementedError), so the
coroutines style's datagram calls try the socket first and wait on ``add_reader``/
``add_writer`` readiness, which is what asyncio's own versions do.
"""

import asyncio

from loops._aio import callbacks_factory, coroutines_namespace
from loops._sockets import socket_calls
from loops.contract import EVERY_CAPABILITY, Variant, requires

with requires("uvloop"):  # libuv wheels exist for CPython on Linux and macOS only
    import uvloop

_Loop = callbacks_factory(uvloop.Loop)


def _ready(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


async def _wait_readable(sock) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(sock, _ready, ready)
    try:
        await ready
    finally:
        loop.remove_reader(sock)


async def _wait_writable(sock) -> None:
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_writer(sock, _ready, ready)
    try:
        await ready
    finally:
        loop.remove_writer(sock)


_coroutines = coroutines_namespace(_Loop)
_datagrams = socket_calls(_wait_readable, _wait_writable)
_coroutines.recvfrom, _coroutines.sendto = _datagrams.recvfrom, _datagrams.sendto

VARIANT = Variant(
    name="uvloop",
    summary="uvloop: asyncio's API in Cython over libuv (the fast production loop)",
    lineage="MagicStack's uvloop: libuv's event loop behind asyncio's AbstractEventLoop",
    # uvloop rounds deadlines to milliseconds: equal deadlines run in no set order.
    capabilities=EVERY_CAPABILITY - {"timer-fifo"},
    callbacks=_Loop,
    coroutines=_coroutines,
    asyncio_loop=uvloop.new_event_loop,
    reference=True,
    io_model="readiness",
    waits_in="epoll, in libuv's `uv__io_poll` (libuv's `src/unix/linux.c`)",
    wake_up=(
        "libuv's `uv_async_send`, an eventfd on Linux (`uvloop/loop.pyx`: "
        "`call_soon_threadsafe` calls `handler_async.send`; `uvloop/handles/async_.pyx`)"
    ),
    thread_entries=("call_soon_threadsafe", "run_in_thread"),
    cancellation="asyncio's own `Task` (`asyncio/tasks.py`), so as asyncio",
    reporting="epoll-level (libuv's `src/unix/linux.c`: `uv__io_poll`)",
    ghost_fds="spins",
    socket_call_first="registers (`uvloop/loop.pyx`: `sock_recv`, `_add_reader`)",
)
