"""The round-robin tick scheduler: the simplest loop that is still a real one.

The idea (Andre Caron's "A tale of event loops", itself a distillation of curio): coroutines
talk to the loop by yielding plain request tuples such as ``("sleep", 0.5)`` or
``("read", sock)`` (the table below) through the small ``@types.coroutine`` helpers of
:mod:`.api`. Each tick the loop swaps its list of runnable tasks out and resumes every task in
the snapshot exactly once; whatever a task yields decides where it goes next. One turn per tick,
in three stages (:meth:`Loop._run_until`): wait for I/O (blocking until the next timer only when
nothing is runnable), expire timers, run ready.

Limits, all consequences of the idea: every request costs the requester one full tick (a socket
call is a checkpoint, then maybe a readiness wait; the two fenced exceptions are a recv after
its socket was drained, ``_drained``, and a reply right after its recv, ``_reply_in_turn``), so a
chain of requests is paid one tick at a time; each tick polls epoll even
when only CPU-bound tasks are runnable; and a task that never yields holds the loop (cooperative
scheduling cannot take the CPU away).
"""

# Requests (a tuple whose first item names it; anything else is refused with a TypeError thrown
# back into the task at the point where it yielded):
#   ("yield",)                  run again next tick
#   ("sleep", seconds)          run again once seconds have passed
#   ("join", task)              wait until task has ended
#   ("cancel", task)            throw CancelledError into task, then wait until it has ended
#   ("park", waiters, seconds)  wait in the deque waiters until woken (True) or timed out (False)
#   ("read", sock), ("write", sock)   wait until sock is readable / writable
#   ("thread", fn, args)        run fn(*args) in a worker thread; get its result or exception
#   ("deadline", seconds, d)    arm Deadline d on this task (it runs on next tick): when it
#                               passes, Expired(d) is thrown in wherever the task then waits
#
# What it builds on: epoll, read directly (``select.poll`` where there is none: loops/_poll.py),
# with registrations kept between waits, ``heapq`` for timers (cancelled lazily, compacted by
# asyncio's rule), a socketpair that worker threads (and, in the main thread, signals) write
# to so a blocked poll wakes up.

from __future__ import annotations

import concurrent.futures
import contextlib
import heapq
import itertools
import select
import socket
import sys
import threading
import traceback
import types
from collections import deque
from time import monotonic

from loops._poll import new_poller
from loops._signals import signals_wake

# Compaction: rebuild the heap when more than COMPACT_MIN_TIMERS of its timers are cancelled
# and they are more than COMPACT_CANCELLED_FRACTION of it (asyncio counts the whole heap).
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5
MAX_WAIT = 24 * 3600.0  # longest single poll, as asyncio: sleep(math.inf) must not overflow
READ, WRITE = select.POLLIN, select.POLLOUT  # the interest bits
# Any bit but "writable" (data, EOF, an error, a hang-up) reaches a reader, any bit but
# "readable" reaches a writer: the way selectors reports them too.
WAKES_READER, WAKES_WRITER = ~WRITE, ~READ

# What a task can drive: coroutines, and the @types.coroutine generators of .api (sleep, recv...)
COROUTINE_TYPES = (types.CoroutineType, types.GeneratorType)

_running = threading.local()  # .loop: the Loop running in this thread, if any


class CancelledError(BaseException):
    """Thrown into a task where it is suspended when the task is cancelled.

    A BaseException (as asyncio's is), so that ``except Exception`` does not swallow it.
    """


class Expired(CancelledError):
    """Thrown into a task, where it waits, when a deadline it set has passed.

    A CancelledError, so the work inside the timeout unwinds as if cancelled; ``deadline``
    tells the ``timeout_after`` that armed it from an outer one's (see :mod:`.api`).
    """

    def __init__(self, deadline: Deadline) -> None:
        super().__init__("deadline passed")
        self.deadline = deadline


class Deadline:
    """A deadline a task armed on itself (``("deadline", seconds)``): its entry in the timer
    heap, beside sleepers, so that it fires in deadline order with every other timer."""

    __slots__ = ("entry", "task")

    def __init__(self) -> None:
        self.task: Task | None = None  # the task that armed it
        self.entry: list | None = None  # [when, seq, self] while pending in the heap


