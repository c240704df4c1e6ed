"""The blocking style on the hub: plain calls that switch to the hub where they would block.

Each socket call tries first and waits for readiness only on ``BlockingIOError``; the socket
is put in non-blocking mode underneath on its first call (as gevent's socket does to the one
it wraps), so a program may hand in sockets in either mode. Names are the coroutines style's.
"""

from __future__ import annotations

import collections
import math
import os
import socket
import time
import weakref
from collections.abc import Callable
from typing import Any

import greenlet

from loops._signals import signals_wake
from loops.contract import check_function, check_seconds
from loops.greenlets.hub import READ, WRITE, CancelledError, Expired, Hub, Task

now = time.monotonic


def _current() -> Task:
    glet = greenlet.getcurrent()
    task = getattr(glet, "lab_task", None)
    if task is None:
        raise RuntimeError("no task here: call this from a function that run() or spawn() runs")
    return task


# ---------------------------------------------------------------------- tasks


def run(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) as the first task on a new hub; its result, or its error raised."""
    if getattr(greenlet.getcurrent(), "lab_task", None) is not None:
        raise RuntimeError("run() called inside a running task: spawn() the function instead")
    check_function(fn, "run")
    hub = Hub()
    hub.main = _new_task(hub, fn, args)
    try:
        # A signal wakes the poll, so its Python handler runs at once (loops/_signals.py).
        hub.open_wake_up()
        with signals_wake(hub.wake_fd):
            hub.glet.switch()  # returns when the hub's loop ends: the main task and the rest done
    finally:
        hub.close()
    if hub.main.error is not None:
        raise hub.main.error
    return hub.main.result


def _new_task(hub: Hub, fn: Callable[..., Any], args: tuple) -> Task:
    task = Task(hub, fn, args)
    task.glet.lab_task = task
    hub.tasks.add(task)
    hub.ready.append(task)
    return task


def spawn(fn: Callable[..., Any], *args: Any) -> Task:
    """Start fn(*args) as a new greenlet; it first runs in the hub's next batch."""
    hub = _current().hub
    check_function(fn, "spawn")
    return _new_task(hub, fn, args)


def _check_task(task: Any) -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"not a task of this loop: {task!r}")
    if task.hub is not _current().hub:
        raise RuntimeError(f"a task of another run: {task!r}")
    return task


def _wait_end(task: Task) -> None:
    me = _current()
    while not task.done:
        task.joiners.append(me)
        try:
            me.hub.suspend(me, lambda: task.joiners.remove(me))
        finally:
            if me in task.joiners:
                task.joiners.remove(me)


def join(task: Task) -> Any:
    """Wait for task to end; its result, or its error raised."""
    _wait_end(_check_task(task))
    if task.error is not None:
        raise task.error
    return task.result


def cancel(task: Task) -> None:
    """Raise CancelledError in task where it waits, then wait for it to end."""
    if _check_task(task) is _current():
        raise RuntimeError("a task cannot cancel itself: raise instead")
    task.hub.interrupt(task, CancelledError("cancelled"))
    _wait_end(task)


def sleep(seconds: float) -> None:
    """Suspend the task on a timer; sleep(0) goes to the back of the ready queue."""
    task = _current()
    hub = task.hub
    if check_seconds(seconds) <= 0:
        hub.ready.append(task)
        hub.suspend(task, lambda: hub.ready.remove(task))
        return
    if math.isinf(seconds):  # no timer: only a cancel or a timeout ends it
        hub.suspend(task, _nothing)
        return
    seq = hub.call_at(time.monotonic() + seconds, task, None)
    hub.suspend(task, lambda: hub.cancel_timer(seq))


def _nothing() -> None:
    pass


