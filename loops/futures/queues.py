"""Queue: a FIFO for tasks, with asyncio.Queue's semantics, built from futures.

A task that must wait (get on an empty queue, put on a full one, join with work unfinished)
parks a future on the matching list; whoever changes the queue completes the first one. The
queue binds to no loop: futures are made with the running loop when a task has to wait.
"""

from __future__ import annotations

import contextlib
import types
from collections import deque
from collections.abc import Generator
from typing import Any

from loops.futures.futures import _PENDING, Future
from loops.futures.reactor import get_running_loop


class QueueEmpty(Exception):
    """get_nowait() on an empty queue."""


class QueueFull(Exception):
    """put_nowait() on a full queue."""


class Queue:
    """FIFO queue; ``maxsize`` > 0 makes put wait for room."""

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._items: deque[Any] = deque()
        self._getters: deque[Future] = deque()  # tasks waiting for an item
        self._putters: deque[Future] = deque()  # tasks waiting for room
        self._unfinished = 0  # items put and not yet marked task_done()
        self._joiners: list[Future] = []  # tasks waiting for _unfinished to reach 0

    def __repr__(self) -> str:
        return f"<Queue items={len(self._items)} unfinished={self._unfinished}>"

    # twin of loops/traps/queues.py: Queue.qsize
    def qsize(self) -> int:
        return len(self._items)

    # twin of loops/traps/queues.py: Queue.empty
    def empty(self) -> bool:
        return not self._items

    # twin of loops/traps/queues.py: Queue.full
    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    @types.coroutine
    def put(self, item: Any) -> Generator[Any, Any, None]:
        """Add item, waiting for room if the queue is full."""
        while self.full():
            yield from self._wait(self._putters)
        self.put_nowait(item)

    def put_nowait(self, item: Any) -> None:
        if self.full():
            raise QueueFull(f"the queue holds its maximum of {self.maxsize} items")
        self._items.append(item)
        self._unfinished += 1
        _wake_first(self._getters)

    @types.coroutine
    def get(self) -> Generator[Any, Any, Any]:
        """Remove and return the oldest item, waiting for one if the queue is empty."""
        while not self._items:
            yield from self._wait(self._getters)
        return self.get_nowait()

    def get_nowait(self) -> Any:
        if not self._items:
            raise QueueEmpty("the queue is empty")
        item = self._items.popleft()
        _wake_first(self._putters)
        return item

    def task_done(self) -> None:
        """Mark one item got earlier as processed."""
        if self._unfinished <= 0:
            raise ValueError("task_done() called more times than there were items put")
        self._unfinished -= 1
        if self._unfinished == 0:
            for joiner in self._joiners:
                if joiner._state is _PENDING:
                    joiner.set_result(None)
            self._joiners.clear()

    @types.coroutine
    def join(self) -> Generator[Any, Any, None]:
        """Wait until every item put has been marked task_done()."""
        if self._unfinished:
            joiner = Future(get_running_loop())
            self._joiners.append(joiner)
            yield from joiner

    def _wait(self, waiters: deque[Future]) -> Generator[Any, Any, None]:
        waiter = Future(get_running_loop())
        waiters.append(waiter)
        try:
            yield from waiter
        except BaseException:
            waiter.cancel()
            with contextlib.suppress(ValueError):
                waiters.remove(waiter)
            # Woken, then cancelled before it ran: hand the wake-up on so it is not lost.
            if not waiter.cancelled():
                _wake_first(waiters)
            raise


def _wake_first(waiters: deque[Future]) -> None:
    """Complete the first still-pending waiter, dropping cancelled ones on the way."""
    while waiters:
        waiter = waiters.popleft()
        if waiter._state is _PENDING:
            waiter.set_result(None)
            return
