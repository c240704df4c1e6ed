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

What it builds on: the traps kernel, its readiness side (epoll) replaced by the completion
side, :class:`loops.completions.proactor.Proactor`, an io_uring: a trap hands Linux the whole
operation as one SQE, and each CQE resumes the task its ``user_data`` names. ``diff -u
loops/traps/kernel.py loops/completions/kernel.py`` shows the change; the README walks it.

Limits: Linux x86-64 with io_uring (the variant is unavailable elsewhere, see ``__init__.py``);
a task may await only this kernel's traps (an asyncio future is rejected with a TypeError);
the kernel runs in one thread (one ring per ``run()``), and only run_in_thread crosses threads.
"""

# twin of loops/traps/kernel.py

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
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

from loops._signals import signals_wake
from loops.completions.proactor import Proactor
from loops.completions.task import (
    CANCELLING,
    DONE,
    JOINING,
    OPERATION,
    PARKED,
    READY,
    SLEEPING,
    SUSPEND,
    THREAD,
    CancelledError,
    Expired,
    Task,
)
from loops.completions.traps import cancel

# Compaction: rebuild the heap when more than COMPACT_MIN_TIMERS of its timers are cancelled
# and they are more than COMPACT_CANCELLED_FRACTION of it (asyncio counts the whole heap).
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5
MAX_WAIT = 24 * 3600.0  # the longest single wait (asyncio's cap)


logger = logging.getLogger(__name__)


OWN_CODE = os.path.dirname(os.path.abspath(__file__)) + os.sep  # this package's files


# twin of loops/futures/futures.py: left_half_done
# twin of loops/greenlets/hub.py: left_half_done
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
        self._io = Proactor(self._ready)  # the ring and the operations in flight in it
        self._tasks: set[Task] = set()  # every task not yet DONE
        self._unseen_failures: dict[Task, None] = {}  # failed tasks nobody joined (yet)
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # for run_in_thread
        self._thread_jobs = 0  # thread calls submitted and not yet collected
        self._thread_results: collections.deque = collections.deque()  # (task, future) done
        self._closed = False
        self._raised_by_a_task: BaseException | None = None  # see run()
        # The socket calls' budget (api.py's docstring): calls completed in a row without
        # anyone waiting, since a call last waited or yielded its turn.
        self.fast_calls = 0
        # The receive's tries (api.recv), at once and at the next turn: how many receives the
        # last try that found nothing made skip it (0: the last try found bytes), and how many
        # are still to skip.
        self.recv_now_skips = 0
        self.recv_now_skips_left = 0
        self.recv_skips = 0
        self.recv_skips_left = 0
        # The trap table: request name -> handler(task, request) -> answer or SUSPEND.
        self._traps = {
            "sleep": self._trap_sleep,
            "spawn": self._trap_spawn,
            "join": self._trap_join,
            "cancel": self._trap_cancel,
            "operation": self._io._trap_operation,
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
        try:
            if self._closed:
                raise RuntimeError("the completions loop is closed")
            _check_not_running()
        except RuntimeError:
            if hasattr(coro, "close"):
                coro.close()  # refused, so it will never run: it must not warn "never awaited"
            raise
        try:  # the main task's spawn too: a signal may land in it
            main = self._spawn(coro)
            main.joined = True  # its outcome is run()'s to report
            # A signal ends the wait, so its Python handler runs at once (loops/_signals.py).
            self._io.open_wake_up(self._collect_thread_results)
            with signals_wake(self._io.wake_fd):
                self._run_until(main)
        except BaseException as error:
            if not isinstance(error, Exception) and error is not self._raised_by_a_task:
                self._abandon_tasks()  # a signal's KeyboardInterrupt: see _abandon_tasks
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
            # Not `while self._tasks:`, which CPython 3.13 compiles with its back edge outside
            # this try (CPython gh-130279): a Ctrl-C taken there would skip the finally.
            while True:
                if not self._tasks:
                    break
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
            if self._pool is not None:  # first: no worker may wake a closed wake-up
                self._pool.shutdown(wait=True)
            self._io.close()

    def _abandon_tasks(self) -> None:
        """Close every task's coroutine without the kernel, and forget every wait.

        A KeyboardInterrupt from a signal lands between any two lines of the kernel's own
        bookkeeping: a task popped from the ready queue and not yet run, a finish half done.
        Another tick could wait forever on what that step left behind (close() cancelling a
        task no queue holds), so run() closes the tasks here, untouched by the kernel: their
        finally blocks run. Their operations stay in flight, buffers and all, until close()
        has Linux cancel them and collects their completions (Proactor.close)."""
        for task in self._tasks:
            if task.reaped is not None:  # completed, never delivered: its buffer goes back
                self._io.give_back(task, task.reaped)
            task.state = DONE
            # RuntimeError: it awaited in a finally block; it cannot run any further anyway.
            with contextlib.suppress(RuntimeError):
                task.coro.close()
        self._tasks.clear()
        self._ready.clear()
        self._timers.clear()
        self._sleepers.clear()
        self._timeouts.clear()
        self._io.ring.recount()  # the signal may have come between an enter and its count

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
        wait = self._io.wait
        in_flight = self._io.in_flight  # every operation submitted and not yet completed
        deliver = self._io.deliver
        clock = time.monotonic
        traps = self._traps
        finish = self._finish
        done = DONE
        ready_state = READY
        suspend = SUSPEND

        while main.state is not done:
            # ---- stage 1: wait for I/O, blocking only while nothing is ready
            if ready:  # just look, never block: tasks wait to run
                wait(0)
            elif timers:
                wait(min(max(timers[0][0] - clock(), 0), MAX_WAIT))
            elif in_flight or self._thread_jobs:
                wait(None)
            else:
                raise _deadlock(main)

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
                    value, throw = deliver(task)
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
                            # KeyboardInterrupt, SystemExit: out of run(); the kernel whole
                            # unless it came through the kernel's code (left_half_done)
                            if not left_half_done(error):
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
        """Deliver error at task's suspension point, undoing whatever it waits for."""
        if task.state is OPERATION:  # cannot be undone at once: Linux owns its buffer
            self._io.interrupt(task, error)  # the error waits for the operation's CQE
            return
        if task.state is not READY:
            self._unwait[task.state](task)
            self._make_ready(task)
        elif task.reaped is not None:  # completed, not yet delivered: nothing received is lost
            self._io.give_back(task, task.reaped)
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

    # ------------------------------------------------------------------ threads

    def _start_threads(self) -> None:
        """The pool, and its wake-up: the I/O side's (see its open_wake_up)."""
        self._pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="completions")
        self._io.open_wake_up(self._collect_thread_results)

    def _thread_finished(self, task: Task, future: concurrent.futures.Future) -> None:
        # Runs in the worker thread: only a deque append (atomic) and a wake-up.
        self._thread_results.append((task, future))
        self._io.wake()

    def _collect_thread_results(self) -> None:
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
