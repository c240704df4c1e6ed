"""The kernel: runs tasks until they trap, then does what the trap asks.

The idea (curio's design, "a tale of event loops" grown up): coroutines never see the loop.
Every operation that may block is a *trap*, a request tuple ``(name, *args)`` yielded by the
one ``@types.coroutine`` in :mod:`loops.completions.traps`. The kernel sends a task its next
value, gets a request back, finds the handler for ``request[0]`` in its trap table and calls it. A
handler either answers at once (``spawn``: the task goes on running, no switch) or returns
``SUSPEND`` after recording what the task waits for (``sleep``, ``operation``, ``join``...); the
event that satisfies the wait puts the task back on the ready queue. Cancellation is
``coro.throw(CancelledError())`` at the suspension point, after the kernel undoes the wait.
(Here, as in curio, "the kernel" is this loop; the operating system's kernel is "Linux".)

What it builds on: the traps kernel, with its epoll replaced by an io_uring (a proactor, as
Windows IOCP is; :class:`loops.completions.uring.Ring`), which ``diff -u loops/traps/kernel.py
loops/completions/kernel.py`` shows (the README walks it). A trap hands Linux the whole
operation (recv into this buffer, send these bytes, accept, connect, recvmsg/sendmsg) as one SQE
with the task's id as ``user_data``; one ``io_uring_enter`` per turn hands every queued SQE to
Linux and, if nothing is ready to run, waits for the first completion or the next timer (the
enter's own timeout, ``IORING_ENTER_EXT_ARG``: the README argues why not ``IORING_OP_TIMEOUT``).
Each CQE names its task by ``user_data``; ``res`` is the operation's result (a byte count, a new
fd, 0) or ``-errno``, which the task gets as ``OSError(errno)``. The proactor's classic hazard,
a buffer Linux owns until its operation's completion even if the task is cancelled meanwhile,
is handled in ``_interrupt``; ``_drain_ring`` waits for every completion before close() frees
the ring.

Limits: Linux x86-64 with io_uring (the variant is unavailable elsewhere, see ``__init__.py``);
a task may await only this kernel's traps (an asyncio future is rejected with a TypeError);
the kernel runs in one thread (one ring per ``run()``), and only run_in_thread crosses threads.
"""

# twin of loops/traps/kernel.py

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import ctypes
import errno
import heapq
import itertools
import logging
import math
import os
import threading
import time
from heapq import heappush
from time import monotonic
from types import CoroutineType
from typing import Any

from loops.completions.task import (
    CANCELLING,
    DONE,
    JOINING,
    OPERATION,
    PARKED,
    READY,
    SLEEPING,
    THREAD,
    CancelledError,
    Expired,
    Task,
)
from loops.completions.traps import cancel
from loops.completions.uring import CANCEL_ANY, OP_ASYNC_CANCEL, OP_READ, Ring

SUSPEND = object()  # a trap handler's answer meaning: the task waits, resume it later
# Compaction: rebuild the heap when more than COMPACT_MIN_TIMERS of its timers are cancelled
# and they are more than COMPACT_CANCELLED_FRACTION of it (asyncio counts the whole heap).
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5
MAX_WAIT = 24 * 3600.0  # the longest single wait (asyncio's cap)

CANCEL_USER_DATA = 0  # the user_data of ASYNC_CANCEL requests: their own CQEs are ignored
WAKE_USER_DATA = 1  # the user_data of the threads' wake-up read, kept in flight
SHUTDOWN_GRACE = 5.0  # seconds close() waits for cancelled operations to complete
RING_ENTRIES = 4096  # SQ slots; the CQ gets four times as many (completions pile up faster)


logger = logging.getLogger(__name__)


class _Running(threading.local):
    loop: Loop | None = None  # the kernel (Loop) running in this thread, if any


_running = _Running()


def now() -> float:
    """The running kernel's clock (time.monotonic), in seconds."""
    if _running.loop is None:
        running_loop()  # raises: no kernel runs in this thread
    return time.monotonic()


def running_loop() -> Loop:
    """The kernel running in this thread, or RuntimeError outside of run()."""
    kernel = _running.loop
    if kernel is None:
        raise RuntimeError("no completions loop is running in this thread (call this inside run())")
    return kernel


