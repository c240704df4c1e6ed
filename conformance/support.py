"""Loop-free helpers the scenarios share: sockets, guards, and generic process measurements.

Everything here measures a loop from the outside, the way a user could: open fds from
``/proc/self/fd``, which fds an epoll instance still watches from ``/proc/self/fdinfo``, memory
from ``tracemalloc``, CPU from ``time.process_time``. Nothing reaches into a loop's internals,
so the same measurement is fair to asyncio, trio and a fifty-line home-made loop alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import socket
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any

# A guard, never a timing claim: scenarios that wait for something that may never happen on a
# broken loop give up after this long and report what they saw, so the property fails with a
# readable outcome instead of a hang. Generous, because this machine is shared.
SAFETY = 4.0

# The coarsest clock among the reference loops: libuv (uvloop) keeps time, and rounds delays,
# in whole milliseconds. "Never early" is checked within this resolution.
CLOCK_RESOLUTION = 0.001

# Interest bits of an epoll registration (EPOLLIN | EPOLLPRI | EPOLLOUT | EPOLLRDHUP). A
# registration without them (e.g. trio's disarmed EPOLLONESHOT) watches nothing.
_EPOLL_INTEREST = 0x1 | 0x2 | 0x4 | 0x2000


# The task factories a property on asyncio's API is played under: asyncio's default (a new task
# first runs on a later turn of the loop) and, from Python 3.12, eager (it runs inside
# create_task until it first waits), as CPython's own TaskGroup tests play every case.
FACTORIES = ("lazy", "eager") if hasattr(asyncio, "eager_task_factory") else ("lazy",)


def use_factory(kind: str) -> None:
    """Make the running asyncio loop's new tasks lazy or eager, whatever its default."""
    factory = _eager if kind == "eager" else None
    asyncio.get_running_loop().set_task_factory(factory)


def _eager(loop, coro, *, eager_start=None, **options):
    # uvloop 0.23 hands a task factory `eager_start` (uvloop/loop.pyx, Loop.create_task), which
    # CPython 3.13.0's eager_task_factory does not take (TypeError: the gap the anyio suite's
    # TOML names); the properties played under this factory are about cancellation, so the
    # factory takes the keyword and makes every task eager, as its name says.
    return asyncio.eager_task_factory(loop, coro, **options)


def nonblocking_pair() -> tuple[socket.socket, socket.socket]:
    """A connected pair of non-blocking stream sockets."""
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def new_sockets_work(loop) -> bytes | None:
    """On a callbacks loop after a fault: do new sockets (most likely reusing the numbers the
    fault freed) still carry data? What a reader of them received, or None."""
    c, d = nonblocking_pair()
    got = []

    def on_readable():
        got.append(d.recv(100))
        loop.stop()

    loop.add_reader(d, on_readable)
    c.send(b"fresh")
    loop.call_later(SAFETY, loop.stop)
    try:
        loop.run_forever()
    finally:
        loop.remove_reader(d)
        c.close()
        d.close()
    return got[0] if got else None


def nonblocking_socket(kind: int = socket.SOCK_STREAM) -> socket.socket:
    """A fresh non-blocking IPv4 socket."""
    sock = socket.socket(socket.AF_INET, kind)
    sock.setblocking(False)
    return sock


def listener(backlog: int = 128) -> socket.socket:
    """A non-blocking TCP socket listening on a free loopback port."""
    sock = nonblocking_socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(backlog)
    return sock


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fill_send_buffer(sock: socket.socket) -> int:
    """Write to sock until the kernel refuses more; returns the bytes written."""
    written = 0
    chunk = b"\0" * 65536
    with contextlib.suppress(BlockingIOError):
        while True:
            written += sock.send(chunk)
    return written


def drain(sock: socket.socket) -> int:
    """Read everything sock has buffered right now; returns the bytes read."""
    read = 0
    with contextlib.suppress(BlockingIOError):
        while data := sock.recv(1 << 20):
            read += len(data)
    return read


def open_fds() -> set[int]:
    """The file descriptors this process has open."""
    return {int(fd) for fd in os.listdir("/proc/self/fd")}


def watched(fds: set[int]) -> set[int]:
    """Those of `fds` that any epoll instance in this process still watches for readiness."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "eventpoll" not in os.readlink(f"/proc/self/fd/{fd}"):
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                lines = info.readlines()
        except OSError:  # closed meanwhile (e.g. the listing's own fd)
            continue
        for line in lines:
            if line.startswith("tfd:"):
                fields = line.split()  # tfd: N events: HEX data: ...
                target, events = int(fields[1]), int(fields[3], 16)
                if target in fds and events & _EPOLL_INTEREST:
                    found.add(target)
    return found


@contextlib.contextmanager
def heap_growth() -> Iterator[list[int]]:
    """Bytes of Python memory (tracemalloc) still allocated after the block than before.

    Yields a list that holds the growth once the block exits (a list, so a scenario that
    awaits inside the block can read it afterwards).
    """
    already = tracemalloc.is_tracing()
    if not already:
        tracemalloc.start()
    result: list[int] = []
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        yield result
        gc.collect()
        result.append(tracemalloc.get_traced_memory()[0] - before)
    finally:
        if not already:
            tracemalloc.stop()


@contextlib.contextmanager
def recursion_limit(limit: int) -> Iterator[None]:
    """Raise the interpreter's recursion limit for the block (never lowers it)."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(previous)


def outcome(call: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """("returned", value) or ("raised", exception) for call(*args), BaseExceptions included."""
    try:
        return ("returned", call(*args))
    except BaseException as error:  # KeyboardInterrupt and SystemExit are outcomes here too
        return ("raised", error)


def frame_names(error: BaseException) -> list[str]:
    """The function names in error's traceback, outermost first."""
    names = []
    tb = error.__traceback__
    while tb is not None:
        names.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    return names
