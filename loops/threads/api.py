"""The blocking style on OS threads: a thread per task, plain blocking calls, Condition waits.

Nothing here schedules: the kernel runs whichever threads are not blocked, and in CPython's
default build the GIL lets one run Python at a time. What the adapter adds to ``threading`` is
what the contract asks and threads do not offer: a task record (result, error, joiners), and
cancellation, a flag a task's next wait raises as :class:`CancelledError`. Every wait on another
task (join, sleep, the Queue, a worker thread) is a ``Condition`` wait the canceller can notify;
a task inside a socket call is in the kernel, where no Python code can reach it, so the
canceller shuts that direction of the socket down to make the call return (Java's
``InterruptibleChannel`` closes the channel of an interrupted thread likewise). The socket is
spent for that direction: this design's price for a cancel."""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import math
import resource
import select
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loops.contract import check_function, check_seconds

now = time.monotonic
# The longest the main thread waits at once. CPython runs a signal's handler only in the main
# thread, between two bytecodes; a signal that lands in the instant before a wait begins (the
# main thread queued for the GIL there, behind the other threads) leaves the handler pending
# until that wait ends. A Ctrl-C or a stop signal is then answered within one slice, not never.
SIGNAL_SLICE = 0.05


class CancelledError(BaseException):
    """Raised in a cancelled task at its wait (a BaseException: ``except Exception`` lets it by)."""


class Expired(CancelledError):
    """timeout_after's cancellation; it becomes TimeoutError where the timeout was set."""


_local = threading.local()  # .task: the Task the current thread runs, while run() runs


class Run:
    """One run(): its live tasks, the lock over every task's cancel flag, the worker pool."""

    def __init__(self) -> None:
        self.lock = threading.Lock()  # held to set or take a task's pending error
        self.tasks: set[Task] = set()  # tasks whose thread began and has not ended
        self.closing = False  # run()'s main task ended: a thread that begins now runs nothing
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None  # made on first use


class Task:
    """A thread running fn(*args): its outcome, and what a canceller must reach it through."""

    __slots__ = (
        "__weakref__",
        "alarm",
        "done",
        "ended",
        "error",
        "in_call",
        "pending",
        "result",
        "run",
        "sliced",
        "thread",
        "waiting_on",
    )

    def __init__(self, run: Run) -> None:
        self.run = run
        self.thread: threading.Thread | None = None  # None for the main task (run's caller)
        self.result: Any = None
        self.error: BaseException | None = None  # what join re-raises
        self.done = False
        self.ended = threading.Condition()  # notified when done; joiners wait on it
        self.alarm = threading.Condition()  # the task's own waits: sleep, run_in_thread
        self.pending: BaseException | None = None  # a cancel not yet raised in the task
        self.waiting_on: threading.Condition | None = None  # set while in a Condition wait
        # While in a blocking socket call: the socket, and the direction a cancel shuts down.
        self.in_call: tuple[socket.socket, int] | None = None
        self.sliced = False  # on the main thread: its waits come back to Python every slice


def _current() -> Task:
    task = getattr(_local, "task", None)
    if task is None:
        raise RuntimeError("no task here: call this from a function that run() or spawn() runs")
    return task


def _raise_pending(task: Task) -> None:
    """Raise the task's pending cancellation, if any, once."""
    if task.pending is not None:
        with task.run.lock:
            error, task.pending = task.pending, None
        if error is not None:
            raise error


def _interrupt(task: Task, error: BaseException) -> bool:
    """Make `error` pending in task, unless another is, and wake it where it waits; False if
    it has ended or another error was pending (it is woken all the same, so a wake-up cut
    short by a KeyboardInterrupt is made good by the next)."""
    with task.run.lock:
        if task.done:
            return False
        fresh = task.pending is None
        if fresh:
            task.pending = error
        condition, call = task.waiting_on, task.in_call
    if condition is not None:
        with condition:
            condition.notify_all()
    if call is not None:  # in the kernel: only the end of that direction makes the call return
        sock, direction = call
        with contextlib.suppress(OSError):  # an unconnected UDP socket says ENOTCONN, yet wakes
            sock.shutdown(direction)
    return fresh