def running_loop() -> Loop:
    """The loop running in this thread, or a clear RuntimeError."""
    loop = getattr(_running, "loop", None)
    if loop is None:
        raise RuntimeError("no roundrobin loop is running in this thread (use run(coro))")
    return loop


class Task:
    """A coroutine the loop drives, what it is blocked on, and how it ended."""

    __slots__ = (
        "coro",
        "done",
        "error",
        "io",
        "joined",
        "joiners",
        "reporter",
        "result",
        "send",
        "throw",
        "timer",
        "waited_on",
        "waiting",
    )

    def __init__(self, coro: types.CoroutineType) -> None:
        self.coro = coro
        self.send = None  # the value the next resume sends in
        self.throw = None  # the exception the next resume throws in (wins over send)
        self.waiting = None  # the request it is blocked on; None while runnable or running
        self.waited_on = None  # where that request parked it: a deque, an I/O record, a future
        self.timer = None  # its timer heap entry while a deadline is pending
        self.io = None  # (I/O record, event) it keeps registered from its last readiness wait
        self.joiners: deque[Task] = deque()  # tasks waiting for this one to end
        self.done = False
        self.result = None
        self.error: BaseException | None = None
        self.joined = False  # someone saw the outcome; if not, a failure is reported on deletion
        self.reporter: _Unjoined | None = None  # set while a failure is unjoined

    def __repr__(self) -> str:
        state = "done" if self.done else "blocked" if self.waiting else "runnable"
        return f"<Task {self.coro.__qualname__} {state}>"


class _Unjoined:
    """Says a task's failure that nobody joined once the task is garbage, like asyncio's "Task
    exception was never retrieved". A little object of its own, not Task.__del__, so that only
    failed tasks have a finalizer: CPython drops whatever a finalizer raises, a Ctrl-C handled
    in one included, and every task's deletion was such a moment."""

    __slots__ = ("error", "task")

    def __init__(self, task: str, error: BaseException) -> None:
        self.task = task  # its repr: the task itself would make a cycle
        self.error: BaseException | None = error  # None once joined

    def __del__(self) -> None:
        # getattr: a KeyboardInterrupt can cut __init__ short, and this still runs.
        error = getattr(self, "error", None)
        if error is not None:
            report = "".join(traceback.format_exception(error))
            sys.stderr.write(f"roundrobin: {self.task} failed and nobody joined it:\n{report}")


class IORecord:
    """One registered fd: the events epoll watches and the tasks waiting on them.

    The same record, with the same fields, in each loop that keeps its own epoll set:
    callbacks, futures, greenlets, roundrobin, scopes and traps.
    """

    __slots__ = ("events", "fd", "fileobj", "reader", "writer")

    def __init__(self, fileobj, fd: int, events: int) -> None:
        self.fileobj = fileobj  # the socket
        self.fd = fd
        self.events = events  # the poll bits registered (READ, WRITE)
        self.reader: Task | None = None  # the task waiting to read, if any
        self.writer: Task | None = None  # the task waiting to write, if any


