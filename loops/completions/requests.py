"""Requests: the only way a coroutine talks to the loop.

A request is a tuple ``(name, *args)`` yielded up through every ``await`` by ``_request``,
the single ``yield`` of the loop (the traps loop's ``_trap``). The loop looks ``name`` up in
its table (``Loop._requests``) and either answers at once (``spawn``) or suspends the task.
The difference from the traps loop is the I/O: there, a task asks "wake me when this socket
is readable" and then reads; here it hands over the whole operation (``("operation", opcode,
sock, ...)``: recv into a buffer, send these bytes, accept, connect) and is resumed with its
result. Each request is a short ``async def`` naming it, so a traceback says what a task
waited for.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Coroutine
from typing import Any


@types.coroutine
def _request(*request: Any) -> Any:
    return (yield request)


async def sleep(seconds: float) -> None:
    """Suspend the calling task for at least `seconds`; sleep(0) just lets others run."""
    return await _request("sleep", seconds)


async def spawn(coro: Coroutine) -> Any:
    """Start `coro` as a new task (runs after the tasks already ready); return the task."""
    return await _request("spawn", coro)


async def join(task: Any) -> Any:
    """Wait for `task` to end; return its result or re-raise its exception."""
    return await _request("join", task)


async def cancel(task: Any) -> None:
    """Cancel `task` (CancelledError at its suspension point) and wait for it to end."""
    return await _request("cancel", task)


async def operation(
    opcode: int,
    sock: Any,
    addr: int,
    length: int,
    pinned: Any,
    finish: Callable[[int, Any], Any],
    off: int = 0,
    op_flags: int = 0,
) -> Any:
    """Submit one io_uring operation on sock and wait for its completion.

    ``pinned`` is everything the kernel reads or writes through ``addr``/``off``: the loop
    keeps it alive until the completion arrives, whatever happens to the task meanwhile.
    ``finish(res, pinned)`` turns the completion's result into the awaited value.
    """
    return await _request("operation", opcode, sock, addr, length, pinned, finish, off, op_flags)


async def call_in_thread(fn: Callable[..., Any], args: tuple) -> Any:
    """Run fn(*args) in a worker thread; return its result or re-raise its exception."""
    return await _request("thread", fn, args)


async def park(waiters: Any) -> None:
    """Suspend the calling task at the end of the deque `waiters` until woken."""
    return await _request("park", waiters)


async def wake(waiters: Any, n: int) -> None:
    """Make up to n tasks parked in `waiters` ready, oldest first."""
    return await _request("wake", waiters, n)


async def set_timer(seconds: float) -> int:
    """Arm a timeout on the calling task; returns the timer to pass to clear_timer."""
    return await _request("set_timer", seconds)


async def clear_timer(timer: int) -> None:
    """Disarm a timeout set by set_timer (harmless once it has fired)."""
    return await _request("clear_timer", timer)