def _wait(condition: threading.Condition, ready: Callable[[], Any], timeout: float | None = None):
    """Wait on condition until ready() or a cancel; raise the cancel. ready()'s last value."""
    task = _current()

    def woken() -> Any:
        return ready() or task.pending is not None

    with condition:
        task.waiting_on = condition
        try:
            outcome = _wait_for(task, condition, woken, timeout)
        finally:
            task.waiting_on = None
    _raise_pending(task)
    return outcome


def _wait_for(task: Task, condition: threading.Condition, ready: Callable[[], Any], timeout=None):
    """condition.wait_for(ready, timeout), held by condition; in slices on the main thread."""
    if not task.sliced:
        return condition.wait_for(ready, timeout)
    deadline = None if timeout is None else now() + timeout
    while not (outcome := ready()):
        left = SIGNAL_SLICE if deadline is None else min(SIGNAL_SLICE, deadline - now())
        if left <= 0:
            break
        condition.wait(left)  # back in Python after it: a pending handler runs here
    return outcome


# ---------------------------------------------------------------------- tasks


def run(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) in this thread as the first task; then cancel and wait for the rest."""
    if getattr(_local, "task", None) is not None:
        raise RuntimeError("run() called inside a running task: spawn() the function instead")
    check_function(fn, "run")
    this = Run()
    main = Task(this)
    main.sliced = threading.current_thread() is threading.main_thread()
    _local.task = main  # the last line before try: a signal cannot land between them
    try:
        return fn(*args)
    finally:
        try:
            _end_tasks(this)
        finally:
            _local.task = None
            if this.pool is not None:
                this.pool.shutdown(wait=True)


def _end_tasks(this: Run) -> None:
    """Cancel the tasks still running when run()'s main task has ended, and wait for them.

    A KeyboardInterrupt can have cut the main task short anywhere in this module's own
    bookkeeping (a cancel made pending and its task not yet woken, a timer left armed), so
    every task is woken here whatever its state says, and these waits take no cancel."""
    with this.lock:
        this.closing = True
    main = _current()
    while this.tasks:
        # Every cancel first, then every wait: the threads end side by side, where a
        # cancel-and-wait each would hand the GIL to and fro once per thread.
        ending = list(this.tasks)
        for task in ending:
            _interrupt(task, CancelledError("cancelled"))
        for task in ending:
            with task.ended:
                _wait_for(main, task.ended, lambda task=task: task.done)


def _task_main(task: Task, fn: Callable[..., Any], args: tuple) -> None:
    # The thread enters its task in the run's books itself: spawn's caller may be the main
    # thread, where a KeyboardInterrupt can land between any two lines, and a task entered
    # before its thread started could then be one that never starts.
    with task.run.lock:
        if task.run.closing:
            task.done = True
            task.error = CancelledError("run() ended before the task's thread began")
        else:
            task.run.tasks.add(task)
    if task.done:
        with task.ended:
            task.ended.notify_all()
        return
    _local.task = task
    try:
        task.result = fn(*args)
    except BaseException as error:  # the joiner's to see, cancellation included
        task.error = error
    finally:
        with task.run.lock:
            task.done = True
            task.pending = None
            task.run.tasks.discard(task)
        with task.ended:
            task.ended.notify_all()
        _local.task = None


def spawn(fn: Callable[..., Any], *args: Any) -> Task:
    """Start fn(*args) in a new thread."""
    parent = _current()
    check_function(fn, "spawn")
    task = Task(parent.run)
    task.thread = threading.Thread(target=_task_main, args=(task, fn, args), daemon=True)
    try:
        task.thread.start()
    except RuntimeError as error:  # "can't start new thread": a limit of the machine's
        if isinstance(error.__context__, KeyboardInterrupt):
            # Ctrl-C in start()'s wait for the new thread: threading's Condition then fails to
            # release its lock ("release unlocked lock"), an error that must not hide the signal
            raise error.__context__ from None
        raise RuntimeError(f"spawn: {error}: {_thread_limits(parent.run)}") from error
    return task


def _thread_limits(this: Run) -> str:
    """Where the kernel stopped this process's threads: how many run, and its limits."""
    limits = []
    for name in ("kernel/threads-max", "kernel/pid_max", "vm/max_map_count"):
        with contextlib.suppress(OSError):
            limits.append(f"{name.split('/')[1]} {int(Path('/proc/sys', name).read_text()):,}")
    soft = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    limits.append(
        "RLIMIT_NPROC " + ("unlimited" if soft == resource.RLIM_INFINITY else f"{soft:,}")
    )
    return (
        f"{len(this.tasks):,} tasks of this run are running, {threading.active_count():,} "
        f"threads in the process; the machine's limits: {', '.join(limits)} (a thread holds "
        "a pid, and its stack two memory maps)"
    )


