"""Handles: one scheduled callback, its arguments and the context it runs in.

A handle is the reactor's unit of work. ``call_soon`` puts one on the ready queue,
``call_later`` puts a :class:`TimerHandle` on the timer heap, ``add_reader`` keeps one in the
selector registration and re-queues the same object on every readiness event. The loop runs
``handle._context.run(handle._callback, *handle._args)`` itself (no method call per run: this
is the hottest line of the reactor), so a handle is only data plus ``cancel()``.

Cancelling is lazy: the handle is marked and skipped when its turn comes, and its callback and
arguments are dropped at once so a cancelled timer still sitting in the heap holds no memory
but its own few slots. A cancelled timer tells its loop, which compacts the heap when cancelled
timers dominate (asyncio's rule, see ``Loop._timer_cancelled``).
"""

from __future__ import annotations

import contextvars
import reprlib
from collections.abc import Callable
from typing import Any


class Handle:
    """A callback scheduled on a loop; ``cancel()`` stops it if it has not run yet."""

    __slots__ = ("__weakref__", "_args", "_callback", "_cancelled", "_context")

    def __init__(
        self,
        callback: Callable[..., Any],
        args: tuple,
        context: contextvars.Context | None = None,
    ) -> None:
        self._callback = callback
        self._args = args
        # Captured now, so the callback sees the context variables of the code that scheduled it.
        self._context = contextvars.copy_context() if context is None else context
        self._cancelled = False

    def cancel(self) -> None:
        """Stop the callback from running; harmless if it already ran or was cancelled."""
        if not self._cancelled:
            self._cancelled = True
            self._callback = self._args = None  # a cancelled handle must not keep its arguments

    def cancelled(self) -> bool:
        """True once cancel() was called."""
        return self._cancelled

    def get_context(self) -> contextvars.Context:
        """The context the callback runs in."""
        return self._context

    def describe(self) -> str:
        """The callback as a reader wants it in a log: ``name(args) at file:line``."""
        if self._cancelled:
            return "<cancelled>"
        return describe_callback(self._callback, self._args)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"


class TimerHandle(Handle):
    """A handle due at loop time ``when()``; lives in its loop's heap until it fires."""

    __slots__ = ("_loop", "_scheduled", "_when")

    def __init__(
        self,
        when: float,
        callback: Callable[..., Any],
        args: tuple,
        loop: Any,
        context: contextvars.Context | None = None,
    ) -> None:
        # The base __init__ written out: one call fewer on the path of every timer.
        self._callback = callback
        self._args = args
        self._context = contextvars.copy_context() if context is None else context
        self._cancelled = False
        self._when = when
        self._loop = loop
        self._scheduled = True  # in the heap; the loop clears it when it pops the timer

    def when(self) -> float:
        """The loop time at which the callback is due."""
        return self._when

    def cancel(self) -> None:
        """Stop the timer; the loop drops it from its heap lazily."""
        if not self._cancelled:
            self._cancelled = True
            self._callback = self._args = None
            if self._scheduled:
                self._loop._timer_cancelled()

    def __repr__(self) -> str:
        return f"<TimerHandle when={self._when:.6f} {self.describe()}>"


def describe_callback(callback: Callable[..., Any], args: tuple) -> str:
    """``name(arg, ...) at file:line``, with long arguments shortened."""
    name = getattr(callback, "__qualname__", None) or reprlib.repr(callback)  # never raises
    text = f"{name}({', '.join(map(reprlib.repr, args))})"
    code = getattr(callback, "__code__", None)
    if code is not None:
        text += f" at {code.co_filename}:{code.co_firstlineno}"
    return text
