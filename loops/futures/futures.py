"""Future and Task: the two objects the generator-task idea is built from.

A Future is a box for a result that does not exist yet; ``value = yield from future`` (or
``await future``: ``__await__`` is the same method) hands it up to the Task driving the
outermost generator, whose step sends a value in (or throws an exception in), gets the next
future back and subscribes to it. Builds on the "500 Lines or Less" crawler and asyncio's
futures.py/tasks.py; where it differs from the tutorial, and why: ``loops/futures/README.md``.

Limits: single-threaded (only ``Loop.call_soon_threadsafe`` may be called from other threads);
no contextvars, no eager tasks, no task groups.
"""

from __future__ import annotations

import logging
import os
from typing import Any

_PENDING = "pending"
_FINISHED = "finished"
_CANCELLED = "cancelled"

logger = logging.getLogger("loops.futures")


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
    """Thrown into a task at its suspension point when it is cancelled.

    A BaseException (as in asyncio since 3.8) so that ``except Exception`` does not swallow it.
    """


class InvalidStateError(Exception):
    """A future was completed twice, or its result asked for before it had one."""


class Future:
    """A result that will exist later, and the callbacks waiting for it."""

    __slots__ = ("_callbacks", "_exception", "_loop", "_result", "_state")

    def __init__(self, loop: Any) -> None:
        self._loop = loop  # whose ready queue runs the callbacks
        self._state = _PENDING
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Any] = []  # each called as callback(self), via the ready queue

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._state}>"

    # -- reading --------------------------------------------------------------------------

    def done(self) -> bool:
        return self._state is not _PENDING

    def cancelled(self) -> bool:
        return self._state is _CANCELLED

    def result(self) -> Any:
        """The result; re-raises the exception, or CancelledError if cancelled."""
        if self._state is _FINISHED:
            if self._exception is not None:
                self._mark_retrieved()
                raise self._exception
            return self._result
        if self._state is _CANCELLED:
            raise CancelledError()
        raise InvalidStateError(f"{self!r} has no result yet")

    def exception(self) -> BaseException | None:
        """The exception, None if it succeeded; CancelledError if cancelled."""
        if self._state is _FINISHED:
            self._mark_retrieved()
            return self._exception
        if self._state is _CANCELLED:
            raise CancelledError()
        raise InvalidStateError(f"{self!r} has no result yet")

    def _mark_retrieved(self) -> None:
        """Someone has seen the exception (a Task stops its never-retrieved report here)."""

    # -- completing -----------------------------------------------------------------------

    def set_result(self, result: Any) -> None:
        if self._state is not _PENDING:
            raise InvalidStateError(f"{self!r} is already done")
        self._result = result
        self._state = _FINISHED
        self._schedule_callbacks()

    def set_exception(self, exception: BaseException | type[BaseException]) -> None:
        if self._state is not _PENDING:
            raise InvalidStateError(f"{self!r} is already done")
        if isinstance(exception, type):
            exception = exception()
        if isinstance(exception, StopIteration):
            # It would end the generator that awaits this future instead of raising in it.
            raise TypeError("StopIteration cannot be set as a future's exception")
        self._exception = exception
        self._state = _FINISHED
        self._schedule_callbacks()

    def cancel(self) -> bool:
        """Cancel a pending future (its waiters see CancelledError); False if already done."""
        if self._state is not _PENDING:
            return False
        self._state = _CANCELLED
        self._schedule_callbacks()
        return True

    def _schedule_callbacks(self) -> None:
        # Never call them here: a callback run inside set_result would run in the middle of
        # whoever completed the future, re-entering it (the tutorial version's trap).
        callbacks = self._callbacks
        if callbacks:
            ready = self._loop._ready
            for callback in callbacks:
                ready.append((callback, self))
            callbacks.clear()

    # -- subscribing ----------------------------------------------------------------------

    def add_done_callback(self, callback: Any) -> None:
        """Call callback(self) from the ready queue once done (soon, if already done)."""
        if self._state is _PENDING:
            self._callbacks.append(callback)
        else:
            self._loop._ready.append((callback, self))

    def remove_done_callback(self, callback: Any) -> int:
        """Forget every subscription of callback; how many there were."""
        kept = [cb for cb in self._callbacks if cb != callback]
        removed = len(self._callbacks) - len(kept)
        self._callbacks[:] = kept
        return removed

    # -- waiting --------------------------------------------------------------------------

    def __iter__(self):
        """``yield from future``: suspend until done, then evaluate to the result.

        The task driving the generator receives this future, subscribes to it, and when it is
        done sends the result back in (or throws the exception in at this very ``yield``).
        """
        if self._state is _PENDING:
            return (yield self)
        return self.result()

    __await__ = __iter__  # ``await future`` is the same protocol (asyncio's trick)


