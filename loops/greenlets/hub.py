"""The hub: one greenlet running a readiness loop; every task is a greenlet it switches into.

A task never sees the hub: a call that would block (a socket not ready, a sleep, a join) notes
what the task waits for and switches to the hub (``Hub.suspend``); the event that ends the
wait puts the task on the ready queue, and the hub switches back into it. The hub hands a
task nothing but the turn: the task makes its socket call, takes its queue item or reads the
joined task's outcome itself, so a cancel between the wake-up and the turn loses nothing.

The loop has the three stages of the callbacks, roundrobin and traps loops: wait for I/O
(epoll, read directly as the traps and callbacks loops read it, blocking only while nothing is
ready), expire timers, run the ready batch.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import heapq
import itertools
import os
import select
import socket
import time
from collections.abc import Callable
from typing import Any

import greenlet

from loops._poll import new_poller
from loops._signals import wake_pair

READ, WRITE = select.POLLIN, select.POLLOUT  # the interest bits
# Any bit but "writable" (data, EOF, an error, a hang-up) reaches a reader, any bit but
# "readable" reaches a writer: the way selectors reports them too.
WAKES_READER, WAKES_WRITER = ~WRITE, ~READ
MAX_WAIT = 24 * 3600.0  # a poll's longest wait: epoll refuses one past time_t (asyncio's cap)
COMPACT_MIN_TIMERS = 100  # compact the timer heap only past this many entries...
COMPACT_CANCELLED_SHARE = 0.5  # ...when more than this share of them is cancelled (asyncio's)


OWN_CODE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # this package's files


# twin of loops/traps/kernel.py: left_half_done
# twin of loops/completions/kernel.py: left_half_done
def left_half_done(error: BaseException) -> bool:
    """Whether error came up through this loop's own code that a task had called (a spawn, a
    future's callbacks, a wait being registered), not just out of the task's code.

    A signal's KeyboardInterrupt lands wherever the interpreter checks for signals, and in the
    loop's code it may leave the work half done (a task counted and never scheduled), so the
    loop must not run again to cancel the other tasks. The traceback says where it landed: a
    frame of this package inside a frame of the task's."""
    in_a_task = False
    frames = error.__traceback__
    while frames is not None:
        ours = frames.tb_frame.f_code.co_filename.startswith(OWN_CODE)
        if ours and in_a_task:
            return True
        in_a_task = in_a_task or not ours
        frames = frames.tb_next
    return False


class CancelledError(BaseException):
    """Raised in a cancelled task where it waits (a BaseException: ``except Exception`` lets
    it by)."""


class Expired(CancelledError):
    """timeout_after's cancellation; it becomes TimeoutError where the timeout was set."""


class Task:
    """A greenlet running fn(*args), its outcome, and the undo of what it waits for."""

    __slots__ = (
        "__weakref__",
        "done",
        "error",
        "glet",
        "hub",
        "joiners",
        "result",
        "throw",
        "unwait",
    )

    def __init__(self, hub: Hub, fn: Callable[..., Any], args: tuple) -> None:
        self.hub = hub
        self.glet = greenlet.greenlet(lambda: hub.task_main(self, fn, args), parent=hub.glet)
        self.result: Any = None
        self.error: BaseException | None = None  # what join re-raises
        self.done = False
        self.joiners: list[Task] = []  # tasks waiting for this one to end
        self.throw: BaseException | None = None  # raised in the task when it next resumes
        self.unwait: Callable[[], None] | None = None  # undoes its wait, while it waits


class IORecord:
    """One watched fd, kept across waits: the events registered and the tasks waiting on them.

    Kept registered while its tasks come and go, so a wait is a store here and, once both
    directions have been asked for, never an epoll_ctl call. The same record, with the same
    fields, in each loop that keeps its own epoll set: callbacks, futures, greenlets,
    roundrobin, scopes and traps.
    """

    __slots__ = ("events", "fd", "fileobj", "reader", "writer")

    def __init__(self, fileobj: Any, fd: int, events: int) -> None:
        self.fileobj = fileobj  # the socket
        self.fd = fd
        self.events = events  # the poll bits registered (READ, WRITE)
        self.reader: Task | None = None  # the task waiting to read, if any
        self.writer: Task | None = None  # the task waiting to write, if any


