"""Traps: the only way a coroutine talks to the kernel.

A trap is a request tuple ``(name, *args)`` yielded up through every ``await`` to the kernel,
which looks ``name`` up in its trap table, performs the request and either sends a result
straight back (a non-blocking trap such as ``spawn``) or parks the task until the request is
satisfied (``sleep``, ``join``, waiting for I/O). Errors come back the same way: the kernel
throws them in at the ``yield`` below, so they surface at the ``await`` that asked.

``_trap`` is the ``yield`` where async code and the kernel meet (curio's ``_kernel_trap``).
Each trap below is a two-line ``async def`` naming its request, so a traceback says what the
task was waiting for; ``sleep`` and the two socket waits, the traps a busy loop awaits most
(a turn given up, a wait for I/O), yield their requests themselves (see above them).
"""

# twin of loops/traps/traps.py

from __future__ import annotations

import types
from collections.abc import Callable, Coroutine
from typing import Any


@types.coroutine
def _trap(*request: Any) -> Any:
    return (yield request)


# Speed trick, fenced here: ``sleep`` yields its request itself, as the I/O traps below do (the
# comment or docstring there says why): ``sleep(0)``, a turn given up, is the one trap some
# loops await once per socket call.
@types.coroutine
def sleep(seconds: float) -> Any:
    """Suspend the calling task for at least `seconds`; sleep(0) just lets others run."""
    return (yield ("sleep", seconds))


async def spawn(coro: Coroutine) -> Any:
    """Start `coro` as a new task (runs after the tasks already ready); return the task."""
    return await _trap("spawn", coro)


async def join(task: Any) -> Any:
    """Wait for `task` to end; return its result or re-raise its exception."""
    return await _trap("join", task)


async def cancel(task: Any) -> None:
    """Cancel the scope `task` was spawned in (CancelledError at its checkpoints); wait for it."""
    return await _trap("cancel", task)


# Speed trick, fenced here: the two traps that are not an ``async def`` around ``_trap`` but
# yield their request themselves. A socket call awaits one of them once per wait, and an
# ``async def`` level costs a coroutine object and one more frame to cross at every suspension
# and resumption (loops/traps/README.md, "Levers"); the traceback still names the wait.
@types.coroutine
def wait_readable(sock: Any) -> Any:
    """Wait until `sock` is readable (or has an error or EOF to report)."""
    return (yield ("read", sock))


@types.coroutine
def wait_writable(sock: Any) -> Any:
    """Wait until `sock` is writable (or has an error to report)."""
    return (yield ("write", sock))


async def drop_ghosts() -> None:
    """Rebuild the kernel's epoll from its live registrations (a suspected ghost: api.py)."""
    return await _trap("drop_ghosts")


async def call_in_thread(fn: Callable[..., Any], args: tuple) -> Any:
    """Run fn(*args) in a worker thread; return its result or re-raise its exception."""
    return await _trap("thread", fn, args)


async def park(waiters: Any) -> None:
    """Suspend the calling task at the end of the deque `waiters` until woken."""
    return await _trap("park", waiters)


async def wake(waiters: Any, n: int) -> None:
    """Make up to n tasks parked in `waiters` ready, oldest first."""
    return await _trap("wake", waiters, n)


async def wait_children(nursery: Any) -> None:
    """At the end of a nursery's block: wait until every child it started has ended."""
    return await _trap("children", nursery)
