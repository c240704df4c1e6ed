"""Queue: a FIFO for tasks with unfinished-work accounting (asyncio.Queue's semantics).

Built entirely from two traps, ``park`` (wait in a deque) and ``wake`` (make the oldest
parked tasks ready), as curio builds its synchronization outside the kernel. A woken task
re-checks its condition rather than being handed an item, so a task cancelled between being
woken and running loses nothing: it passes its wake-up on to the next waiter.

``task_done`` is synchronous in the lab's contract, so it cannot trap; it wakes join()ers
through the kernel running in this thread instead.
"""

# twin of loops/traps/queues.py

from __future__ import annotations

import collections
from typing import Any

from loops.scopes.kernel import running_loop
from loops.scopes.traps import park, wake


class Queue:
    """A FIFO queue of items; maxsize <= 0 means unbounded."""

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._items: collections.deque = collections.deque()  # the queued items
        self._getters: collections.deque = collections.deque()  # tasks waiting for an item
        self._putters: collections.deque = collections.deque()  # tasks waiting for room
        self._joiners: collections.deque = collections.deque()  # tasks waiting in join()
        self._unfinished = 0  # items put and not yet marked done

    def qsize(self) -> int:
        """The number of items queued."""
        return len(self._items)

    def empty(self) -> bool:
        """True if no item is queued."""
        return not self._items

    def full(self) -> bool:
        """True if a put() would wait."""
        return 0 < self.maxsize <= len(self._items)

    async def put(self, item: Any) -> None:
        """Add item at the end, waiting for room if the queue is full."""
        while self.full():
            await _wait_in(self._putters, self.full)
        self._items.append(item)
        self._unfinished += 1
        if self._getters:
            await wake(self._getters, 1)

    async def get(self) -> Any:
        """Remove and return the oldest item, waiting for one if the queue is empty."""
        while not self._items:
            await _wait_in(self._getters, self.empty)
        item = self._items.popleft()
        if self._putters:
            await wake(self._putters, 1)
        return item

    def task_done(self) -> None:
        """Mark one got item as processed; join() returns when every item is."""
        if self._unfinished <= 0:
            raise ValueError("task_done() called more times than items were put")
        self._unfinished -= 1
        if not self._unfinished and self._joiners:
            running_loop().wake_all(self._joiners)

    async def join(self) -> None:
        """Wait until every item put has been marked done with task_done()."""
        while self._unfinished:
            await park(self._joiners)


async def _wait_in(waiters: collections.deque, still_blocked: Any) -> None:
    """Park in waiters; if interrupted after a wake-up meant for us, pass it on."""
    try:
        await park(waiters)
    except BaseException:
        if not still_blocked() and waiters:
            await wake(waiters, 1)
        raise
