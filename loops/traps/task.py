"""Tasks: a coroutine plus what the kernel needs to know to resume, wake or cancel it.

A task is passive data. The kernel is the only code that changes a task's fields; coroutines
see a task only as a handle to pass to ``join`` and ``cancel``. The fields are slots because
the kernel touches them on every switch.

``state`` says what the task is doing, and ``waiting_on`` holds the one object that state
refers to (the timer seq of a sleep, the I/O record of a read or write, the task being
joined, the wait queue a task is parked on, the future of a thread call). That pair is all the
kernel needs to undo a wait when it cancels a task, with no per-wait closure.
"""

# twin of loops/completions/task.py
# twin of loops/scopes/task.py

from __future__ import annotations

import itertools
from typing import Any


class CancelledError(BaseException):
    """Raised into a task at its suspension point when it is cancelled.

    A BaseException, as asyncio's is since 3.8, so that ``except Exception`` in user code
    does not swallow a cancellation by accident.
    """


class Expired(CancelledError):
    """A cancellation caused by ``timeout_after``: carries the timer that fired.

    It is a CancelledError so that the inner work unwinds exactly as it would on a cancel;
    the ``timeout_after`` that owns ``timer`` turns it into the builtin TimeoutError.
    """

    def __init__(self, timer: int) -> None:
        super().__init__("timeout expired")
        self.timer = timer


# Task states. Strings, so that a task's repr and a debugger show them plainly.
READY = "ready"  # on the ready queue, or running
SLEEPING = "sleeping"  # waiting for a timer; waiting_on is the timer's seq
READING = "reading"  # waiting for readability; waiting_on is the fd's I/O record
WRITING = "writing"  # waiting for writability; waiting_on is the fd's I/O record
JOINING = "joining"  # waiting for a task to end, for its result; waiting_on is that task
CANCELLING = "cancelling"  # waiting for a task it cancelled to end; waiting_on is that task
PARKED = "parked"  # waiting in a wait queue (Queue); waiting_on is the deque
THREAD = "thread"  # waiting for a worker thread; waiting_on is its concurrent Future
DONE = "done"  # finished: result or exception is set

SUSPEND = object()  # a trap handler's answer meaning: the task waits, resume it later

_ids = itertools.count(1)


class Task:
    """A coroutine run by the kernel, with its outcome and the tasks waiting for it."""

    __slots__ = (
        "coro",
        "exception",
        "id",
        "joined",
        "joiners",
        "result",
        "state",
        "throw",
        "value",
        "waiting_on",
    )

    def __init__(self, coro: Any) -> None:
        self.coro = coro  # the coroutine this task drives
        self.id = next(_ids)  # for repr and error messages
        self.state = READY  # one of the states above
        self.waiting_on: Any = None  # the object the current state waits on
        self.value: Any = None  # what to send in at the next resumption
        self.throw: BaseException | None = None  # or what to throw in instead
        self.result: Any = None  # the coroutine's return value, once DONE
        self.exception: BaseException | None = None  # or the exception it ended with
        self.joiners: list[Task] | None = None  # tasks waiting for this one to end
        self.joined = False  # someone saw the outcome: an unseen failure gets reported

    @property
    def done(self) -> bool:
        """True once the coroutine has returned or raised."""
        return self.state is DONE

    @property
    def cancelled(self) -> bool:
        """True if the task ended by a CancelledError."""
        return self.state is DONE and isinstance(self.exception, CancelledError)

    def __repr__(self) -> str:
        name = getattr(self.coro, "__qualname__", type(self.coro).__name__)
        return f"<Task-{self.id} {name} {self.state}>"