class _Unretrieved:
    """Reports a task's exception that nobody retrieved, once the task is garbage.

    A separate little object rather than Task.__del__, so that only failed tasks pay for a
    finalizer (asyncio's early ``_TracebackLogger`` did the same).
    """

    __slots__ = ("exception", "loop", "task")

    def __init__(self, loop: Any, exception: BaseException, task: str) -> None:
        self.loop = loop
        self.task = task  # the task's repr (not the task: that would make a cycle)
        self.exception: BaseException | None = exception  # None once retrieved (set last)

    def __del__(self) -> None:
        # getattr: a KeyboardInterrupt can cut __init__ short, and this still runs; exception
        # is set last, so with it every field is there.
        if getattr(self, "exception", None) is not None:
            self.loop.call_exception_handler(
                {
                    "message": f"Task exception was never retrieved: {self.task}",
                    "exception": self.exception,
                }
            )


class Task(Future):
    """Drives a generator (or coroutine) step by step; a Future for its outcome.

    A task is its own wake-up callback: calling it runs one step. Putting the task itself on
    a future's callback list and on the ready queue spares a bound method per suspension (the
    task and the future it waits on still refer to each other until the wake-up).
    """

    __slots__ = ("_cancel_requests", "_coro", "_must_cancel", "_reporter", "_waiting_on")

    def __init__(self, coro: Any, loop: Any) -> None:
        # Future.__init__ inlined: spawning is on the hot path of a many-task program.
        self._loop = loop
        self._state = _PENDING
        self._result = None
        self._exception = None
        self._callbacks = []
        self._coro = coro  # the generator or coroutine this task drives
        self._waiting_on: Future | None = None  # the future the task is suspended on
        self._must_cancel = False  # throw CancelledError at the next step
        self._cancel_requests = 0  # cancel() calls not yet withdrawn by uncancel()
        self._reporter: _Unretrieved | None = None  # set while a failure is unretrieved
        loop._tasks[self] = None
        loop._ready.append((self, None))

    def __repr__(self) -> str:
        name = getattr(self._coro, "__qualname__", type(self._coro).__name__)
        return f"<Task {name}() {self._state}>"

    def get_coro(self) -> Any:
        return self._coro

    def step(self, fut: Future | None = None) -> None:
        """Run the generator to its next suspension: send in the outcome of the future it
        waited on, and wait on the future it yields next.

        ``fut`` is that finished future (None to start, or after a bare ``yield``): its result
        is sent in; its exception, or a CancelledError, is thrown in at the ``yield`` where
        the generator stopped (``_error_for``).
        """
        if self._state is not _PENDING:
            return  # finished while this wake-up was queued (e.g. cancelled before starting)
        error = self._error_for(fut)
        self._waiting_on = None
        loop = self._loop
        loop._current = self
        try:
            if error is None:
                yielded = self._coro.send(None if fut is None else fut._result)
            else:
                yielded = self._coro.throw(error)
        except StopIteration as returned:
            self._finish(_FINISHED, returned.value, None)
        except BaseException as raised:
            self._fail(raised)  # cancelled, or failed
        else:
            self._wait_on(yielded)
        finally:
            loop._current = None

    __call__ = step

    def _error_for(self, fut: Future | None) -> BaseException | None:
        """What to throw in instead of sending a value: None (send ``fut``'s result), the
        exception ``fut`` failed with, or a CancelledError (this task was cancelled, or the
        future it waited on was)."""
        if self._must_cancel:
            self._must_cancel = False
            return CancelledError()
        if fut is None:
            return None
        if fut._state is not _FINISHED:
            return CancelledError()  # the future it waited on was cancelled
        error = fut._exception
        if error is not None:
            fut._mark_retrieved()
        return error

    def _wait_on(self, yielded: Any) -> None:
        """What the generator yielded: a future of this loop to wait on, None (a bare
        ``yield``) to step again after the others, anything else a TypeError thrown in."""
        loop = self._loop
        if yielded is None:
            loop._ready.append((self, None))  # a bare yield: let the others run first
        elif isinstance(yielded, Future) and yielded._loop is loop and yielded is not self:
            self._waiting_on = yielded
            if yielded._state is _PENDING:
                yielded._callbacks.append(self)  # step again once that future is done
            else:
                loop._ready.append((self, yielded))
            if self._must_cancel and self._withdraw_wait():
                # cancel() was called during this very step: the new wait ends at once.
                self._must_cancel = False
        else:
            self._reject(yielded)

    def _fail(self, error: BaseException) -> None:
        """The generator raised: a CancelledError it let through cancels the task; anything
        else fails it. KeyboardInterrupt and SystemExit go on up to run()'s caller; any other
        failure is reported if nobody retrieves it (``_Unretrieved``)."""
        if isinstance(error, CancelledError):
            self._finish(_CANCELLED, None, None)
            return
        self._finish(_FINISHED, None, error)
        if isinstance(error, KeyboardInterrupt | SystemExit):
            # Out of run(). Raised by the task's own code, it leaves the loop whole and run()
            # may still cancel the other tasks; raised in the loop's code the task had called,
            # it may not (left_half_done).
            if not left_half_done(error):
                self._loop._raised_by_a_task = error
            raise error
        self._reporter = _Unretrieved(self._loop, error, repr(self))

    def _reject(self, yielded: Any) -> None:
        """The generator yielded something that is not a future of this loop: a TypeError."""
        if isinstance(yielded, Future) and yielded is self:
            problem = "a task cannot wait for itself"
        elif isinstance(yielded, Future):
            problem = f"{yielded!r} belongs to another loop"
        else:
            problem = (
                f"a task must yield a Future of its loop (use `yield from` / `await` on the "
                f"loop's calls), got {yielded!r}"
            )
        failed = Future(self._loop)
        failed._state = _FINISHED
        failed._exception = TypeError(problem)
        self._loop._ready.append((self, failed))  # thrown in at the yield, like any failure

    def _finish(self, state: str, result: Any, exception: BaseException | None) -> None:
        self._result = result
        self._exception = exception
        self._state = state
        del self._loop._tasks[self]
        self._schedule_callbacks()

    def _mark_retrieved(self) -> None:
        reporter = self._reporter
        if reporter is not None:
            reporter.exception = None
            self._reporter = None

    def cancel(self) -> bool:
        """Ask the task to stop: CancelledError is thrown in at its suspension point.

        If it waits on a future, that future is cancelled (so a sleep's timer or a socket wait
        is withdrawn) and the cancellation arrives through it. A task it waits on (``join``)
        is not cancelled: the waiter just stops waiting. Returns False if already done.
        """
        if self._state is not _PENDING:
            return False
        self._cancel_requests += 1
        if not self._withdraw_wait():
            self._must_cancel = True  # delivered at the step already queued
        return True

    def _withdraw_wait(self) -> bool:
        """End the current wait with CancelledError; False if that is left to _must_cancel."""
        waiter = self._waiting_on
        if waiter is None or waiter._state is not _PENDING:
            return False
        if isinstance(waiter, Task):
            # Not ours to cancel: stop waiting for it and step with _must_cancel instead.
            waiter.remove_done_callback(self)
            self._waiting_on = None
            self._loop._ready.append((self, None))
            return False
        waiter.cancel()  # its callback (this task) throws the CancelledError in
        return True

    def cancelling(self) -> int:
        """How many cancel() requests are outstanding."""
        return self._cancel_requests

    def uncancel(self) -> int:
        """Withdraw one cancel() request (a timeout that fired and was handled); the rest."""
        if self._cancel_requests > 0:
            self._cancel_requests -= 1
            if self._cancel_requests == 0:
                self._must_cancel = False
        return self._cancel_requests