def timeout_after(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """Call fn(*args) with a timer that raises Expired where the task waits at the deadline."""
    task = _current()
    check_function(fn, "timeout_after")
    if check_seconds(seconds) == math.inf:
        return fn(*args)
    expired = Expired(f"timed out after {seconds} s")
    seq = task.hub.call_at(time.monotonic() + seconds, task, expired)
    try:
        return fn(*args)
    except Expired as error:
        if error is not expired:
            raise
        raise TimeoutError(f"timed out after {seconds} s") from None
    finally:
        task.hub.cancel_timer(seq)
        if task.throw is expired:  # it struck after fn's last wait: nothing left to interrupt
            task.throw = None


def run_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) in a worker thread; the task waits, the hub runs the others."""
    task = _current()
    check_function(fn, "run_in_thread")
    return task.hub.wait_thread(task, fn, args)


# ---------------------------------------------------------------------- sockets


def _wait(task: Task, sock: socket.socket, event: int, waited: bool) -> bool:
    """Wait for readiness; woken before and still not ready, the wake-up was for nothing: a
    ghost (a closed socket's file, kept open by a dup, still in epoll under this number) or a
    spurious wake-up, which rebuilding the selector once costs little to rule out."""
    if waited:
        task.hub.drop_ghosts()
    task.hub.wait_io(task, sock, event)
    return True


def _ready_for(sock: socket.socket) -> Task:
    # _current() inlined (a Python call fewer per socket call); called only for its error.
    task = getattr(greenlet.getcurrent(), "lab_task", None) or _current()
    if sock.getblocking():  # blocking, or with a timeout: the hub needs it non-blocking
        sock.setblocking(False)
    return task


# Speed trick, fenced here: the fds whose last try at a recv found nothing. On a
# request/response connection the recv right after our reply finds nothing (the peer answers
# only once it has the reply): a syscall and a BlockingIOError, whose message alone costs a
# locale decoding, per request. So the next recv on such a socket waits for readiness first,
# once (always correct: epoll is level-triggered, data already there wakes us at once), and the
# one after it tries first again: where the peer is ahead (a stream, a pipelining client, a
# server slower than its clients) a failed try costs one wait, not one per call. The traps
# kernel keeps a socket drained until a try finds data (its `_drained`); here the rule is the
# simplest that halves the failed receives. Keyed by fd, holding a weak reference so that a
# socket reusing a closed socket's fd starts optimistic and no socket is kept alive.
_drained: dict[int, weakref.ref] = {}  # fd -> the socket whose last try found nothing


def recv(sock: socket.socket, n: int) -> bytes:
    task = _ready_for(sock)
    fd = sock.fileno()
    drained = _drained.pop(fd, None)
    waited = drained is not None and drained() is sock
    if waited:  # the last try found nothing: this recv waits first (_drained)
        task.hub.wait_io(task, sock, READ)
    while True:
        try:
            return sock.recv(n)
        except BlockingIOError:
            if not waited:  # a try found nothing: the next recv waits first
                _drained[fd] = weakref.ref(sock)
            waited = _wait(task, sock, READ, waited)


def sendall(sock: socket.socket, data: bytes) -> None:
    task = _ready_for(sock)
    try:  # the usual case: the socket buffer takes it all at once, no view of it needed
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    # len() of bytes is its size; of a memoryview or array, its item count: ask the buffer.
    if sent == (len(data) if type(data) is bytes else memoryview(data).nbytes):
        return
    waited = False
    view = memoryview(data).cast("B")[sent:]  # the rare path: the buffer is full
    while view:
        try:
            view = view[sock.send(view) :]
            waited = False  # progress: the last wake-up was for something
        except BlockingIOError:
            waited = _wait(task, sock, WRITE, waited)


def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
    task = _ready_for(sock)
    waited = False
    while True:
        try:
            conn, address = sock.accept()
        except BlockingIOError:
            waited = _wait(task, sock, READ, waited)
        else:
            conn.setblocking(False)
            return conn, address


def connect(sock: socket.socket, address: Any) -> None:
    task = _ready_for(sock)
    waited = False
    try:
        sock.connect(address)
        return
    except BlockingIOError:
        waited = _wait(task, sock, WRITE, waited)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}")


def recvfrom(sock: socket.socket, n: int) -> tuple[bytes, Any]:
    task = _ready_for(sock)
    waited = False
    while True:
        try:
            return sock.recvfrom(n)
        except BlockingIOError:
            waited = _wait(task, sock, READ, waited)


def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
    task = _ready_for(sock)
    waited = False
    while True:
        try:
            return sock.sendto(data, address)
        except BlockingIOError:
            waited = _wait(task, sock, WRITE, waited)


# ---------------------------------------------------------------------- the queue


class Queue:
    """asyncio.Queue's semantics: a put wakes one getter, which takes the item itself."""

    def __init__(self) -> None:
        self._items: collections.deque = collections.deque()
        self._getters: collections.deque[Task] = collections.deque()  # waiting, FIFO
        self._joiners: list[Task] = []
        self._unfinished = 0

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._unfinished += 1
        if self._getters:
            task = self._getters.popleft()
            task.hub.wake(task)

    def get(self) -> Any:
        task = _current()
        while not self._items:
            self._getters.append(task)
            try:
                task.hub.suspend(task, lambda: self._getters.remove(task))
            except BaseException:
                if self._items and self._getters:  # the put's wake-up was maybe ours: pass it on
                    other = self._getters.popleft()
                    other.hub.wake(other)
                raise
        return self._items.popleft()

    def task_done(self) -> None:
        if self._unfinished <= 0:
            raise ValueError("task_done() called too many times")
        self._unfinished -= 1
        if self._unfinished == 0:
            for task in self._joiners:
                task.hub.wake(task)
            self._joiners.clear()

    def join(self) -> None:
        task = _current()
        while self._unfinished:
            self._joiners.append(task)
            task.hub.suspend(task, lambda: self._joiners.remove(task))
