"""completions: the coroutines style (used with `await`). Scaffolded from loops/contract.py.

Replace each stub; the conformance suite says which one it needs next. The module docstring
should end up saying the idea, what it builds on and its limits.
"""

from __future__ import annotations

WHERE = "loops/completions/tasks.py"


def _not_yet(what):
    """The error every stub raises until it is written."""
    return NotImplementedError(f"{what}() is not implemented yet: write it in {WHERE}")


class CancelledError(BaseException):
    """Raised into a task at its suspension point when it is cancelled."""


def run(coro):
    """Run coro on a new loop until it finishes; return its result or raise its error."""
    raise _not_yet("run")


def now():
    """The running loop's clock, in seconds."""
    raise _not_yet("now")


async def sleep(seconds):
    """Suspend the calling task for at least `seconds`."""
    raise _not_yet("sleep")


async def spawn(coro):
    """Start coro as a concurrent task; returns the task."""
    raise _not_yet("spawn")


async def join(task):
    """Wait for task; return its result or re-raise its exception."""
    raise _not_yet("join")


async def cancel(task):
    """Cancel task (CancelledError at its suspension point) and wait for it to end."""
    raise _not_yet("cancel")


async def timeout_after(seconds, coro):
    """Run coro; if it takes longer than seconds, cancel it and raise TimeoutError."""
    raise _not_yet("timeout_after")


async def recv(sock, n):
    """Receive up to n bytes; b'' at EOF."""
    raise _not_yet("recv")


async def sendall(sock, data):
    """Send all of data, waiting for the socket to drain as needed."""
    raise _not_yet("sendall")


async def accept(sock):
    """Accept a connection: (non-blocking socket, address)."""
    raise _not_yet("accept")


async def connect(sock, address):
    """Connect sock to address."""
    raise _not_yet("connect")


async def recvfrom(sock, n):
    """Receive a datagram: (data, address)."""
    raise _not_yet("recvfrom")


async def sendto(sock, data, address):
    """Send a datagram to address."""
    raise _not_yet("sendto")


async def run_in_thread(fn, *args):
    """Run fn(*args) in a worker thread; the result, or its exception re-raised."""
    raise _not_yet("run_in_thread")


class Queue:
    """A FIFO queue for tasks, with unfinished-work accounting (asyncio.Queue's semantics)."""

    async def put(self, item):
        """(awaitable) Add an item."""
        raise _not_yet("Queue.put")

    async def get(self):
        """(awaitable) Remove and return the oldest item, waiting if there is none."""
        raise _not_yet("Queue.get")

    def task_done(self):
        """Mark one got item as processed."""
        raise _not_yet("Queue.task_done")

    async def join(self):
        """(awaitable) Wait until every put item has been marked done."""
        raise _not_yet("Queue.join")
