"""The lab's task API over Future, Task and the reactor: one namespace, two styles.

Every call that may suspend is a generator function marked with ``types.coroutine``. A plain
generator can ``yield from`` it (the generators style) and a coroutine can ``await`` it (the
coroutines style); either way the Future it finally yields reaches the Task that drives the
outermost generator or coroutine, which is all the loop needs. So ``VARIANT.generators`` and
``VARIANT.coroutines`` are this same module.

Socket calls try the operation first and wait for readiness only on BlockingIOError (except a
recv on a socket whose last try found nothing: see ``_drained``).
Addresses given to ``connect`` and ``sendto`` are not resolved asynchronously: pass IP
addresses (as the lab's workloads do) or accept a blocking DNS lookup.
"""

from __future__ import annotations

import itertools
import os
import socket
import types
import weakref
from collections.abc import Coroutine, Generator
from selectors import EVENT_READ, EVENT_WRITE
from typing import Any

from loops.contract import check_nonblocking
from loops.futures.futures import _PENDING, CancelledError, Future, InvalidStateError, Task
from loops.futures.queues import Queue, QueueEmpty, QueueFull
from loops.futures.reactor import Loop, _running, get_running_loop, loop_is_running

# twin of loops/traps/api.py: __all__
__all__ = [
    "CancelledError",
    "Future",
    "InvalidStateError",
    "Queue",
    "QueueEmpty",
    "QueueFull",
    "Task",
    "accept",
    "cancel",
    "connect",
    "gather",
    "get_running_loop",
    "join",
    "now",
    "recv",
    "recvfrom",
    "run",
    "run_in_thread",
    "sendall",
    "sendto",
    "sleep",
    "spawn",
    "timeout_after",
]

_COROUTINE_TYPES = (types.GeneratorType, types.CoroutineType)


def _checked(coro: Any, caller: str) -> Any:
    """coro if a task can drive it (a generator or coroutine object not yet finished), else a
    clear TypeError (RuntimeError for a finished generator)."""
    if type(coro) in _COROUTINE_TYPES or isinstance(coro, Generator | Coroutine):
        if getattr(coro, "gi_frame", coro) is None:  # a generator that already ran to its end
            # Python refuses a finished coroutine with RuntimeError; a finished generator
            # would stop at once, as if it returned None: refuse it the same way.
            raise RuntimeError(f"{caller}(): cannot reuse {coro!r}, which already finished")
        return coro
    hint = " (did you forget to call it?)" if callable(coro) else ""
    raise TypeError(f"{caller}() needs a generator or coroutine object, got {coro!r}{hint}")


def _checked_task(task: Any, caller: str) -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"{caller}() needs a task returned by spawn(), got {task!r}")
    return task


# -- running ------------------------------------------------------------------------------


def run(coro: Any) -> Any:
    """Run coro on a new loop until it finishes; its result, or its exception re-raised.

    Tasks still running at the end are cancelled and run until they stop; then the loop's
    threads, selector and sockets are released.
    """
    _checked(coro, "run")
    if loop_is_running():
        coro.close()
        raise RuntimeError("run() cannot be called from a running loop: spawn() the work instead")
    loop = Loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            loop.cancel_all_tasks()
        finally:
            loop.close()


def now() -> float:
    """The running loop's clock, in seconds."""
    return get_running_loop().time()


@types.coroutine
def sleep(seconds: float) -> Generator[Any, Any, None]:
    """Suspend the calling task for at least seconds; 0 just lets the other tasks run."""
    if seconds <= 0:
        yield  # a bare yield: the task goes to the back of the ready queue
        return None
    return (yield from get_running_loop().timer(seconds))


# -- tasks --------------------------------------------------------------------------------


@types.coroutine
def spawn(coro: Any) -> Generator[Any, Any, Task]:
    """Start coro as a concurrent task; returns the task (it first runs at the next turn)."""
    return Task(_checked(coro, "spawn"), get_running_loop())
    yield  # never reached: it makes spawn a generator, awaitable like every other call


@types.coroutine
def join(task: Task) -> Generator[Any, Any, Any]:
    """Wait for task; its result, or its exception (CancelledError if cancelled) re-raised."""
    return (yield from _checked_task(task, "join"))


@types.coroutine
def cancel(task: Task) -> Generator[Any, Any, None]:
    """Cancel task and wait until it has ended (its outcome is join()'s business)."""
    _checked_task(task, "cancel").cancel()
    if task._state is _PENDING:
        ended = Future(task._loop)
        task.add_done_callback(lambda _: ended._state is _PENDING and ended.set_result(None))
        yield from ended


