"""The readiness primitive: epoll itself, read directly by the kernel (poll where it is missing).

``selectors.EpollSelector`` is a thin layer over ``select.epoll`` that builds a
``(SelectorKey, events)`` pair per ready fd through a method call, only for the kernel to take
the pair apart again. The kernel keeps its own fd -> IORecord table anyway, so it calls the poller
directly and reads the raw event bits: same semantics, less work per readiness event. The
callbacks loop does the same; its ``readiness.py`` gives the two ``timeit`` commands that
compare ``selectors.select()`` with ``epoll.poll()`` on 100 ready sockets.

What it is worth to a whole server is in the echo rows of ``reports/bench.md``.

Event bits: ``POLLIN``/``POLLOUT`` have the values of ``EPOLLIN``/``EPOLLOUT``; any other bit
(error, hang-up) is reported to whichever directions are watched, as selectors does, so a task
waiting on a broken socket wakes and learns of the error from its next call.
"""

from __future__ import annotations

import math
import select
from typing import Any

IN, OUT = select.POLLIN, select.POLLOUT  # the interest bits


class PollAsEpoll:
    """``select.poll`` behind the few ``select.epoll`` calls the kernel makes (not Linux)."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self.register = self._poll.register
        self.modify = self._poll.modify
        self.unregister = self._poll.unregister

    def poll(self, timeout: float = -1) -> list[tuple[int, int]]:
        if timeout < 0:
            return self._poll.poll()
        return self._poll.poll(math.ceil(timeout * 1e3))  # round up, as epoll does: never early

    def close(self) -> None:
        pass  # a poll object holds no fd


def new_poller() -> Any:
    """epoll where there is one (Linux), else poll; never select() and its 1024-fd ceiling."""
    return select.epoll() if hasattr(select, "epoll") else PollAsEpoll()