class Loop:
    """Runs coroutines as tasks; every blocking operation reaches it as a trap."""

    def __init__(self) -> None:
        self._ready: collections.deque[Task] = collections.deque()  # runnable tasks, FIFO
        # Timers: a heap of (deadline, seq) and, per armed timer, its task under its seq. A
        # heap entry whose seq is in neither dict was cancelled and is dropped when it surfaces
        # (lazy cancellation); the entries hold no task, so the GC never has to look at them.
        self._timers: list[tuple[float, int]] = []  # heap; seq breaks ties: FIFO
        self._sleepers: dict[int, Task] = {}  # seq -> task sleeping until that timer
        self._timeouts: dict[int, Task] = {}  # seq -> task with a timeout_after armed
        self._timer_seq = itertools.count()  # the next seq
        self._ring = Ring(RING_ENTRIES, 4 * RING_ENTRIES)  # the SQ and CQ rings, mapped
        self._in_flight: dict[int, Task] = {}  # user_data (task.id) -> task, until its CQE
        self._tasks: set[Task] = set()  # every task not yet DONE
        self._unseen_failures: dict[Task, None] = {}  # failed tasks nobody joined (yet)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # for run_in_thread
        self._wake_fd = -1  # an eventfd threads write to; a READ of it stays in flight
        self._wake_buffer = ctypes.create_string_buffer(8)  # that READ's buffer (a counter)
        self._thread_jobs = 0  # thread calls submitted and not yet collected
        self._thread_results: collections.deque = collections.deque()  # (task, future) done
        self._closed = False
        self._raised_by_a_task: BaseException | None = None  # see run()
        # The trap table: request name -> handler(task, request) -> answer or SUSPEND.
        self._traps = {
            "sleep": self._trap_sleep,
            "spawn": self._trap_spawn,
            "join": self._trap_join,
            "cancel": self._trap_cancel,
            "operation": self._trap_operation,
            "thread": self._trap_thread,
            "park": self._trap_park,
            "wake": self._trap_wake,
            "set_timer": self._trap_set_timer,
            "clear_timer": self._trap_clear_timer,
        }
        # How to undo each kind of wait when a task is cancelled or times out. An operation
        # is not in this table: it cannot be undone at once (see _interrupt).
        self._unwait = {
            SLEEPING: self._unwait_timer,
            JOINING: self._unwait_joiner,
            CANCELLING: self._unwait_joiner,
            PARKED: self._unwait_parked,
            THREAD: self._unwait_thread,
        }

    # ------------------------------------------------------------------ public surface

    def run(self, coro: Any) -> Any:
        """Run coro as the main task until it ends; return its result or raise its error."""
        if self._closed:
            raise RuntimeError("the completions loop is closed")
        _check_not_running()
        main = self._spawn(coro)
        main.joined = True  # its outcome is run()'s to report
        try:
            self._run_until(main)
        except BaseException as error:
            if not isinstance(error, Exception) and error is not self._raised_by_a_task:
                # A KeyboardInterrupt from a signal lands between any two lines of the
                # kernel's own bookkeeping: a task popped from the ready queue and not yet
                # run, a finish half done. Another tick could wait forever on what that step
                # left behind (close() cancelling a task no queue holds), so the tasks are
                # closed here, untouched by the kernel: their finally blocks run. Their
                # operations stay in _in_flight, buffers and all, until close() has Linux
                # cancel them and collects their completions.
                self._abandon_tasks()
            raise
        finally:
            self._raised_by_a_task = None
        if main.exception is not None:
            raise main.exception
        return main.result

    def close(self) -> None:
        """Cancel the tasks still alive, let them unwind, then release every resource.

        Idempotent. Like asyncio.run(), leftover tasks get a CancelledError and run their
        cleanup; failures nobody joined are logged here, once.
        """
        if self._closed:
            return
        if _running.loop is self:
            raise RuntimeError("cannot close the completions loop from inside a task")
        try:
            while self._tasks:
                leftovers = list(self._tasks)
                for task in leftovers:  # before any of them runs again
                    if not _cancel_on_its_way(task):
                        self._interrupt(task, CancelledError())
                self._run_until(self._spawn(_cancel_all(leftovers)))
        finally:
            self._closed = True
            for task in self._unseen_failures:
                logger.error("%r failed and nobody joined it", task, exc_info=task.exception)
            self._unseen_failures.clear()
            if self._pool is not None:  # first: no worker may write the eventfd once closed
                self._pool.shutdown(wait=True)
            self._drain_ring()

    def _abandon_tasks(self) -> None:
        """Close every task's coroutine without the kernel, and forget every wait."""
        for task in self._tasks:
            if task.reaped is not None:  # completed, never delivered: its buffer goes back
                self._give_back(task, task.reaped)
            task.state = DONE
            # RuntimeError: it awaited in a finally block; it cannot run any further anyway.
            with contextlib.suppress(RuntimeError):
                task.coro.close()
        self._tasks.clear()
        self._ready.clear()
        self._timers.clear()
        self._sleepers.clear()
        self._timeouts.clear()

    def wake_all(self, waiters: collections.deque) -> None:
        """Make every task parked in `waiters` ready (for synchronous callers: task_done)."""
        while waiters:
            self._make_ready(waiters.popleft())

    # ------------------------------------------------------------------ the run loop

    def _run_until(self, main: Task) -> None:
        _check_not_running()
        _running.loop = self
        try:
            self._loop(main)
        finally:
            _running.loop = None

    def _loop(self, main: Task) -> None:
        # Everything the loop touches per switch is bound to a local name once.
        ready = self._ready
        ready_pop = ready.popleft
        ready_push = ready.append
        timers = self._timers
        sleepers = self._sleepers
        sleepers_pop = sleepers.pop
        timeouts = self._timeouts
        heappop = heapq.heappop
        enter = self._ring.enter
        reap = self._ring.reap
        in_flight = self._in_flight  # every operation submitted and not yet completed
        in_flight_pop = in_flight.pop
        clock = time.monotonic
        traps = self._traps
        finish = self._finish
        done = DONE
        ready_state = READY
        operation = OPERATION
        suspend = SUSPEND

        while main.state is not done:
            # ---- stage 1: submit every queued operation, wait for completions only while
            # nothing is ready, and resume each task whose operation completed
            if ready:  # just submit: no syscall if nothing is queued or due; reaping needs none
                enter(0)
            elif timers:
                enter(min(max(timers[0][0] - clock(), 0), MAX_WAIT))
            elif in_flight or self._thread_jobs:
                enter(None)
            else:
                raise _deadlock(main)
            for user_data, res in reap():
                task = in_flight_pop(user_data, None)
                # No task: an ASYNC_CANCEL's own answer (ignored), or the threads' wake-up.
                if task is None:
                    if user_data == WAKE_USER_DATA:
                        self._collect_thread_results()
                    continue
                if task.state is not operation:  # abandoned (see run): just release
                    self._give_back(task, res)
                    continue
                pending = task.pending
                if pending is None:
                    # Turned into the value only as the task runs (stage 3): a timeout that
                    # expires in stage 2 of this turn can still give the result back.
                    task.reaped = res
                else:  # interrupted meanwhile: the interruption wins, the result is kept
                    task.pending = None
                    self._give_back(task, res)
                    task.throw = pending
                task.state = ready_state
                ready_push(task)

            # ---- stage 2: expire timers
            if timers:
                now = clock()
                while timers and timers[0][0] <= now:
                    seq = heappop(timers)[1]
                    task = sleepers_pop(seq, None)
                    if task is not None:  # a sleep ended
                        task.state = ready_state
                        ready_push(task)
                    elif seq in timeouts:
                        self._expire(timeouts.pop(seq), seq)
                    # else: cancelled earlier, dropped here
                cancelled = len(timers) - len(sleepers) - len(timeouts)
                if cancelled > COMPACT_MIN_TIMERS and cancelled > (
                    COMPACT_CANCELLED_FRACTION * len(timers)
                ):
                    self._compact_timers()

            # ---- stage 3: run the tasks that were ready when this stage began
            for _ in range(len(ready)):
                task = ready_pop()
                coro = task.coro
                value = task.value
                if value is not None:
                    task.value = None
                throw = task.throw
                if throw is not None:
                    task.throw = None
                if task.reaped is not None:  # its operation completed: the answer, at last
                    value, throw = self._deliver(task)
                # Non-blocking traps are answered at once, so a task runs until it suspends.
                while True:
                    try:
                        if throw is None:
                            request = coro.send(value)
                        else:
                            request = coro.throw(throw)
                            throw = None
                    except StopIteration as stop:
                        finish(task, stop.value, None)
                        break
                    except BaseException as error:
                        finish(task, None, error)
                        if not isinstance(error, Exception | CancelledError):
                            # KeyboardInterrupt, SystemExit: out of run(), the kernel whole
                            self._raised_by_a_task = error
                            raise
                        break
                    try:
                        handler = traps[request[0]]
                    except Exception:
                        value, throw = None, _unknown_request(task, request)
                        continue
                    try:
                        value = handler(task, request)
                    except Exception as error:  # a bad request: raise it where it was made
                        value, throw = None, error
                        continue
                    if value is suspend:
                        break

    # ------------------------------------------------------------------ traps

    def _trap_sleep(self, task: Task, request: tuple) -> Any:
        seconds = request[1]
        if math.isnan(seconds):
            raise ValueError("sleep(nan): a delay must be a number of seconds")
        if seconds > 0:
            seq = next(self._timer_seq)
            heappush(self._timers, (monotonic() + seconds, seq))
            self._sleepers[seq] = task
            task.state = SLEEPING
            task.waiting_on = seq
        else:  # just yield: back of the queue, still READY
            self._ready.append(task)
        return SUSPEND

    def _trap_spawn(self, task: Task, request: tuple) -> Task:
        return self._spawn(request[1])  # answered at once: the spawner runs on, no switch

    def _trap_join(self, task: Task, request: tuple) -> Any:
        target = request[1]
        if type(target) is not Task:
            raise _not_a_task(target, "join")
        if target.state is DONE:  # finished already: answer at once
            target.joined = True
            if target.exception is not None:
                self._unseen_failures.pop(target, None)
                raise target.exception
            return target.result
        if target is task:
            raise RuntimeError(f"{task!r} cannot join itself: it would wait forever")
        if target not in self._tasks:
            raise _not_ours(target, "join")
        self._wait_for_end(task, target, JOINING)
        return SUSPEND

    def _trap_cancel(self, task: Task, request: tuple) -> Any:
        target = request[1]
        if type(target) is not Task:
            raise _not_a_task(target, "cancel")
        if target.state is DONE:
            return None
        if target is task:  # cancelling oneself: the cancellation arrives right here
            raise CancelledError()
        if target not in self._tasks:
            raise _not_ours(target, "cancel")
        if not _cancel_on_its_way(target):
            self._interrupt(target, CancelledError())
        self._wait_for_end(task, target, CANCELLING)
        return SUSPEND

    def _trap_operation(self, task: Task, request: tuple) -> Any:
        _, opcode, sock, addr, length, pinned, complete, off, op_flags = request
        fd = sock.fileno()
        if fd < 0:
            raise OSError(errno.EBADF, f"cannot operate on a closed socket: {sock!r}")
        self._ring.prepare_op(opcode, fd, addr, length, off, op_flags, task.id)
        self._in_flight[task.id] = task
        task.complete = complete
        task.pinned = pinned
        task.state = OPERATION
        task.waiting_on = sock
        return SUSPEND

    def _trap_thread(self, task: Task, request: tuple) -> Any:
        _, fn, args = request
        if self._pool is None:
            self._start_threads()
        future = self._pool.submit(fn, *args)
        self._thread_jobs += 1
        task.state = THREAD
        task.waiting_on = future
        future.add_done_callback(lambda f, task=task: self._thread_finished(task, f))
        return SUSPEND

    def _trap_park(self, task: Task, request: tuple) -> Any:
        waiters = request[1]
        waiters.append(task)
        task.state = PARKED
        task.waiting_on = waiters
        return SUSPEND

    def _trap_wake(self, task: Task, request: tuple) -> None:
        _, waiters, n = request
        for _ in range(min(n, len(waiters))):
            self._make_ready(waiters.popleft())

    def _trap_set_timer(self, task: Task, request: tuple) -> int:
        seconds = request[1]
        if math.isnan(seconds):
            raise ValueError("timeout_after(nan): a timeout must be a number of seconds")
        seq = next(self._timer_seq)
        heappush(self._timers, (monotonic() + seconds, seq))
        self._timeouts[seq] = task
        return seq

    def _trap_clear_timer(self, task: Task, request: tuple) -> None:
        self._timeouts.pop(request[1], None)  # lazily: its heap entry goes when it surfaces

    # ------------------------------------------------------------------ tasks

    def _spawn(self, coro: Any) -> Task:
        if type(coro) is not CoroutineType and not (
            hasattr(coro, "send") and hasattr(coro, "throw")
        ):
            raise TypeError(f"spawn() needs a coroutine (call the async function): got {coro!r}")
        task = Task(coro)
        self._tasks.add(task)
        self._ready.append(task)
        return task

    def _make_ready(self, task: Task) -> None:
        task.state = READY
        self._ready.append(task)

    def _finish(self, task: Task, result: Any, exception: BaseException | None) -> None:
        task.state = DONE
        task.result = result
        task.waiting_on = None
        self._tasks.discard(task)
        joiners = task.joiners
        if joiners is None and exception is None:  # the usual end: nobody waits, no error
            return
        task.exception = exception
        if joiners:
            task.joiners = None
            task.joined = True
            for joiner in joiners:
                if joiner.state is JOINING:  # CANCELLING waiters just resume
                    if exception is None:
                        joiner.value = result
                    else:
                        joiner.throw = exception
                self._make_ready(joiner)
        elif isinstance(exception, Exception) and not task.joined:
            # A cancellation is no failure; a KeyboardInterrupt or SystemExit goes out of run(),
            # where the user sees it.
            self._unseen_failures[task] = None

    def _wait_for_end(self, task: Task, target: Task, state: str) -> None:
        if target.joiners is None:
            target.joiners = []
        target.joiners.append(task)
        task.state = state
        task.waiting_on = target

    def _interrupt(self, task: Task, error: BaseException) -> None:
        """Deliver error at task's suspension point, undoing whatever it waits for.

        An operation in flight cannot be undone here: Linux owns its buffer until its
        completion. So the kernel asks Linux to cancel it and holds the error back
        (``task.pending``); the task stays suspended until the operation's CQE arrives, which
        releases the buffer and resumes the task with the error. If the operation won the
        race (it completed before the cancel reached it), its result is not lost: its
        completer keeps it for the next call on that socket (``_leftovers`` in ``api.py``),
        as the bytes would have stayed in the socket for a readiness loop.
        """
        if task.state is OPERATION:
            if task.pending is None:  # ASYNC_CANCEL's addr: the user_data of what to cancel
                self._ring.prepare(OP_ASYNC_CANCEL, addr=task.id, user_data=CANCEL_USER_DATA)
            task.pending = error
            return
        if task.state is not READY:
            self._unwait[task.state](task)
            self._make_ready(task)
        elif task.reaped is not None:  # completed, not yet delivered: nothing received is lost
            self._give_back(task, task.reaped)
        task.value = None  # a ready task loses what it would have received
        task.throw = error

    def _expire(self, task: Task, timer: int) -> None:
        if task.state is DONE:
            return  # ended without clearing its timer (only a bare set_timer can do that)
        if task.pending is not None or (task.state is READY and task.throw is not None):
            return  # a cancellation (or an outer timeout) is already on its way: it wins
        self._interrupt(task, Expired(timer))

    # ------------------------------------------------------------------ undoing waits

    def _unwait_timer(self, task: Task) -> None:
        del self._sleepers[task.waiting_on]  # lazily: its heap entry goes when it surfaces

    def _unwait_joiner(self, task: Task) -> None:
        task.waiting_on.joiners.remove(task)

    def _unwait_parked(self, task: Task) -> None:
        task.waiting_on.remove(task)

    def _unwait_thread(self, task: Task) -> None:
        task.waiting_on.cancel()  # stops it if it has not started; a late result is ignored

    # ------------------------------------------------------------------ timers

    def _compact_timers(self) -> None:
        armed = self._sleepers.keys() | self._timeouts.keys()
        self._timers[:] = [entry for entry in self._timers if entry[1] in armed]
        heapq.heapify(self._timers)

    # ------------------------------------------------------------------ I/O completions

    @staticmethod
    def _deliver(task: Task) -> tuple[Any, BaseException | None]:
        """A completed operation's (value, error) for the task about to run; the buffer goes."""
        complete, pinned, res = task.complete, task.pinned, task.reaped
        task.complete = task.pinned = task.reaped = None
        try:
            return complete(res, pinned, task.waiting_on, interrupted=False), None
        except Exception as error:
            return None, error

    @staticmethod
    def _give_back(task: Task, res: int) -> None:
        """Release an operation its task will not take: its buffer goes back to the pool, and
        what it received is kept for the next call on that socket (api.py: _keep_leftover),
        as the bytes would have stayed in the socket for a readiness loop."""
        complete, pinned = task.complete, task.pinned
        task.complete = task.pinned = task.reaped = None
        complete(res, pinned, task.waiting_on, interrupted=True)

    def _drain_ring(self) -> None:
        """Have Linux cancel whatever is still in flight and wait for every completion, so
        that no buffer is freed while Linux may still write into it."""
        ring = self._ring
        if self._wake_fd >= 0:
            os.eventfd_write(self._wake_fd, 1)  # completes the wake-up read
        if self._in_flight:
            ring.prepare(OP_ASYNC_CANCEL, op_flags=CANCEL_ANY, user_data=CANCEL_USER_DATA)
        deadline = monotonic() + SHUTDOWN_GRACE
        while (self._in_flight or self._wake_fd >= 0) and monotonic() < deadline:
            ring.enter(max(deadline - monotonic(), 0))
            for user_data, _ in ring.reap():
                if user_data == WAKE_USER_DATA:
                    os.close(self._wake_fd)
                    self._wake_fd = -1
                    continue
                task = self._in_flight.pop(user_data, None)
                if task is not None:
                    task.complete = task.pinned = None
        if self._in_flight or self._wake_fd >= 0:
            # Linux still owns these buffers: keep them alive for the life of the process
            # rather than free memory it may write into. Never seen; logged if it happens.
            _orphans.append((ring, self._in_flight, self._wake_buffer))
            logger.error("%d io_uring operations did not complete at close", len(self._in_flight))
            return
        ring.close()

    # ------------------------------------------------------------------ threads

    def _start_threads(self) -> None:
        """The pool, and its wake-up: an eventfd whose READ stays in flight in the ring.

        A worker that finishes writes the eventfd; the READ completes, its CQE ends the
        kernel's wait like any other completion, and is submitted again once collected. The
        eventfd is blocking on purpose: io_uring returns EAGAIN for a READ of a non-blocking
        file instead of waiting for it."""
        self._pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="completions")
        self._wake_fd = os.eventfd(0, os.EFD_CLOEXEC)
        self._arm_wake_up()

    def _arm_wake_up(self) -> None:
        address = ctypes.addressof(self._wake_buffer)
        self._ring.prepare(
            OP_READ, fd=self._wake_fd, addr=address, length=8, user_data=WAKE_USER_DATA
        )

    def _thread_finished(self, task: Task, future: concurrent.futures.Future) -> None:
        # Runs in the worker thread: only a deque append (atomic) and a wake-up write.
        self._thread_results.append((task, future))
        with contextlib.suppress(OSError):  # closed: the kernel is gone
            os.eventfd_write(self._wake_fd, 1)

    def _collect_thread_results(self) -> None:
        if not self._closed:
            self._arm_wake_up()
        results = self._thread_results
        while results:
            task, future = results.popleft()
            self._thread_jobs -= 1
            if task.state is not THREAD or task.waiting_on is not future:
                continue  # the task was cancelled meanwhile: drop the late result
            error = future.exception()
            if error is None:
                task.value = future.result()
            else:
                task.throw = error
            self._make_ready(task)


