"""The small reactor under the tasks: everything it does is complete a future.

A timer is a future the loop completes at its deadline; a socket wait is a future the loop
completes when the selector reports the socket ready; a thread's result is a future the loop
completes when the worker hands it back. Completing a future puts its callbacks (mostly tasks,
see futures.py) on the ready queue, and each turn of the loop runs the batch that was ready.

One turn of ``_run_once``, in three stages:
1. wait for I/O, no longer than until the next timer, not at all if work is ready;
2. expire timers: complete the futures whose deadline has passed;
3. run ready: call each (callback, future) pair that was queued when the stage began.

Builds on selectors (epoll here), heapq and a socketpair wake-up for threads (the Python
Cookbook's idea, as asyncio's ``_write_to_self``). Sockets stay registered between waits: the
loop changes the mask only when the selector reports readiness nobody waits for (a socket read
in a loop costs no epoll_ctl at all, where asyncio pays a register and an unregister per wait).

Limits: one waiter per direction per socket; a socket closed while a task waits on it leaves
that task waiting (as in asyncio); no signal handling beyond letting KeyboardInterrupt out.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import selectors
import socket
import threading
import weakref
from collections import deque
from heapq import heapify, heappop, heappush
from time import monotonic
from typing import Any

from loops._signals import signals_wake
from loops.futures.futures import _CANCELLED, _PENDING, Future, Task, logger

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE
MAX_WAIT = 24 * 3600.0  # the longest single poll (asyncio's cap): epoll refuses huge timeouts
# Compaction: rebuild the heap when more than COMPACT_MIN_TIMERS of its timers are cancelled
# and they are more than COMPACT_CANCELLED_FRACTION of it (asyncio counts the whole heap).
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5


class _Running(threading.local):
    loop: Loop | None = None  # the loop running in this thread, if any


_running = _Running()


def loop_is_running() -> bool:
    """True inside run() (in this thread)."""
    return _running.loop is not None


def get_running_loop() -> Loop:
    """The loop running in this thread, or a clear RuntimeError outside run()."""
    loop = _running.loop
    if loop is None:
        raise RuntimeError("no running futures loop: call this inside run()")
    return loop


class _Timer(Future):
    """A future the loop completes at its deadline; cancelling it leaves a dead heap entry."""

    __slots__ = ()

    def cancel(self) -> bool:
        if Future.cancel(self):
            self._loop._cancelled_timers += 1
            return True
        return False


class _DeadlineTimer(_Timer):
    """A timeout's timer: at its deadline it calls its callbacks at once, from the loop's
    timer stage, instead of queueing them.

    A timeout's callback cancels a task, which queues that task's wake-up; queued through the
    ready queue first, the wake-up would come one iteration late, after any sleeper whose
    deadline passed in the same poll, even a later one. Called from the timer stage, it
    queues the wake-up in deadline order with the sleepers' (asyncio's timeout handle does
    the same from its heap). The callbacks are the loop's own (api._Deadline), never a user's.
    """

    __slots__ = ()

    def _schedule_callbacks(self) -> None:
        callbacks = self._callbacks
        self._callbacks = []
        for callback in callbacks:
            callback(self)


class IORecord:
    """One registered socket: the events the selector watches and the futures waiting on them.

    The same record, with the same fields, in each loop that keeps its own epoll set:
    callbacks, futures, greenlets, roundrobin, scopes and traps.
    """

    __slots__ = ("events", "fd", "fileobj", "reader", "writer")

    def __init__(self, fileobj: socket.socket, fd: int, events: int) -> None:
        self.fileobj = weakref.ref(fileobj)  # a weakref to the socket: a dropped one must close
        self.fd = fd
        self.events = events  # the events the selector watches for
        self.reader: Future | None = None  # completed when the socket is readable
        self.writer: Future | None = None  # completed when the socket is writable


class Loop:
    """Ready queue, timer heap and selector; runs tasks until the main one finishes."""

    def __init__(self) -> None:
        self._ready: deque[tuple[Any, Any]] = deque()  # (callback, future) pairs, FIFO
        self._timers: list[list[Any]] = []  # heap of [deadline, sequence, _Timer]
        self._cancelled_timers = 0  # cancelled timers still in the heap
        self._timer_seq = itertools.count()  # breaks deadline ties first-scheduled-first
        self._selector = selectors.DefaultSelector()
        self._io: dict[int, IORecord] = {}  # fd -> its registration and waiters
        self._tasks: dict[Task, None] = {}  # unfinished tasks, in spawn order
        self._current: Task | None = None  # the task whose step is running
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None  # made on first use
        self._threads_running = 0  # run_in_thread calls whose outcome has not come back yet
        self._wake_reader, self._wake_writer = socket.socketpair()  # threads wake select()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._selector.register(self._wake_reader.fileno(), _READ, None)
        self._exception_handler: Any = None  # handler(loop, context), None for logging
        self._closed = False
        self._raised_by_a_task: BaseException | None = None  # see run_until_complete()

    # -- the run loop ---------------------------------------------------------------------

    def run_until_complete(self, coro: Any) -> Any:
        """Run coro as the main task until it finishes; its result, or its exception raised."""
        if self._closed or _running.loop is not None:
            coro.close()  # refused, so it will never run: it must not warn "never awaited"
            if self._closed:
                raise RuntimeError("the loop is closed")
            raise RuntimeError("run() cannot be called while a futures loop is running")
        main = Task(coro, self)
        _running.loop = self
        try:
            # Not `while main._state is _PENDING:`, which CPython 3.13 compiles with its back
            # edge outside this try (CPython gh-130279): a Ctrl-C taken there would skip the
            # finally and leave the loop marked running. The test comes first and the body
            # ends in a call: 3.14 puts a back edge after a test outside the try too. A signal
            # wakes the select, so its Python handler runs at once (loops/_signals.py).
            with signals_wake(self._wake_writer.fileno()):
                while True:
                    if main._state is not _PENDING:
                        break
                    self._run_once()
        except BaseException as error:
            if not isinstance(error, Exception) and error is not self._raised_by_a_task:
                self._abandon_tasks()  # a signal's KeyboardInterrupt: see _abandon_tasks
            raise
        finally:
            self._raised_by_a_task = None
            _running.loop = None
        return main.result()

    def _run_once(self) -> None:
        ready = self._ready
        timers = self._timers

        # Stage 1: wait for I/O, no longer than until the next timer, not at all if work is ready.
        if ready:
            timeout = 0.0
        elif timers:
            timeout = min(timers[0][0] - monotonic(), MAX_WAIT)  # <= 0 is a poll
        elif self._io or self._threads_running:
            timeout = None
        else:
            raise _deadlock()
        reported = self._selector.select(timeout)
        if not reported and timeout != 0.0 and self._woken_for_nothing(timeout):
            self.drop_ghosts()
        for key, events in reported:
            record = key.data
            if record is None:
                self._drain_wakeups()
                continue
            unwanted = 0
            if events & _READ:
                waiter = record.reader
                if waiter is not None and waiter._state is _PENDING:
                    record.reader = None
                    waiter.set_result(None)
                else:
                    unwanted = _READ
            if events & _WRITE:
                waiter = record.writer
                if waiter is not None and waiter._state is _PENDING:
                    record.writer = None
                    waiter.set_result(None)
                else:
                    unwanted |= _WRITE
            # (epoll reports a hang-up or error as both directions, watched or not.)
            unwanted &= record.events
            if unwanted:
                self._unwatch(record, unwanted)
            elif not events & record.events:  # bits it never asked for: a ghost's (drop_ghosts)
                self.drop_ghosts()

        # Stage 2: expire timers: complete every timer future whose deadline has passed.
        if timers:
            cancelled = self._cancelled_timers
            if cancelled > COMPACT_MIN_TIMERS and cancelled > (
                COMPACT_CANCELLED_FRACTION * len(timers)
            ):
                self._compact_timers()
            now = monotonic()
            while timers and timers[0][0] <= now:
                timer = heappop(timers)[2]
                if timer._state is _PENDING:
                    timer.set_result(None)
                else:
                    self._cancelled_timers -= 1

        # Stage 3: run ready: the batch queued so far; what it queues waits for the next turn.
        popleft = ready.popleft
        for _ in range(len(ready)):
            callback, fut = popleft()
            try:
                callback(fut)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as error:
                self.call_exception_handler(
                    {"message": f"exception in callback {callback!r}", "exception": error}
                )

    # -- timers ---------------------------------------------------------------------------

    def time(self) -> float:
        return monotonic()

    def timer(self, delay: float, deadline: bool = False) -> Future:
        """A future completed (with None) no earlier than delay seconds from now.

        deadline=True: a timeout's timer, whose callbacks run from the timer stage (see
        _DeadlineTimer).
        """
        if delay != delay:
            raise ValueError("the delay is NaN: it would never fire, and break the heap's order")
        timer = _DeadlineTimer(self) if deadline else _Timer(self)
        heappush(self._timers, [monotonic() + delay, next(self._timer_seq), timer])
        return timer

    def _compact_timers(self) -> None:
        self._timers[:] = [entry for entry in self._timers if entry[2]._state is _PENDING]
        heapify(self._timers)
        self._cancelled_timers = 0

    # -- sockets --------------------------------------------------------------------------

    def wait(self, sock: socket.socket, event: int) -> Future:
        """A future completed when sock is ready for event (EVENT_READ or EVENT_WRITE).

        The socket stays registered after the wait: the next wait on it usually finds its
        mask already right and costs no system call.
        """
        fd = sock.fileno()
        record = self._io.get(fd)
        if record is not None:
            registered = record.fileobj()
            if registered is not sock and (registered is None or registered.fileno() != fd):
                # The fd number was closed and reused for a new socket: start afresh (the
                # kernel dropped the old registration when the old socket closed).
                self._forget(record)
                record = None
        if record is None:
            record = self._io[fd] = IORecord(sock, fd, event)
            self._selector.register(fd, event, record)
        elif not record.events & event:
            record.events |= event
            self._selector.modify(fd, record.events, record)
        waiter = record.reader if event == _READ else record.writer
        if waiter is not None and waiter._state is _PENDING:
            direction = "read from" if event == _READ else "write to"
            raise RuntimeError(f"another task is already waiting to {direction} {sock!r}")
        waiter = Future(self)
        if event == _READ:
            record.reader = waiter
        else:
            record.writer = waiter
        return waiter

    def _unwatch(self, record: IORecord, events: int) -> None:
        """Stop watching for events that were reported with nobody waiting for them."""
        sock = record.fileobj()
        if sock is None or sock.fileno() != record.fd:
            self._drop_ghost(record)
            return
        record.events &= ~events
        if record.events:
            self._selector.modify(record.fd, record.events, record)
        else:
            self._forget(record)

    # twin of loops/roundrobin/scheduler.py: Loop._drop_ghost
    def _drop_ghost(self, record: IORecord) -> None:
        """Readiness for a socket closed since: drop it, on a fresh selector.

        epoll registers a *file* under an fd number. When the number is closed while a dup
        (``os.dup``, ``socket.fromfd``, a child process) keeps the file open, epoll goes on
        reporting it under the dead number, and no ``epoll_ctl`` can remove it any more (it
        takes a live number; the selector swallows the error). Left alone it wakes every
        select() at once, forever: 100 % CPU. Only a new epoll instance drops it: every live
        registration moves over (one ``epoll_ctl`` each, once: this happens only when a
        program closes a socket the loop still watches, behind a dup).
        """
        if self._io.get(record.fd) is not record:
            return  # dropped by a rebuild earlier in this batch of events
        del self._io[record.fd]
        self.drop_ghosts()

    # twin of loops/roundrobin/scheduler.py: Loop.drop_ghosts
    def drop_ghosts(self) -> None:
        """Move every live registration to a fresh selector (see _drop_ghost), and close the old.

        Also called when a ghost shares its number with a live socket: a closed socket's file,
        kept open by a dup, whose number a new socket reuses, is reported under that number,
        as bits the new socket never asked for (above, in _run_once) or as wake-ups for
        nothing (api.py's _woken_for_nothing).
        """
        old, self._selector = self._selector, selectors.DefaultSelector()
        old.close()
        self._selector.register(self._wake_reader.fileno(), _READ, None)
        for fd, live in list(self._io.items()):
            sock = live.fileobj()
            if sock is not None and sock.fileno() == fd:
                self._selector.register(fd, live.events, live)
            else:  # closed as well: whoever waits learns so from the next call
                del self._io[fd]
                for waiter in live.reader, live.writer:
                    if waiter is not None and waiter._state is _PENDING:
                        waiter.set_result(None)

    def _woken_for_nothing(self, timeout: float | None) -> bool:
        """True if select() just returned nothing, early: a ghost the selector hid from us.

        selectors drops the events of an fd it has no key for, so a ghost whose number the
        loop stopped watching (a new socket that reused it, narrowed after the ghost's
        readiness reached it with nobody waiting) wakes select() with an empty list, at once,
        forever. Checked only after an empty select() that was allowed to block: epoll never
        returns before its timeout (selectors rounds it up, PEP 475 resumes after a signal),
        so an empty return before the next timer is due, or with none due, woke for nothing.
        """
        return timeout is None or (timeout > 0 and monotonic() < self._timers[0][0])

    def _forget(self, record: IORecord) -> None:
        del self._io[record.fd]
        self._selector.unregister(record.fd)  # ignores a kernel registration already gone

    # -- threads --------------------------------------------------------------------------

    def call_soon_threadsafe(self, callback: Any, arg: Any) -> None:
        """From any thread: run callback(arg) on the loop, waking it if it is blocked."""
        if self._closed:
            raise RuntimeError("the loop is closed")
        self._ready.append((callback, arg))  # deque.append is atomic
        # A full buffer means wake-ups are already pending: the loop will wake anyway.
        with contextlib.suppress(BlockingIOError):
            self._wake_writer.send(b"\0")

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_reader.recv(4096):
                pass
        except BlockingIOError:
            pass

    def run_in_thread(self, fn: Any, *args: Any) -> Future:
        """A future for fn(*args) run in a worker thread."""
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(
                thread_name_prefix="futures-loop"
            )
        result = Future(self)
        work = self._executor.submit(fn, *args)
        # Cancelling the wait drops the work if no thread has started it yet.
        result.add_done_callback(lambda result: result.cancelled() and work.cancel())
        self._threads_running += 1
        work.add_done_callback(
            lambda work: self.call_soon_threadsafe(self._thread_finished, (work, result))
        )
        return result

    def _thread_finished(self, pair: tuple[concurrent.futures.Future, Future]) -> None:
        self._threads_running -= 1
        _copy_outcome(pair)

    # -- errors ---------------------------------------------------------------------------

    def set_exception_handler(self, handler: Any) -> None:
        """Route errors to handler(loop, context); None restores logging them."""
        self._exception_handler = handler

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        """Report an error nobody else will see: a failing callback, an unretrieved task."""
        if self._exception_handler is not None:
            try:
                self._exception_handler(self, context)
                return
            except Exception as error:  # a broken handler must not break the loop
                logger.error("exception in the exception handler", exc_info=error)
        exception = context.get("exception")
        logger.error(context["message"], exc_info=exception)

    # -- shutdown -------------------------------------------------------------------------

    def cancel_all_tasks(self) -> None:
        """Cancel every unfinished task and run them until they have all ended."""
        if _running.loop is not None:
            raise RuntimeError("cancel_all_tasks() cannot be called while the loop runs")
        cancelled: set[Task] = set()
        _running.loop = self
        try:
            while True:  # not `while self._tasks:`, for the reason in run_until_complete
                if not self._tasks:
                    break
                # Each turn, so that a task spawned by another's clean-up is cancelled too.
                for task in self._tasks.keys() - cancelled:
                    task.cancel()
                    cancelled.add(task)
                self._run_once()
        finally:
            _running.loop = None

    # twin of loops/traps/kernel.py: Loop._abandon_tasks
    def _abandon_tasks(self) -> None:
        """Close every task's coroutine without the loop, and forget every wake-up.

        A KeyboardInterrupt from a signal lands between any two lines of the loop's own
        bookkeeping: a wake-up popped from the ready queue and not yet run, a wait half
        registered. Running the loop again to cancel the tasks could wait forever on what that
        step lost, so run_until_complete() closes the tasks here, untouched by the loop: their
        finally blocks run."""
        while self._tasks:  # drained, not iterated: a finally block may spawn one more
            task = next(iter(self._tasks))
            del self._tasks[task]
            task._state = _CANCELLED
            # RuntimeError: it awaited in a finally block; it cannot run any further anyway.
            with contextlib.suppress(RuntimeError):
                task._coro.close()
        self._ready.clear()
        self._timers.clear()
        self._cancelled_timers = 0

    def close(self) -> None:
        """Release the worker threads, the selector and the wake-up sockets; idempotent."""
        if self._closed:
            return
        if _running.loop is self:
            raise RuntimeError("cannot close a running loop")
        self._closed = True
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
        self._selector.close()
        self._wake_reader.close()
        self._wake_writer.close()
        self._ready.clear()
        self._timers.clear()
        self._io.clear()

    def is_closed(self) -> bool:
        return self._closed


def _copy_outcome(pair: tuple[concurrent.futures.Future, Future]) -> None:
    """On the loop: copy a finished thread's outcome into the future a task waits on."""
    work, result = pair
    if result._state is not _PENDING:
        return  # the waiting task was cancelled
    error = work.exception()
    if error is None:
        result.set_result(work.result())
    else:
        result.set_exception(error)


def _deadlock() -> RuntimeError:
    """Nothing ready, no timer, no socket watched, no thread at work: no task can ever wake
    (the traps kernel's rule). Waiting in select() would hang the program."""
    return RuntimeError(
        "deadlock: every task waits, and nothing can wake one: no timer is set, no socket is "
        "watched and no thread is working (a join or Queue wait that no task will end?)"
    )