class Loop:
    """One run of the scheduler: made by :func:`.api.run`, used once, then closed."""

    def __init__(self) -> None:
        self._runnable: list[Task] = []  # the tasks the next tick resumes, in order
        self._tasks: dict[Task, None] = {}  # every live task, in spawn order (for shutdown)
        self._timers: list[list] = []  # heap of [deadline, seq, task]; task None once cancelled
        self._cancelled_timers = 0  # heap entries whose task is None
        self._timer_seq = itertools.count()  # tie-breaker: equal deadlines fire in FIFO order
        self._epoll = new_poller()
        # fd -> IORecord: what epoll watches and for whom.
        # A task keeps its registration (Task.io) while it only passes checkpoints and waits
        # on the same socket again, as curio does: an echo loop costs no epoll_ctl per wait.
        self._io: dict[int, IORecord] = {}
        self._wake_reader, self._wake_writer = socket.socketpair()  # worker threads write here
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._epoll.register(self._wake_reader.fileno(), READ)
        self._threads_done: deque = deque()  # (task, future) pairs, appended by worker threads
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # made on first use
        self._threads_running = 0  # run_in_thread calls whose outcome has not come back yet
        self._closed = False
        self._handlers = {
            "yield": self._next_tick,
            "sleep": self._sleep,
            "join": self._join,
            "cancel": self._cancel,
            "park": self._park_request,
            "read": self._wait_io,
            "write": self._wait_io,
            "thread": self._thread,
            "deadline": self._deadline,
        }

    time = staticmethod(monotonic)

    # -- running ----------------------------------------------------------------------------

    def run(self, coro: types.CoroutineType):
        """Run coro as the main task; then cancel what is left and run it out. Its result."""
        if self._closed or getattr(_running, "loop", None) is not None:
            coro.close()  # refused, so it will never run: it must not warn "never awaited"
            if self._closed:
                raise RuntimeError("the loop is closed")
            raise RuntimeError("run() cannot be called while a roundrobin loop is running")
        _running.loop = self  # the last line before try: a signal cannot land between them
        try:
            # A signal must wake a poll blocked here, so that the main thread runs the Python
            # handler (KeyboardInterrupt) at once (loops/_signals.py).
            with signals_wake(self._wake_writer.fileno()):
                main = self.spawn(coro)
                main.joined = True  # its outcome is run()'s to return or raise
                self._run_until(lambda: main.done)
                for task in list(self._tasks):
                    self._deliver_cancel(task)
                self._run_until(lambda: not self._tasks)
        except BaseException:
            # KeyboardInterrupt, SystemExit or a loop failure: the tick may be half run, so do
            # not tick again; close every coroutine so its finally blocks run, and go.
            self._abandon_tasks()
            raise
        finally:
            _running.loop = None
        if main.error is not None:
            raise main.error
        return main.result

    def _run_until(self, finished) -> None:
        """The outer loop: one turn per tick until finished() says so."""
        timers, heappop = self._timers, heapq.heappop
        handlers, refuse, finish = self._handlers, self._refuse, self._finish
        while not finished():
            # 1. Wait for I/O. Poll when something is runnable; otherwise block until the next
            #    timer is due, or for good when there is none: never a busy wait.
            if self._runnable:
                timeout = 0
            else:
                while timers and timers[0][2] is None:
                    heappop(timers)
                    self._cancelled_timers -= 1
                timeout = min(max(timers[0][0] - monotonic(), 0), MAX_WAIT) if timers else None
                if timeout is None and not self._io and not self._threads_running:
                    raise _deadlock()
            for fd, bits in self._epoll.poll(timeout):  # (a new epoll after a ghost)
                record = self._io.get(fd)
                if record is not None:
                    self._io_ready(record, bits)
                elif fd == self._wake_reader.fileno():
                    self._drain_wakeups()
                else:  # readiness for an fd nobody watches: a ghost (see drop_ghosts)
                    self.drop_ghosts()
                    break  # the rest is reported again by the new epoll if it still holds
            if self._threads_done:
                self._collect_threads()

            # 2. Expire timers: wake every sleeper whose deadline has passed, earliest first.
            now = monotonic() if timers else 0.0  # no timer: no clock read
            while timers and timers[0][0] <= now:
                task = heappop(timers)[2]
                if task is None:
                    self._cancelled_timers -= 1
                    continue
                if type(task) is Deadline:  # a timeout_after's: in deadline order with sleeps
                    self._expire(task)
                    continue
                task.timer = None
                if task.waiting[0] == "park":  # a wait with a deadline: it timed out
                    task.waited_on.remove(task)
                    self._resume(task, False)
                else:
                    self._resume(task, None)

            # 3. Run ready: one tick. Swap the runnable list out and resume each task in the
            #    snapshot exactly once; what it yields is a request, handled right away.
            batch, self._runnable = self._runnable, []
            for task in batch:
                try:
                    if task.throw is None:
                        value, task.send = task.send, None
                        request = task.coro.send(value)
                    else:
                        error, task.throw = task.throw, None
                        request = task.coro.throw(error)
                except StopIteration as stop:
                    finish(task, stop.value, None)
                except (Exception, CancelledError) as error:
                    finish(task, None, error)
                else:
                    try:
                        if task.io is not None and request[0] != "yield":
                            self._settle_io(task, request)
                        handlers[request[0]](task, request)
                    except Exception as error:
                        refuse(task, request, error)

    # -- request handlers: each either puts the task back on the runnable list or blocks it --

    def _next_tick(self, task: Task, request: tuple) -> None:
        self._runnable.append(task)

    def _sleep(self, task: Task, request: tuple) -> None:
        self._set_timer(task, request[1])
        task.waiting = request

    def _join(self, task: Task, request: tuple) -> None:
        self._park(task, request, request[1].joiners, None)

    def _cancel(self, task: Task, request: tuple) -> None:
        target = request[1]
        if target.done:
            self._runnable.append(task)
            return
        self._deliver_cancel(target)
        if target is task:  # cancelling itself: the error surfaces at this very await
            self._runnable.append(task)
        else:
            self._park(task, request, target.joiners, None)

    def _park_request(self, task: Task, request: tuple) -> None:
        self._park(task, request, request[1], request[2])

    def _wait_io(self, task: Task, request: tuple) -> None:
        sock = request[1]
        reading = request[0] == "read"
        event = READ if reading else WRITE
        fd = sock.fileno()
        record = self._io.get(fd)
        if record is not None and record.fileobj is sock:
            if (waiter := record.reader if reading else record.writer) is not None:
                raise RuntimeError(f"{waiter!r} is already waiting to {request[0]} {sock!r}")
            if not record.events & event:
                record.events |= event
                self._epoll.modify(fd, record.events)
        else:
            if record is not None:  # fd reused by a new socket: the old registration is stale
                self._forget(record)
            record = IORecord(sock, fd, event)
            self._epoll.register(fd, event)
            self._io[fd] = record
        if reading:
            record.reader = task
        else:
            record.writer = task
        task.waiting = request
        task.waited_on = record
        if task.io is None:  # else it is this very registration, kept (see _settle_io)
            task.io = (record, event)

    def _thread(self, task: Task, request: tuple) -> None:
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="roundrobin")
        future = self._pool.submit(request[1], *request[2])
        self._threads_running += 1
        task.waiting = request
        task.waited_on = future
        future.add_done_callback(lambda done: self._thread_finished(task, done))

    def _refuse(self, task: Task, request, error: Exception) -> None:
        """A request the loop cannot honour: the error is thrown back into the requester."""
        name = request[0] if isinstance(request, tuple) and request else None
        if not (isinstance(name, str) and name in self._handlers):
            error = TypeError(
                f"roundrobin: a task yielded {request!r}, which is not a request this loop "
                "knows; await only the functions of loops.roundrobin (another library's "
                "awaitables speak to their own loop)"
            )
        task.throw = error
        self._runnable.append(task)

    # -- blocking and waking ----------------------------------------------------------------

    def spawn(self, coro) -> Task:
        """A new task for coro, queued behind the runnable ones: it first runs next tick.

        Not a request: it waits for nothing, so the spawner goes on without losing its turn
        (as in asyncio, curio and trio), and siblings start in the order they were spawned.
        """
        if not isinstance(coro, COROUTINE_TYPES):
            raise TypeError(f"expected a coroutine (an async def called), got {coro!r}")
        task = Task(coro)
        self._tasks[task] = None
        self._runnable.append(task)
        return task

    def _park(self, task: Task, request: tuple, waiters: deque, seconds: float | None) -> None:
        waiters.append(task)
        task.waiting = request
        task.waited_on = waiters
        if seconds is not None:
            self._set_timer(task, seconds)

    def _set_timer(self, task: Task, seconds: float) -> None:
        entry = [monotonic() + seconds, next(self._timer_seq), task]
        heapq.heappush(self._timers, entry)
        task.timer = entry

    def _resume(self, task: Task, value) -> None:
        """Make a blocked task runnable with value for its await; drop its pending deadline."""
        if task.timer is not None:
            task.timer[2] = None  # lazy cancellation: the heap entry is skipped when it surfaces
            task.timer = None
            self._cancelled_timers += 1
            cancelled = self._cancelled_timers
            if cancelled > COMPACT_MIN_TIMERS and cancelled > (
                COMPACT_CANCELLED_FRACTION * len(self._timers)
            ):
                self._timers[:] = [entry for entry in self._timers if entry[2] is not None]
                heapq.heapify(self._timers)
                self._cancelled_timers = 0
        task.waiting = task.waited_on = None
        task.send = value
        self._runnable.append(task)

    def wake(self, waiters: deque, count: int | None = None) -> None:
        """Wake the first count tasks parked in waiters (all of them if count is None)."""
        for _ in range(len(waiters) if count is None else min(count, len(waiters))):
            self._resume(waiters.popleft(), True)

    def _deadline(self, task: Task, request: tuple) -> None:
        _, seconds, deadline = request
        deadline.task = task
        deadline.entry = [monotonic() + seconds, next(self._timer_seq), deadline]
        heapq.heappush(self._timers, deadline.entry)
        self._runnable.append(task)

    def clear_deadline(self, deadline: Deadline) -> None:
        """Disarm a deadline that has not passed (lazily: its heap entry is skipped later)."""
        if deadline.entry is not None:
            deadline.entry[2] = None
            deadline.entry = None
            self._cancelled_timers += 1

    def _expire(self, deadline: Deadline) -> None:
        deadline.entry = None
        task = deadline.task
        if not task.done and task.throw is None:  # a cancellation on its way wins
            self._deliver_cancel(task, Expired(deadline))

    def _deliver_cancel(self, target: Task, error: CancelledError | None = None) -> None:
        """CancelledError (or Expired) for target at its suspension point: unblock it."""
        target.throw = CancelledError() if error is None else error
        if target.waiting is None:
            return  # runnable (or running): the error goes in at its next resume
        kind, waited_on = target.waiting[0], target.waited_on
        if kind in ("park", "join", "cancel"):
            waited_on.remove(target)
        elif kind in ("read", "write"):
            if kind == "read":
                waited_on.reader = None
            else:
                waited_on.writer = None
            self._release_io(target)
        elif kind == "thread":
            waited_on.cancel()  # stops it if not started; a running thread finishes unheard
        self._resume(target, None)

    def _finish(self, task: Task, result, error: BaseException | None) -> None:
        task.done = True
        task.result = result
        task.error = error
        if error is not None and not task.joined and not isinstance(error, CancelledError):
            task.reporter = _Unjoined(repr(task), error)
        del self._tasks[task]
        if task.io is not None:
            self._release_io(task)
        self.wake(task.joiners)

    def _io_ready(self, record: IORecord, bits: int) -> None:
        """Wake the waiters of a ready fd; narrow the registration where nobody waits."""
        events = (READ if bits & WAKES_READER else 0) | (WRITE if bits & WAKES_WRITER else 0)
        events &= record.events  # an error or a hang-up reaches both directions
        if events & READ:
            task = record.reader
            if task is not None:
                record.reader = None
                self._resume(task, None)
            elif record.fileobj.fileno() != record.fd:  # reported although closed: a ghost
                self._drop_ghost(record)
                return
            else:  # its task is busy elsewhere: stop epoll reporting it over and over
                self._narrow(record, READ)
        elif not events & WRITE:  # bits it never asked for: a ghost's (see drop_ghosts)
            self.drop_ghosts()
            return
        if events & WRITE:
            task = record.writer
            if task is not None:
                record.writer = None
                self._resume(task, None)
            elif record.fileobj.fileno() != record.fd:
                self._drop_ghost(record)
            else:
                self._narrow(record, WRITE)

    def _settle_io(self, task: Task, request: tuple) -> None:
        """Keep the task's registration if it waits on the same socket and event again."""
        record, event = task.io
        if request[0] != ("read" if event == READ else "write") or request[1] is not record.fileobj:
            self._release_io(task)

    def _release_io(self, task: Task) -> None:
        record, event = task.io
        task.io = None
        waiter = record.reader if event == READ else record.writer
        # Unless the fd went to a new socket, someone else waits, or it was narrowed already.
        if self._io.get(record.fd) is record and record.events & event and not waiter:
            if record.fileobj.fileno() != record.fd:
                # Closed by its task: left as it is, so that if a dup keeps the file open,
                # its readiness still reaches _io_ready (and _drop_ghost) instead of being
                # missed. Otherwise the kernel forgot it already, and the
                # fd's next socket replaces the record.
                return
            self._narrow(record, event)

    def _narrow(self, record: IORecord, event: int) -> None:
        record.events &= ~event
        if not record.events:
            self._forget(record)
            return
        try:
            self._epoll.modify(record.fd, record.events)
        except OSError:  # the socket was closed under us; epoll has dropped it
            del self._io[record.fd]

    # twin of loops/futures/reactor.py: Loop._drop_ghost
    def _drop_ghost(self, record: IORecord) -> None:
        """Readiness for a socket closed since: drop it, on a fresh epoll.

        epoll registers a *file* under an fd number. When the number is closed while a dup
        (``os.dup``, ``socket.fromfd``, a child process) keeps the file open, epoll goes on
        reporting it under the dead number, and no ``epoll_ctl`` can remove it any more (it
        takes a live number). Left alone it wakes every
        poll at once, forever: 100 % CPU. Only a new epoll instance drops it: every live
        registration moves over (one ``epoll_ctl`` each, once: this happens only when a
        program closes a socket the loop still watches, behind a dup).
        """
        if self._io.get(record.fd) is not record:
            return  # dropped by a rebuild earlier in this batch of events
        del self._io[record.fd]
        self.drop_ghosts()

    # twin of loops/futures/reactor.py: Loop.drop_ghosts
    def drop_ghosts(self) -> None:
        """Move every live registration to a fresh epoll (see _drop_ghost), and close the old.

        Also called when a ghost shares its number with a live socket: a closed socket's file,
        kept open by a dup, whose number a new socket reuses, is reported under that number,
        as bits the new socket never asked for (_io_ready) or as wake-ups for nothing
        (api.py's _woken_for_nothing); and when its number is nobody's, as readiness for an fd
        the loop does not watch (_run_until).
        """
        old, self._epoll = self._epoll, new_poller()
        old.close()
        self._epoll.register(self._wake_reader.fileno(), READ)
        for fd, live in list(self._io.items()):
            if live.fileobj.fileno() == fd:
                self._epoll.register(fd, live.events)
                continue
            del self._io[fd]  # closed as well: whoever waits learns so from the next call
            for task in live.reader, live.writer:
                if task is not None:
                    self._resume(task, None)

    def _forget(self, record: IORecord) -> None:
        with contextlib.suppress(OSError):  # closed meanwhile: epoll dropped it by itself
            self._epoll.unregister(record.fd)
        del self._io[record.fd]

    def _thread_finished(self, task: Task, future: concurrent.futures.Future) -> None:
        """(in the worker thread) Hand the outcome to the loop and wake it."""
        self._threads_done.append((task, future))
        # OSError: the buffer is full (a wake-up is pending anyway) or the loop has closed.
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def _drain_wakeups(self) -> None:
        try:
            while self._wake_reader.recv(4096):
                pass
        except BlockingIOError:
            pass

    def _collect_threads(self) -> None:
        while self._threads_done:
            task, future = self._threads_done.popleft()
            self._threads_running -= 1
            if task.waited_on is not future:
                continue  # cancelled while the thread ran: nobody wants the outcome
            error = future.exception()
            if error is None:
                self._resume(task, future.result())
            else:
                task.throw = error
                self._resume(task, None)

    # -- shutdown ---------------------------------------------------------------------------

    def _abandon_tasks(self) -> None:
        while self._tasks:  # drained, not iterated: a finally block may spawn one more
            task = next(iter(self._tasks))
            del self._tasks[task]
            # RuntimeError: it awaited in a finally block; it cannot run any further here anyway.
            with contextlib.suppress(RuntimeError):
                task.coro.close()
        self._runnable.clear()

    def close(self) -> None:
        """Release the worker threads, epoll and the wake-up sockets; idempotent."""
        if self._closed:
            return
        self._closed = True
        self._abandon_tasks()
        if self._pool is not None:
            self._pool.shutdown(wait=True)  # before the wake-up socket goes: they write to it
        self._epoll.close()
        self._wake_reader.close()
        self._wake_writer.close()
        self._io.clear()
        self._timers.clear()


def _deadlock() -> RuntimeError:
    """Nothing runnable, no timer, no socket watched, no thread at work: no task can ever wake
    (the traps kernel's rule). Waiting in a poll would hang the program."""
    return RuntimeError(
        "deadlock: every task waits, and nothing can wake one: no timer is set, no socket is "
        "watched and no thread is working (a join or Queue wait that no task will end?)"
    )