def _check_task(task: Any) -> Task:
    if not isinstance(task, Task):
        raise TypeError(f"not a task of this loop: {task!r}")
    if task.run is not _current().run:
        raise RuntimeError(f"a task of another run: {task!r}")
    return task


def join(task: Task) -> Any:
    """Wait for task to end; its result, or its error raised."""
    _wait(_check_task(task).ended, lambda: task.done)
    if task.error is not None:
        raise task.error
    return task.result


def cancel(task: Task) -> None:
    """Cancel task at its current or next wait, then wait for it to end."""
    if _check_task(task) is _current():
        raise RuntimeError("a task cannot cancel itself: raise instead")
    _interrupt(task, CancelledError("cancelled"))
    _wait(task.ended, lambda: task.done)


def sleep(seconds: float) -> None:
    """Wait on the task's own condition: only a cancel notifies it."""
    task = _current()
    if check_seconds(seconds) <= 0:
        _raise_pending(task)
        time.sleep(0)  # gives up the GIL: a task that sleeps 0 lets the others run
        return
    _wait(task.alarm, _never, None if math.isinf(seconds) else seconds)


def _never() -> bool:
    return False


def timeout_after(seconds: float, fn: Callable[..., Any], *args: Any) -> Any:
    """Call fn(*args); a timer thread interrupts this task at the deadline."""
    task = _current()
    check_function(fn, "timeout_after")
    if check_seconds(seconds) == math.inf:
        return fn(*args)
    expired = Expired(f"timed out after {seconds} s")
    timer = threading.Timer(max(seconds, 0), _interrupt, (task, expired))
    timer.daemon = True
    timer.start()
    try:
        return fn(*args)
    except Expired as error:
        if error is not expired:
            raise
        raise TimeoutError(f"timed out after {seconds} s") from None
    finally:
        timer.cancel()
        with task.run.lock:  # it fired after fn's last wait: nothing left to interrupt
            if task.pending is expired:
                task.pending = None