_orphans: list = []  # (ring, operations, buffer) whose completions never came: never freed


async def _cancel_all(tasks: list[Task]) -> None:
    """The shutdown task: wait for each leftover task (already cancelled) to unwind."""
    for task in tasks:
        await cancel(task)


def _cancel_on_its_way(task: Task) -> bool:
    """True if a cancellation already waits to reach task: at its next run, or at its CQE."""
    return type(task.throw) is CancelledError or type(task.pending) is CancelledError


def _check_not_running() -> None:
    if _running.loop is not None:
        raise RuntimeError("run() cannot be called from a running loop (await instead)")


def _not_a_task(obj: Any, verb: str) -> TypeError:
    return TypeError(f"{verb}() needs a task returned by spawn(), got {obj!r}")


def _not_ours(task: Task, verb: str) -> RuntimeError:
    # Its wake-ups would go to another kernel's ready queue, from another thread: refuse.
    return RuntimeError(f"{verb}(): {task!r} belongs to another loop (spawned by another run)")


def _deadlock(main: Task) -> RuntimeError:
    return RuntimeError(
        f"deadlock: {main!r} cannot finish: no task is ready, no timer is set, no operation "
        "is in flight and no thread works, so nothing can ever wake a task (a join or Queue "
        "wait that no task will end?)"
    )


def _unknown_request(task: Task, request: Any) -> TypeError:
    return TypeError(
        f"{task!r} awaited {request!r}, which the completions loop does not understand: a "
        "task may await only loops.completions operations (sleep, spawn, recv, ...), not "
        "another loop's awaitables such as an asyncio future"
    )