class _Deadline:
    """The callback of a timeout's timer: cancels the task unless the timeout was left."""

    __slots__ = ("expired", "task")

    def __init__(self, task: Task) -> None:
        self.task: Task | None = task  # None once timeout_after has returned
        self.expired = False  # the timer fired and cancelled the task

    def __call__(self, timer: Future) -> None:
        if self.task is not None and not timer.cancelled():
            self.expired = True
            self.task.cancel()


@types.coroutine
def timeout_after(seconds: float, coro: Any) -> Generator[Any, Any, Any]:
    """Run coro in the calling task; after seconds, cancel it and raise TimeoutError.

    The timer cancels the task; the CancelledError that unwinds coro is turned into a
    TimeoutError here, unless someone else also cancelled the task (asyncio.timeout's rule,
    counted with Task.uncancel).
    """
    if not isinstance(coro, Future):
        _checked(coro, "timeout_after")
    if not isinstance(seconds, int | float):
        if hasattr(coro, "close"):
            coro.close()
        raise TypeError(f"timeout_after() needs a number of seconds, got {seconds!r}")
    loop = get_running_loop()
    task = loop._current
    deadline = _Deadline(task)
    timer = loop.timer(seconds, deadline=True)  # acts in deadline order with every sleep
    timer.add_done_callback(deadline)
    try:
        return (yield from coro)
    except CancelledError as error:
        if deadline.expired:
            deadline.expired = False
            if task.uncancel() == 0:
                raise TimeoutError(f"timed out after {seconds} s") from error
        raise
    finally:
        deadline.task = None
        timer.remove_done_callback(deadline)
        timer.cancel()
        if deadline.expired:
            task.uncancel()  # the timer fired but the work finished before it was hit


@types.coroutine
def gather(*awaitables: Any) -> Generator[Any, Any, list[Any]]:
    """Run awaitables concurrently; their results in order.

    The first failure (or cancellation) is raised at once and the others are cancelled, so
    no task outlives the gather.
    """
    loop = get_running_loop()
    children = [
        a if isinstance(a, Future) else Task(_checked(a, "gather"), loop) for a in awaitables
    ]
    if not children:
        return []
    outcome = Future(loop)
    remaining = len(children)

    def on_child_done(child: Future) -> None:
        nonlocal remaining
        if outcome._state is not _PENDING:
            return
        if child.cancelled():
            outcome.set_exception(CancelledError())
        elif child.exception() is not None:
            outcome.set_exception(child.exception())
        else:
            remaining -= 1
            if remaining == 0:
                outcome.set_result([c._result for c in children])

    for child in children:
        child.add_done_callback(on_child_done)
    try:
        return (yield from outcome)
    finally:
        for child in children:
            child.cancel()


# -- sockets ------------------------------------------------------------------------------