def run_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) on the run's worker pool; wait for it on the task's own condition."""
    task = _current()
    check_function(fn, "run_in_thread")
    with task.run.lock:
        if task.run.pool is None:
            task.run.pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="lab")
    future = task.run.pool.submit(fn, *args)
    future.add_done_callback(lambda _: _notify(task.alarm))
    _wait(task.alarm, future.done)
    return future.result()


def _notify(condition: threading.Condition) -> None:
    with condition:
        condition.notify_all()


# ---------------------------------------------------------------------- sockets


def _call(sock: socket.socket, direction: int, method: Callable[..., Any], *args: Any) -> Any:
    """One blocking socket call, with the task marked as inside it (see _interrupt): a cancel
    shuts down only the call's direction, so a reader's cancel sends the peer no FIN."""
    task = _current()
    if not isinstance(sock, socket.socket):
        raise TypeError(f"not a socket: {sock!r}")
    if sock.gettimeout() is not None:  # non-blocking or with a timeout: make it blocking
        sock.setblocking(True)
    task.in_call = (sock, direction)
    try:
        _raise_pending(task)
        if task.sliced and direction != socket.SHUT_RDWR:
            _until_ready(task, sock, direction)
        result = method(*args)
    except OSError:
        task.in_call = None
        _raise_pending(task)  # the call failed because the canceller shut the socket
        raise
    task.in_call = None
    if result == b"" or (isinstance(result, tuple) and result[0] == b""):
        _raise_pending(task)  # an end of file the canceller's shutdown may have made
    # A call that did its work returns it (an accepted socket, received bytes): a cancel that
    # came meanwhile is raised at the task's next wait, so nothing the kernel handed over is lost.
    return result


def _until_ready(task: Task, sock: socket.socket, direction: int) -> None:
    """Poll sock in slices until the call would not block, or a cancel: the main thread's socket
    call then blocks in the kernel only as long as the peer takes to send or read the rest."""
    poller = select.poll()
    poller.register(sock, select.POLLIN if direction == socket.SHUT_RD else select.POLLOUT)
    while not poller.poll(SIGNAL_SLICE * 1000):
        _raise_pending(task)  # a pending handler ran on the way back here; then the cancel


def recv(sock: socket.socket, n: int) -> bytes:
    return _call(sock, socket.SHUT_RD, sock.recv, n)


def sendall(sock: socket.socket, data: bytes) -> None:
    if not _current().sliced:
        _call(sock, socket.SHUT_WR, sock.sendall, data)
        return
    # The main thread sends what fits, then polls again: a blocking sendall would wait in the
    # kernel for as long as the peer does not read, with a signal's handler left pending.
    with memoryview(data) as view, view.cast("B") as left:
        while left:
            with contextlib.suppress(BlockingIOError):
                left = left[_call(sock, socket.SHUT_WR, sock.send, left, socket.MSG_DONTWAIT) :]


def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
    conn, address = _call(sock, socket.SHUT_RD, sock.accept)
    conn.setblocking(True)  # accept() makes it blocking already unless a default timeout is set
    return conn, address


def connect(sock: socket.socket, address: Any) -> None:
    _call(sock, socket.SHUT_RDWR, sock.connect, address)


def recvfrom(sock: socket.socket, n: int) -> tuple[bytes, Any]:
    return _call(sock, socket.SHUT_RD, sock.recvfrom, n)


def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
    return _call(sock, socket.SHUT_WR, sock.sendto, data, address)


# ---------------------------------------------------------------------- the queue


class Queue:
    """asyncio.Queue's semantics on one lock: getters wait for an item, joiners for none left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nonempty = threading.Condition(self._lock)  # getters wait here
        self._all_done = threading.Condition(self._lock)  # joiners wait here
        self._items: collections.deque = collections.deque()
        self._unfinished = 0

    def put(self, item: Any) -> None:
        _raise_pending(_current())
        with self._lock:
            self._items.append(item)
            self._unfinished += 1
            self._nonempty.notify()

    def get(self) -> Any:
        task = _current()
        with self._lock:
            task.waiting_on = self._nonempty
            try:
                _wait_for(task, self._nonempty, lambda: self._items or task.pending is not None)
            finally:
                task.waiting_on = None
            if task.pending is None:
                return self._items.popleft()
            if self._items:  # the put's wake-up may have been this getter's: pass it on
                self._nonempty.notify()
        _raise_pending(task)

    def task_done(self) -> None:
        with self._lock:
            if self._unfinished <= 0:
                raise ValueError("task_done() called too many times")
            self._unfinished -= 1
            if self._unfinished == 0:
                self._all_done.notify_all()

    def join(self) -> None:
        _wait(self._all_done, lambda: self._unfinished == 0)