class Hub:
    """The loop: ready queue, timer heap, epoll, and the threads' wake-up."""

    def __init__(self) -> None:
        self.glet = greenlet.greenlet(self._loop)  # its parent: the greenlet that calls run()
        self.ready: collections.deque[Task] = collections.deque()  # tasks to switch into, FIFO
        self._timers: list[tuple[float, int]] = []  # (deadline, seq) heap; entries die lazily
        self._timed: dict[int, tuple[Task, BaseException | None]] = {}  # seq -> (task, throw)
        self._seq = itertools.count()
        self._epoll = new_poller()  # epoll on Linux
        self.records: dict[int, IORecord] = {}  # fd -> its IORecord
        self._io_waiters = 0  # tasks waiting on an fd (with none, no timer, nothing ready:
        self._in_threads = 0  # nor thread work pending, the program can never progress)
        self._finished: collections.deque = collections.deque()  # (task, its wait) from workers
        self._wake_pair: tuple[socket.socket, socket.socket] | None = None  # made by run()
        self.wake_fd = -1  # the wake-up's write end: workers and signals write a byte to it
        self._wake_reader_fd = -1  # in epoll, in no record: no task waits on it
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.tasks: set[Task] = set()  # live tasks
        self.main: Task | None = None
        self.closed = False

    # ------------------------------------------------------------------ the run loop

    def _loop(self) -> None:
        while not self.main.done or self.tasks:
            if self.main.done:  # tasks left when the main task ends are cancelled
                for task in list(self.tasks):
                    self.interrupt(task, CancelledError("the main task ended"))
            # Stage 1: wait for I/O, blocking (until the next timer) only while nothing is ready.
            if self.ready:
                timeout = 0.0
            elif self._timers:
                timeout = min(max(0.0, self._timers[0][0] - time.monotonic()), MAX_WAIT)
            elif self._io_waiters or self._in_threads:
                timeout = None
            else:
                raise RuntimeError("deadlock: every task waits for something no task will do")
            if self.records or timeout != 0.0:  # None: block (a worker's wake-up ends it)
                self._poll(timeout)
            # Stage 2: expire timers: sleepers wake, timeouts interrupt their task.
            now = time.monotonic() if self._timers else 0.0  # no timer: no clock read
            while self._timers and self._timers[0][0] <= now:
                entry = self._timed.pop(heapq.heappop(self._timers)[1], None)
                if entry is not None:
                    task, error = entry
                    if error is None:
                        self.wake(task)
                    else:
                        self.interrupt(task, error)
            # Stage 3: switch into each task ready at the start of the batch, until it suspends.
            ready = self.ready
            for _ in range(len(ready)):
                task = ready.popleft()
                task.glet.switch()

    def _poll(self, timeout: float | None) -> None:
        records = self.records
        for fd, bits in self._epoll.poll(timeout):
            record = records.get(fd)
            if record is None and fd == self._wake_reader_fd:
                self._woken()
                continue
            if record is None or record.fileobj.fileno() != fd:
                self.drop_ghosts()  # an fd nobody watches, or one closed behind our back
                return
            if bits & WAKES_READER:
                if not record.events & READ:
                    if not bits & WAKES_WRITER:  # "readable" where it was never asked: a ghost
                        self.drop_ghosts()
                        return
                elif (task := record.reader) is not None:
                    record.reader = None
                    self.wake(task)
                else:  # nobody reads it any more: stop watching (lazily, on its next event)
                    self.unwatch(record, READ)
            if bits & WAKES_WRITER:
                if not record.events & WRITE:
                    if not bits & WAKES_READER:  # "writable" where it was never asked
                        self.drop_ghosts()
                        return
                elif (task := record.writer) is not None:
                    record.writer = None
                    self.wake(task)
                else:
                    self.unwatch(record, WRITE)

    # ------------------------------------------------------------------ switching

    def suspend(self, task: Task, unwait: Callable[[], None]) -> None:
        """Switch to the hub until the task is woken; raise what it was interrupted with."""
        if self.closed:
            raise RuntimeError("the hub is closed: this task outlived its run()")
        task.unwait = unwait
        self.glet.switch()
        task.unwait = None
        self.check(task)

    def check(self, task: Task) -> None:
        if task.throw is not None:
            error, task.throw = task.throw, None
            raise error

    def wake(self, task: Task) -> None:
        """The wait is over: its undo is dropped and the task is ready."""
        task.unwait = None
        self.ready.append(task)

    def interrupt(self, task: Task, error: BaseException) -> None:
        """Raise error in task where it waits (or where it next resumes, if it is ready)."""
        if task.done or task.throw is not None:
            return
        task.throw = error
        if task.unwait is not None:
            task.unwait()
            self.wake(task)

    def task_main(self, task: Task, fn: Callable[..., Any], args: tuple) -> None:
        try:
            self.check(task)  # cancelled before it ever ran
            task.result = fn(*args)
        except BaseException as error:  # the joiner's to see, cancellation included
            task.error = error
            if isinstance(error, KeyboardInterrupt | SystemExit) and (
                task is not self.main or left_half_done(error)
            ):
                raise  # on to the hub, and out of run()
        finally:
            task.done = True
            self.tasks.discard(task)
            for joiner in task.joiners:
                self.wake(joiner)
            task.joiners.clear()

    # ------------------------------------------------------------------ timers

    def call_at(self, deadline: float, task: Task, error: BaseException | None) -> int:
        """At deadline, wake task (error None) or interrupt it with error; a seq to cancel."""
        seq = next(self._seq)
        heapq.heappush(self._timers, (deadline, seq))
        self._timed[seq] = (task, error)
        return seq

    def cancel_timer(self, seq: int) -> None:
        if self._timed.pop(seq, None) is not None:
            self._compact_timers()

    def _compact_timers(self) -> None:
        """Drop dead heap entries once they are most of it: a cancel-heavy program stays
        bounded (asyncio's rule in ``BaseEventLoop._run_once``)."""
        timers = self._timers
        if len(timers) > COMPACT_MIN_TIMERS and (
            len(timers) - len(self._timed) > COMPACT_CANCELLED_SHARE * len(timers)
        ):
            self._timers = [entry for entry in timers if entry[1] in self._timed]
            heapq.heapify(self._timers)

    # ------------------------------------------------------------------ I/O

    def wait_io(self, task: Task, sock: socket.socket, event: int) -> None:
        """Suspend task until sock is ready for event (READ or WRITE)."""
        fd = sock.fileno()
        if fd < 0:
            raise ValueError(f"cannot wait on a closed socket: {sock!r}")
        record = self.records.get(fd)
        if record is None or record.fileobj is not sock:  # first wait, or the fd was reused
            record = self.watch(fd, sock, event)
        elif (record.reader if event == READ else record.writer) is not None:
            raise RuntimeError(f"another task already waits on {sock!r} for that direction")
        elif not record.events & event:  # watched for the other direction only: add this one
            record.events |= event
            self._epoll.modify(fd, record.events)
        if event == READ:
            record.reader = task
        else:
            record.writer = task
        self._io_waiters += 1

        def unwait() -> None:
            if event == READ:
                record.reader = None
            else:
                record.writer = None
            self.unwatch(record, event)

        try:
            self.suspend(task, unwait)
        finally:
            self._io_waiters -= 1
            if event == READ and record.reader is task:
                record.reader = None
            elif event == WRITE and record.writer is task:
                record.writer = None

    def watch(self, fd: int, sock: Any, event: int) -> IORecord:
        """Register sock's fd for event, in a new record (replacing a closed socket's)."""
        if fd in self.records:  # a closed socket's fd, now reused: forget the old registration
            del self.records[fd]
            with contextlib.suppress(OSError):  # epoll dropped the closed file by itself
                self._epoll.unregister(fd)
        record = self.records[fd] = IORecord(sock, fd, event)
        self._epoll.register(fd, event)
        return record

    def unwatch(self, record: IORecord, event: int) -> None:
        """Stop watching record's fd for event (nobody waits for it), unregistering if idle."""
        if self.records.get(record.fd) is not record:
            return
        record.events &= ~event
        with contextlib.suppress(OSError):  # closed under us: epoll dropped it
            if record.events:
                self._epoll.modify(record.fd, record.events)
                return
            self._epoll.unregister(record.fd)
        del self.records[record.fd]

    def drop_ghosts(self) -> None:
        """Move every live registration to a fresh epoll, and close the old one.

        A socket closed while a dup keeps its file open stays in epoll under the dead number,
        reported for as long as the dup lives, and no epoll_ctl can reach it: only a new epoll
        instance drops it. The waiters of closed sockets wake and learn so from their call.
        """
        old, self._epoll = self._epoll, new_poller()
        if self._wake_reader_fd >= 0:
            self._epoll.register(self._wake_reader_fd, READ)
        for fd, record in list(self.records.items()):
            if record.fileobj.fileno() == fd:
                self._epoll.register(fd, record.events)
                continue
            del self.records[fd]
            for task in record.reader, record.writer:
                if task is not None:
                    self.wake(task)
        old.close()

    # ------------------------------------------------------------------ worker threads

    def wait_thread(self, task: Task, fn: Callable[..., Any], args: tuple) -> Any:
        """Run fn(*args) on a worker thread; the task waits until the worker wakes the hub."""
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="lab")
            self.open_wake_up()  # run() has, unless this hub runs without it
        future = self.pool.submit(fn, *args)

        def unwait() -> None:  # nothing to undo; its identity tells this wait from a later one
            pass

        future.add_done_callback(lambda _: self._from_thread(task, unwait))
        self._in_threads += 1
        try:
            # Not `while not future.done():`, which CPython 3.13 compiles with its back edge
            # outside this try (CPython gh-130279): a Ctrl-C there would skip the finally.
            while True:
                if future.done():
                    break
                self.suspend(task, unwait)
        finally:
            self._in_threads -= 1
        return future.result()

    def open_wake_up(self) -> None:
        """A socketpair whose read end epoll watches: a worker, or a signal (``wake_fd``),
        writes a byte, the poll reports the read end readable (the Python Cookbook's
        ThreadPoolHandler). In no record, since no task waits on it. Once: later calls change
        nothing."""
        if self._wake_pair is not None:
            return
        reader, writer = wake_pair()
        self._wake_pair = (reader, writer)
        self.wake_fd, self._wake_reader_fd = writer.fileno(), reader.fileno()
        self._epoll.register(self._wake_reader_fd, READ)

    def _from_thread(self, task: Task, unwait: Callable[[], None]) -> None:
        """In the worker's thread: queue the task's wait for the hub, and wake the hub."""
        self._finished.append((task, unwait))
        with contextlib.suppress(OSError):  # a full buffer: a wake-up is pending anyway
            self._wake_pair[1].send(b"\0")

    def _woken(self) -> None:
        reader = self._wake_pair[0]
        with contextlib.suppress(BlockingIOError):
            while reader.recv(4096):
                pass
        while self._finished:
            task, unwait = self._finished.popleft()
            if task.unwait is unwait:  # still in that wait (not cancelled out of it)
                self.wake(task)

    # ------------------------------------------------------------------ shutdown

    def close(self) -> None:
        """Close epoll, the wake-up socket and the worker pool; idempotent."""
        if self.closed:
            return
        self.closed = True
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self._epoll.close()
        self.records.clear()
        if self._wake_pair is not None:
            for sock in self._wake_pair:
                sock.close()
