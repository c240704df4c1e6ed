"""Traps: the only way a coroutine talks to the kernel.

A trap is a request tuple ``(name, *args)`` yielded up through every ``await`` to the kernel,
which looks ``name`` up in its trap table, performs the request and either sends a result
straight back (a non-blocking trap such as ``spawn``) or parks the task until the request is
satisfied (``sleep``, ``join``, an I/O operation). Errors come back the same way: the kernel
throws them in at the ``yield`` below, so they surface at the ``await`` that asked.

``_trap`` is the ``yield`` where async code and the kernel meet (curio's ``_kernel_trap``).
Each trap below is a two-line ``async def`` naming its request, so a traceback says what the
task was waiting for, but for ``sleep``, which a receive awaits before each try, and which
yields its request itself. The I/O is where this twin of ``loops/traps/traps.py`` differs:
there a task asks "wake me when this socket is readable" and then reads; here it hands over
the whole operation (``operation``) and is resumed with its result. ``operation``, awaited
once or more per socket call, yields its request itself too (its docstring says why).
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
    """Cancel `task` (CancelledError at its suspension point) and wait for it to end."""
    return await _trap("cancel", task)


@types.coroutine
def operation(
    opcode: int,
    sock: Any,
    addr: int,
    length: int,
    pinned: Any,
    complete: Callable[..., Any],
    off: int = 0,
    op_flags: int = 0,
) -> Any:
    """Submit one io_uring operation on sock and wait for its completion.

    ``addr``, ``length``, ``off`` and ``op_flags`` are the SQE's fields of those names.
    ``pinned`` is everything Linux reads or writes through ``addr``/``off``: the loop keeps it
    alive until the completion arrives, whatever happens to the task meanwhile. The completer,
    ``complete(res, pinned, sock, interrupted=...)``, turns the completion's result into the
    awaited value (``interrupted=False``), or, for a task that will not take it
    (``interrupted=True``), releases the buffer and keeps what came for the next call.

    Speed trick, fenced here: the one trap that is not an ``async def`` around ``_trap`` but
    yields its request itself, taking its arguments by position. Each socket call awaits it
    once or more per request, and an ``async def`` level costs a coroutine object and one more
    frame to cross at every suspension and resumption (loops/completions/README.md, "Levers").
    """
    return (yield ("operation", opcode, sock, addr, length, pinned, complete, off, op_flags))


async def call_in_thread(fn: Callable[..., Any], args: tuple) -> Any:
    """Run fn(*args) in a worker thread; return its result or re-raise its exception."""
    return await _trap("thread", fn, args)


async def park(waiters: Any) -> None:
    """Suspend the calling task at the end of the deque `waiters` until woken."""
    return await _trap("park", waiters)


async def wake(waiters: Any, n: int) -> None:
    """Make up to n tasks parked in `waiters` ready, oldest first."""
    return await _trap("wake", waiters, n)


async def set_timer(seconds: float) -> int:
    """Arm a timeout on the calling task; returns the timer to pass to clear_timer."""
    return await _trap("set_timer", seconds)


async def clear_timer(timer: int) -> None:
    """Disarm a timeout set by set_timer (harmless once it has fired)."""
    return await _trap("clear_timer", timer)