@types.coroutine
def _retry(sock: socket.socket, event: int, call: Any, *args: Any) -> Generator[Any, Any, Any]:
    """call(*args) on non-blocking sock, waiting for it to be ready for event after each
    BlockingIOError (the call is tried first: most of the time it just succeeds)."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    idle = -1  # wake-ups in this call that found nothing (-1: not woken yet): _woken_for_nothing
    while True:
        try:
            return call(*args)
        except BlockingIOError:
            idle = _woken_for_nothing(idle) if idle >= 0 else 0
        yield from get_running_loop().wait(sock, event)


# twin of loops/traps/api.py: WAKEUPS_FOR_NOTHING_BEFORE_REBUILD
# The rare path, fenced here: a socket call that fails with EAGAIN right after the loop woke
# it for that socket was woken for nothing. Level-triggered readiness that is real cannot do
# that twice in a row (the data or the room is there until someone takes it; only another
# process sharing the socket can), but a ghost can, forever: a socket closed behind a dup,
# whose number a new socket reuses, stays in epoll under that number (see Loop._drop_ghost),
# and its readiness looks like the new socket's. So the second wake-up for nothing in one call
# has the loop rebuild its selector from its live registrations, which drops the ghost; once
# per call, so a socket shared with another process costs one rebuild per contested call, not
# one per wake-up. Costs nothing on the common path: the count lives in the calling frame and
# moves only after an EAGAIN that followed a wait.
WAKEUPS_FOR_NOTHING_BEFORE_REBUILD = 2


# twin of loops/traps/api.py: _woken_for_nothing
def _woken_for_nothing(idle: int) -> int:
    """Count one more wake-up that found nothing; at the limit, drop ghosts (see above)."""
    idle += 1
    if idle == WAKEUPS_FOR_NOTHING_BEFORE_REBUILD:
        get_running_loop().drop_ghosts()
    return idle


TRY_FIRST_EVERY = 8  # of a drained socket's recvs, one in this many tries first anyway


# twin of loops/traps/api.py: _drained
# Speed trick, fenced here: the fds whose last try at a recv found nothing. On a
# request/response connection the recv right after our reply finds nothing (the peer answers
# only once it has the reply): a syscall and a BlockingIOError per request. So a socket whose
# try found nothing is drained, and its recvs wait for readiness first instead (always correct:
# epoll is level-triggered, data already there wakes us at once). One drained recv in
# TRY_FIRST_EVERY (counted across sockets) tries first anyway, and a try that finds data puts
# the socket back on the optimistic path: where the peer is ahead (a stream, a pipelining
# client, a server slower than its clients) trying first does not fail, and waiting would cost
# a turn of the loop per call. Keyed by fd for a cheap lookup, holding a weak reference so
# that a socket reusing a closed socket's fd starts optimistic and no socket is kept alive.
# Measured (echo, 1 KiB x 100 connections): the folder README has the figures and the command.
_drained: dict[int, weakref.ref] = {}  # fd -> the socket whose last try found nothing
_probes = itertools.count(1)  # drained recvs so far (TRY_FIRST_EVERY)


@types.coroutine
def recv(sock: socket.socket, n: int) -> Generator[Any, Any, bytes]:
    """Receive up to n bytes; b'' at end of stream."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    fd = sock.fileno()
    drained = _drained.get(fd)
    idle = -1  # wake-ups in this call that found nothing (-1: not woken yet): _woken_for_nothing
    if drained is not None and drained() is sock and next(_probes) % TRY_FIRST_EVERY:
        yield from (_running.loop or get_running_loop()).wait(sock, EVENT_READ)  # (_drained)
        idle = 0
    while True:
        try:
            data = sock.recv(n)
        except BlockingIOError:
            if idle < 0:  # a try found nothing: wait first from now on (_drained)
                _drained[fd] = weakref.ref(sock)
            idle = _woken_for_nothing(idle) if idle >= 0 else 0
            yield from (_running.loop or get_running_loop()).wait(sock, EVENT_READ)
            continue
        if idle < 0 and drained is not None:  # a try found data: optimistic again
            del _drained[fd]
        return data


def recvfrom(sock: socket.socket, n: int) -> Generator[Any, Any, tuple[bytes, Any]]:
    """Receive a datagram of up to n bytes: (data, sender's address)."""
    return _retry(sock, EVENT_READ, sock.recvfrom, n)


def sendto(sock: socket.socket, data: bytes, address: Any) -> Generator[Any, Any, int]:
    """Send a datagram to address; the number of bytes sent."""
    return _retry(sock, EVENT_WRITE, sock.sendto, data, address)


@types.coroutine
def accept(sock: socket.socket) -> Generator[Any, Any, tuple[socket.socket, Any]]:
    """Accept a connection: (a non-blocking socket, the peer's address)."""
    conn, address = yield from _retry(sock, EVENT_READ, sock.accept)
    conn.setblocking(False)
    return conn, address


@types.coroutine
def sendall(sock: socket.socket, data: bytes) -> Generator[Any, Any, None]:
    """Send all of data, waiting for the socket to drain when its buffer is full."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    if sent == (len(data) if isinstance(data, bytes | bytearray) else memoryview(data).nbytes):
        return
    idle = 0  # wake-ups that found no room (see _woken_for_nothing)
    with memoryview(data) as view, view.cast("B") as octets:
        while sent < len(octets):
            yield from get_running_loop().wait(sock, EVENT_WRITE)
            try:
                sent += sock.send(octets[sent:])
            except BlockingIOError:  # woken for nothing: wait again
                idle = _woken_for_nothing(idle)


@types.coroutine
def connect(sock: socket.socket, address: Any) -> Generator[Any, Any, None]:
    """Connect sock to address, waiting for the handshake to finish."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    try:
        sock.connect(address)
        return
    except BlockingIOError:
        pass  # EINPROGRESS: the socket turns writable when the handshake is over
    yield from get_running_loop().wait(sock, EVENT_WRITE)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}")


# -- threads ------------------------------------------------------------------------------


@types.coroutine
def run_in_thread(fn: Any, *args: Any) -> Generator[Any, Any, Any]:
    """Run fn(*args) in a worker thread; its result, or its exception re-raised."""
    if not callable(fn):
        raise TypeError(f"run_in_thread() needs a callable, got {fn!r}")
    return (yield from get_running_loop().run_in_thread(fn, *args))
