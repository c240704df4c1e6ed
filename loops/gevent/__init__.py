"""Reference: gevent, greenlets on a libev hub (blocking style), never monkey-patched.

Thin adapter over gevent's own API, in the lab's own process: no ``gevent.monkey`` call, so the
standard library stays as it is for every other variant the suite or the bench loads beside it.
Tasks are ``gevent.Greenlet``s (``spawn``, ``kill``, ``get``), sleep is ``gevent.sleep``, the
Queue is ``gevent.queue.JoinableQueue``, timeouts are ``gevent.Timeout`` and thread work goes to
the hub's threadpool. A socket call does what gevent's cooperative socket does
(``gevent/_socketcommon.py``: ``recv``): try the call on a non-blocking socket, and on
``EWOULDBLOCK`` wait on the socket's libev io watcher through the hub; the adapter keeps one
read and one write watcher per socket, as gevent's socket object does, instead of wrapping the
caller's socket in a second socket object that would close its fd twice.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
import weakref
from types import SimpleNamespace
from typing import Any

from loops.contract import EVERY_CAPABILITY, Variant, check_function, check_seconds, requires

with requires("gevent"):
    import gevent
    import gevent.exceptions
    import gevent.queue
    import gevent.socket
    from gevent import GreenletExit

CancelledError = GreenletExit  # what gevent raises in a killed greenlet


class Expired(GreenletExit):
    """timeout_after's cancellation (a GreenletExit, so the inner work sees CancelledError);
    it becomes TimeoutError where the timeout was set."""


_state = threading.local()  # .tasks: the running run()'s live greenlets, per OS thread (hub)
_watchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # sock -> (fd, read, write)


def _tasks() -> set:
    tasks = getattr(_state, "tasks", None)
    if tasks is None:
        raise RuntimeError("no task here: call this from a function that run() or spawn() runs")
    return tasks


def run(fn, *args):
    """Run fn(*args) as a greenlet until it ends; then kill the greenlets it left running."""
    leftover = getattr(_state, "tasks", None)
    if leftover is not None:
        if getattr(_state, "caller", None) is not gevent.getcurrent():
            raise RuntimeError("run() called inside a running task: spawn() the function instead")
        # The greenlet that ran the last run calls again, so that run is over: a Ctrl-C as its
        # finally began (before the inner try was set up) skipped the cleanup. Finish it here.
        _state.tasks = None
        gevent.killall(list(leftover), block=True)
    check_function(fn, "run")
    _state.caller = gevent.getcurrent()  # before tasks: a run is active only once both are set
    _state.tasks = tasks = set()
    try:
        main = _spawn(tasks, fn, args)
        main.join()
        return main.get(block=False)
    except gevent.exceptions.LoopExit as error:  # gevent's own deadlock detection
        raise RuntimeError(f"deadlock: {error}") from error
    finally:
        try:
            gevent.killall(list(tasks), block=True)
        finally:
            _state.tasks = None


def _spawn(tasks: set, fn, args) -> gevent.Greenlet:
    task = gevent.spawn(fn, *args)
    tasks.add(task)
    task.link(tasks.discard)
    return task


def spawn(fn, *args) -> gevent.Greenlet:
    tasks = _tasks()
    check_function(fn, "spawn")
    return _spawn(tasks, fn, args)


def _check_task(task: Any) -> gevent.Greenlet:
    if not isinstance(task, gevent.Greenlet):
        raise TypeError(f"not a task of this loop: {task!r}")
    if task not in _tasks() and not task.ready():
        raise RuntimeError(f"a task of another run: {task!r}")
    return task


def join(task):
    """Wait for task; its result, or its error raised (the GreenletExit of a killed one)."""
    value = _check_task(task).get()
    if isinstance(value, GreenletExit):  # gevent counts a kill as success, its value the error
        raise value
    return value


def cancel(task) -> None:
    _check_task(task).kill(CancelledError, block=True)


def sleep(seconds: float) -> None:
    gevent.sleep(max(check_seconds(seconds), 0))


def timeout_after(seconds: float, fn, *args):
    check_function(fn, "timeout_after")
    if check_seconds(seconds) == math.inf:
        return fn(*args)
    expired = Expired(f"timed out after {seconds} s")
    timeout = gevent.Timeout(max(seconds, 0), expired)
    timeout.start()
    try:
        return fn(*args)
    except Expired as error:
        if error is not expired:
            raise
        raise TimeoutError(f"timed out after {seconds} s") from None
    finally:
        timeout.close()


def run_in_thread(fn, *args):
    check_function(fn, "run_in_thread")
    return gevent.get_hub().threadpool.apply(fn, args)


# -- sockets: gevent's cooperative socket calls, on the caller's own socket --------------------


def _wait(sock: socket.socket, reading: bool) -> None:
    fd = sock.fileno()
    if fd < 0:
        raise OSError(9, "cannot wait on a closed socket")
    entry = _watchers.get(sock)
    if entry is None or entry[0] != fd:
        loop = gevent.get_hub().loop
        entry = _watchers[sock] = (fd, loop.io(fd, 1), loop.io(fd, 2))
    gevent.socket.wait(entry[1] if reading else entry[2])


def _nonblocking(sock: socket.socket) -> None:
    if sock.gettimeout() != 0:  # as gevent's socket does to the socket it wraps
        sock.setblocking(False)


def recv(sock: socket.socket, n: int) -> bytes:
    _nonblocking(sock)
    while True:
        try:
            return sock.recv(n)
        except BlockingIOError:
            _wait(sock, True)


def sendall(sock: socket.socket, data: bytes) -> None:
    _nonblocking(sock)
    view = memoryview(data).cast("B")
    while view:
        try:
            view = view[sock.send(view) :]
        except BlockingIOError:
            _wait(sock, False)


def accept(sock: socket.socket):
    _nonblocking(sock)
    while True:
        try:
            conn, address = sock.accept()
        except BlockingIOError:
            _wait(sock, True)
        else:
            conn.setblocking(False)
            return conn, address


def connect(sock: socket.socket, address) -> None:
    _nonblocking(sock)
    try:
        sock.connect(address)
        return
    except BlockingIOError:
        _wait(sock, False)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}")


def recvfrom(sock: socket.socket, n: int):
    _nonblocking(sock)
    while True:
        try:
            return sock.recvfrom(n)
        except BlockingIOError:
            _wait(sock, True)


def sendto(sock: socket.socket, data: bytes, address) -> int:
    _nonblocking(sock)
    while True:
        try:
            return sock.sendto(data, address)
        except BlockingIOError:
            _wait(sock, False)


blocking = SimpleNamespace(
    run=run,
    now=time.monotonic,
    CancelledError=CancelledError,
    sleep=sleep,
    spawn=spawn,
    join=join,
    cancel=cancel,
    timeout_after=timeout_after,
    run_in_thread=run_in_thread,
    Queue=gevent.queue.JoinableQueue,
    recv=recv,
    sendall=sendall,
    accept=accept,
    connect=connect,
    recvfrom=recvfrom,
    sendto=sendto,
)

VARIANT = Variant(
    name="gevent",
    summary="gevent: greenlets switched implicitly on a libev hub (greenlets follows it)",
    lineage="Denis Bilenko's gevent (after eventlet): greenlet tasks, a libev hub, a cooperative "
    "socket that waits on io watchers",
    capabilities=EVERY_CAPABILITY,
    blocking=blocking,
    reference=True,
    io_model="readiness",
    waits_in="epoll, in libev's loop, which the hub's greenlet runs (`gevent/hub.py`: "
    "`Hub.run` calls `loop.run`)",
    wake_up="libev's async watcher, an eventfd on Linux (`gevent/threadpool.py`: "
    "`ThreadResult` sends its `async_watcher`)",
    thread_entries=("run_in_thread",),
    cancellation=(
        "`Greenlet.kill` throws `GreenletExit` into the greenlet where it waits on the hub "
        "(`gevent/greenlet.py`)"
    ),
    reporting="epoll-level (libev's epoll backend: `libev/ev_epoll.c`: `epoll_modify`)",
    ghost_fds=(
        "rebuilds (libev's `libev/ev_epoll.c`: `epoll_poll` sets `postfork` to recreate its epoll "
        "set on a notification of a stale generation)"
    ),
    socket_call_first="tries (as gevent's socket, `gevent/_socketcommon.py`: `recv`, `_wait`)",
)
