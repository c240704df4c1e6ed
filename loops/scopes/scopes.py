"""Nurseries and timeouts: structured concurrency written on the kernel's cancel scopes.

A nursery is a block that its child tasks cannot outlive: ``async with open_nursery() as n``
starts children with ``n.start_soon(fn, *args)`` and, at the end of the block, waits for all of
them. A child's error cancels the nursery's scope (so its siblings, and the block itself, stop
at their next checkpoint) and the nursery raises an ``ExceptionGroup`` of what its children
raised once all have ended. ``move_on_after`` and ``fail_after`` are cancel scopes with a
deadline: the first just leaves the block, the second raises the builtin ``TimeoutError``.
These are trio's names (``trio/_core/_run.py``, ``trio/_timeouts.py``), so the two read side by
side; the folder README says where this kernel differs.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

from loops.scopes.kernel import CancelScope, Loop, _cancelled_by, running_loop
from loops.scopes.task import CancelledError, Task
from loops.scopes.traps import wait_children


class Nursery:
    """The children started in one ``async with open_nursery()`` block, and what they raised."""

    def __init__(self) -> None:
        self.cancel_scope = CancelScope()  # around the block and every child: cancels them all
        self.children = 0  # children started and not yet ended (the kernel counts them)
        self.errors: list[BaseException] = []  # what children raised (a cancel is no error)
        self.parent: Task | None = None  # the task whose block this is
        self._kernel: Loop | None = None  # while open: the kernel its children run in

    def start_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Start fn(*args) as a child: it runs after the tasks already ready."""
        if self._kernel is None:
            raise RuntimeError("this nursery is closed: start children inside its block")
        self._kernel._spawn(fn(*args), self.cancel_scope, self)

    async def __aenter__(self) -> Nursery:
        kernel = running_loop()
        self.cancel_scope.__enter__()
        self.parent = kernel.current
        self._kernel = kernel
        return self

    async def __aexit__(self, etype: Any, error: BaseException | None, traceback: Any) -> bool:
        if error is not None and not isinstance(error, CancelledError):
            self.errors.append(error)  # the block's own error stops the children too
            self.cancel_scope.cancel()
        # The wait is not a checkpoint: a cancellation from outside reaches the children (they
        # are inside the scopes around this block) and the block waits for them to end; the
        # end of the block is one, so the cancellation surfaces there, once.
        await wait_children(self)
        self._kernel = None
        raised = BaseExceptionGroup("errors in a nursery", self.errors) if self.errors else error
        if raised is None and _cancelled_by(self.cancel_scope):
            raised = CancelledError()  # its end is a checkpoint: children were cancelled with it
        if self.cancel_scope.__exit__(None, raised, None):
            return True  # this nursery's own scope was cancelled: the block just ends
        if raised is not error:
            raise raised
        return False


def open_nursery() -> Nursery:
    """``async with open_nursery() as nursery:``: a block its children cannot outlive."""
    return Nursery()


def move_on_after(seconds: float) -> CancelScope:
    """A cancel scope whose deadline is `seconds` from now: the block ends when it passes
    (``cancelled_caught`` says whether it did)."""
    return CancelScope(deadline=time.monotonic() + seconds)


@contextlib.contextmanager
def fail_after(seconds: float) -> Iterator[CancelScope]:
    """move_on_after that raises the builtin TimeoutError when the deadline cut the block."""
    with move_on_after(seconds) as scope:
        yield scope
    if scope.cancelled_caught:
        raise TimeoutError(f"timed out after {seconds} s")
