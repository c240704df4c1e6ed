"""epoll where there is one, else `select.poll` behind its calls: callbacks and traps wait in it.

The callbacks reactor (``loops/callbacks/readiness.py``) and the traps kernel's I/O side
(``loops/traps/poller.py``) call ``register``, ``modify``, ``unregister``, ``poll`` and
``close`` on what :func:`new_poller` returns: epoll on Linux; elsewhere (macOS, the BSDs)
:class:`PollAsEpoll`. Never ``select()``: its 1024-fd ceiling.
"""

from __future__ import annotations

import math
import select
from typing import Any


class PollAsEpoll:
    """``select.poll`` behind the ``select.epoll`` calls a loop makes, where there is no epoll."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self.register = self._poll.register
        self.modify = self._poll.modify
        self.unregister = self._poll.unregister

    def poll(self, timeout: float | None = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        if timeout is None or timeout < 0:
            return self._poll.poll()
        # Round up, like epoll: waking a little late is fine, waking early is a spin.
        return self._poll.poll(math.ceil(timeout * 1e3))

    def close(self) -> None:
        pass  # a poll object holds no fd


def new_poller() -> Any:
    """epoll where there is one (Linux), else poll; never select() and its 1024-fd ceiling."""
    return select.epoll() if hasattr(select, "epoll") else PollAsEpoll()
