"""The tracer: watches any variant schedule its work, from outside, without editing it.

A task's coroutine (or generator) runs inside a *driver* that forwards every ``send``,
``throw`` and ``close`` exactly as ``yield from`` would and times each *run slice* between the
loop resuming the task and the task suspending, labelled with what it yielded and the contract
call it was in; a callbacks loop is wrapped in :class:`TracedLoop`, a proxy that times each
callback and each piece of work sent to a thread; a blocking-style task (a plain function) is
wrapped in :class:`TracedBlocking`, which times its code between two blocking calls. Nothing is
patched: :func:`traced` returns a *copy* of a variant, so the one discovery returns stays as it
was. ``timeline/README.md`` says what the timelines show.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import inspect
import itertools
import types
import weakref
from collections import deque
from collections.abc import Callable, Generator
from time import perf_counter
from typing import Any

from loops import Variant

# The contract's calls a task can be suspended in. The proxy notes the awaitable each returns,
# so a suspension inside one is named by it ("sleep", "recv", ...), the same word on every loop.
CONTRACT_CALLS = frozenset(
    {
        "sleep",
        "spawn",
        "join",
        "cancel",
        "timeout_after",
        "recv",
        "sendall",
        "accept",
        "connect",
        "recvfrom",
        "sendto",
        "run_in_thread",
        "get",
        "put",
    }
)


# The running blocking-style task's [row, start of its slice]: a context variable, so that each
# thread and each greenlet (greenlet gives every greenlet a context of its own) keeps its own.
_SLICE: contextvars.ContextVar[list] = contextvars.ContextVar("lab_slice")
BLOCKING_WAITS = CONTRACT_CALLS - {"spawn", "timeout_after"}  # calls that may block a task


class Tracer:
    """A record of run slices: which row (task, callback or thread) ran, when, and why it stopped.

    ``limit`` keeps only the newest slices and rows (a ring), so tracing a long or huge program
    (the conformance suite's 10 000 tasks) costs bounded memory; ``None`` keeps everything.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.origin = perf_counter()
        self.rows: deque[dict[str, Any]] | list[dict[str, Any]] = (
            deque(maxlen=limit) if limit else []
        )
        self.slices: deque[dict[str, Any]] | list[dict[str, Any]] = (
            deque(maxlen=limit) if limit else []
        )
        self._ids = itertools.count()
        self._callback_rows: dict[tuple[str, str], int] = {}
        # The awaitables that contract calls returned, and the call's name ("sleep(0)" for a
        # sleep of no time: a yield of the turn). Weak: a finished call leaves nothing here.
        self.calls: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()

    # -- rows and slices ------------------------------------------------------------------

    def row(self, name: str, kind: str) -> int:
        """A new row (a task, a callback, a thread's work) and its id."""
        row_id = next(self._ids)
        self.rows.append({"id": row_id, "name": name, "kind": kind})
        return row_id

    def _named_row(self, name: str, kind: str) -> int:
        # Callbacks and thread work are grouped by name: a reader callback called forty times
        # is one row with forty slices, however many closures of the same function there are.
        key = (name, kind)
        if key not in self._callback_rows:
            self._callback_rows[key] = self.row(name, kind)
        return self._callback_rows[key]

    def record(self, row: int, start: float, end: float, mark: str, call: str = "") -> None:
        """One run slice of `row`; `mark` says why it stopped (tasks) or what woke it."""
        self.slices.append(
            {
                "row": row,
                "start": start - self.origin,
                "end": end - self.origin,
                "mark": mark,
                "call": call,
            }
        )

    # -- wrapping ---------------------------------------------------------------------------

    def task(self, coro: Any, style: str) -> Any:
        """coro wrapped in a recording driver, if it is a fresh coroutine/generator; else coro.

        A loop may insist on a real coroutine object (trio awaits it, curio and asyncio check
        ``iscoroutine``), so in the coroutines style the driver is wrapped in an ``async def``
        shell; shell and driver take the task's ``__name__``/``__qualname__``, so a loop's task
        names are unchanged. Anything else (a function passed by mistake, an already started
        coroutine) goes to the loop untouched, so its own error, if any, is the caller's."""
        if style == "coroutines" and inspect.iscoroutine(coro):
            if inspect.getcoroutinestate(coro) != inspect.CORO_CREATED:
                return coro
            row = self.row(coro.__name__, "task")
            shell = _shell(_drive(coro, self, row))
            shell.__name__, shell.__qualname__ = coro.__name__, coro.__qualname__
            # A loop may throw into a task that never started (cancelled before its first
            # step): the shell then ends without running, and the task's own coroutine, never
            # awaited, would warn when collected where unwrapped it would have been closed.
            weakref.finalize(shell, coro.close)
            return shell
        if style == "generators" and inspect.isgenerator(coro):
            if inspect.getgeneratorstate(coro) != inspect.GEN_CREATED:
                return coro
            driver = _drive(coro, self, self.row(coro.__name__, "task"))
            driver.__name__, driver.__qualname__ = coro.__name__, coro.__qualname__
            return driver
        return coro

    def contract_call(self, name: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """call(*args, **kwargs), its awaitable noted as the contract's `name`."""
        awaitable = call(*args, **kwargs)
        label = "sleep(0)" if name == "sleep" and args and args[0] == 0 else name
        with contextlib.suppress(TypeError):  # not weakly referable: the chain walk names it
            self.calls[awaitable] = label
        return awaitable

    def blocking_task(self, fn: Any) -> Any:
        """fn wrapped so that the task it runs records a slice between its blocking calls."""
        if not callable(fn) or inspect.iscoroutinefunction(fn):
            return fn  # the loop's own TypeError, not ours
        row = self.row(_callable_name(fn), "task")

        @functools.wraps(fn)
        def task(*args: Any) -> Any:
            token = _SLICE.set(current := [row, perf_counter()])
            try:
                result = fn(*args)
            except BaseException as failure:
                self.record(row, current[1], perf_counter(), f"raised {type(failure).__name__}")
                raise
            finally:
                _SLICE.reset(token)
            self.record(row, current[1], perf_counter(), "returned")
            return result

        return task

    def blocking_call(self, name: str, call: Callable[..., Any], *args: Any) -> Any:
        """call(*args) from a blocking-style task: its slice ends here, the next starts after."""
        current = _SLICE.get(None)
        if current is None:  # not from a task this tracer wrapped
            return call(*args)
        label = "sleep(0)" if name == "sleep" and args and args[0] == 0 else name
        self.record(current[0], current[1], perf_counter(), label, label)
        try:
            return call(*args)
        finally:
            current[1] = perf_counter()

    def callback(self, callback: Callable[..., Any], via: str) -> Callable[..., Any]:
        """callback wrapped so that each call is a slice, marked with what scheduled it."""
        return self._timed(callback, "callback", via)

    def thread_work(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """fn wrapped so that its run in a worker thread is a slice on a row of its own."""
        return self._timed(fn, "thread", "thread")

    def _timed(self, fn: Callable[..., Any], kind: str, mark: str) -> Callable[..., Any]:
        if not callable(fn):
            return fn  # the loop's own TypeError, not ours
        row = self._named_row(_callable_name(fn), kind)

        @functools.wraps(fn)
        def timed(*args: Any) -> Any:
            start = perf_counter()
            try:
                return fn(*args)
            finally:
                self.record(row, start, perf_counter(), mark)

        return timed


def _callable_name(fn: Any) -> str:
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", None) or type(fn).__name__


# -- the driver ---------------------------------------------------------------------------


async def _shell(driver: Any) -> Any:
    """A real coroutine object around the driver, for loops that check types (trio, curio)."""
    return await driver


@types.coroutine
def _drive(coro: Any, tracer: Tracer, row: int) -> Generator[Any, Any, Any]:
    """``yield from coro``, spelled out so that each step can be timed and labelled.

    Forwarding is exact: the value the loop sends is sent, the exception it throws is thrown,
    close() closes, the coroutine's return value is returned and its exception propagates.
    """
    send, error = None, None
    while True:
        start = perf_counter()
        try:
            request = coro.send(send) if error is None else coro.throw(error)
        except StopIteration as stop:
            tracer.record(row, start, perf_counter(), "returned")
            return stop.value
        except BaseException as failure:
            tracer.record(row, start, perf_counter(), f"raised {type(failure).__name__}")
            raise
        finally:
            error = None  # drop the reference: a thrown exception must not outlive its use
        tracer.record(row, start, perf_counter(), describe(request), waiting_in(coro, tracer.calls))
        try:
            send = yield request
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as thrown:
            send, error = None, thrown


def describe(request: Any) -> str:
    """A short label for what a task yielded to its loop: the trap's name or the object's type."""
    if request is None:
        return "yield"  # a bare yield: sleep(0) on most home-made loops and asyncio
    if isinstance(request, tuple) and request and isinstance(request[0], str):
        return request[0]  # a trap tuple: ("trap_sleep", ...) in curio, and the traps loop
    if isinstance(request, type):
        return request.__name__  # trio yields some requests as classes (CancelShieldedCheckpoint)
    return type(request).__name__


def waiting_in(coro: Any, calls: weakref.WeakKeyDictionary) -> str:
    """The contract call (sleep, recv, join...) the suspended task is inside of.

    Walking down the await chain from the task, the first awaitable that a contract call
    returned (the proxy notes them in `calls`) names it, however the loop builds that call (a
    coroutine, a helper's generator, a Future); failing that, the first frame named like a
    contract call (a Queue's get or put), else the first frame outside the task's own file.
    """
    home = coro.cr_code.co_filename if hasattr(coro, "cr_code") else coro.gi_code.co_filename
    named = outside = ""
    link = _awaiting(coro)
    while link is not None:
        try:
            if link in calls:
                return calls[link]
        except TypeError:  # neither hashable nor weakly referable: not one the proxy noted
            pass
        code = getattr(link, "cr_code", None) or getattr(link, "gi_code", None)
        if code is None:
            break
        if not named and code.co_name in CONTRACT_CALLS:
            named = code.co_name
        if not outside and code.co_filename != home:
            outside = code.co_name
        link = _awaiting(link)
    return named or outside


def _awaiting(link: Any) -> Any:
    if hasattr(link, "cr_await"):
        return link.cr_await
    return getattr(link, "gi_yieldfrom", None)


# -- proxies ------------------------------------------------------------------------------


class TracedAPI:
    """A coroutines/generators namespace whose tasks run inside the tracer's drivers."""

    def __init__(self, api: Any, tracer: Tracer, style: str) -> None:
        self._api, self._tracer, self._style = api, tracer, style

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._api, name)
        if name in CONTRACT_CALLS and callable(value):
            return functools.partial(self._tracer.contract_call, name, value)
        return value

    def run(self, coro: Any) -> Any:
        return self._api.run(self._tracer.task(coro, self._style))

    def spawn(self, coro: Any) -> Any:
        task = self._tracer.task(coro, self._style)
        return self._tracer.contract_call("spawn", self._api.spawn, task)

    def run_in_thread(self, fn: Any, *args: Any) -> Any:
        work = self._tracer.thread_work(fn)
        return self._tracer.contract_call("run_in_thread", self._api.run_in_thread, work, *args)


class TracedBlocking:
    """A blocking-style namespace whose tasks' functions, calls and queues are timed."""

    def __init__(self, api: Any, tracer: Tracer) -> None:
        self._api, self._tracer = api, tracer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._api, name)
        if name in BLOCKING_WAITS and callable(value):
            return functools.partial(self._tracer.blocking_call, name, value)
        return value

    def run(self, fn: Any, *args: Any) -> Any:
        return self._api.run(self._tracer.blocking_task(fn), *args)

    def spawn(self, fn: Any, *args: Any) -> Any:
        return self._api.spawn(self._tracer.blocking_task(fn), *args)

    def run_in_thread(self, fn: Any, *args: Any) -> Any:
        work = self._tracer.thread_work(fn)
        return self._tracer.blocking_call("run_in_thread", self._api.run_in_thread, work, *args)

    def Queue(self) -> Any:  # the contract's name: a factory, called like a class
        return TracedQueue(self._api.Queue(), self._tracer)


class TracedQueue:
    """A blocking-style Queue whose waits (get, put, join) end the calling task's slice."""

    def __init__(self, queue: Any, tracer: Tracer) -> None:
        self._queue, self._tracer = queue, tracer

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._queue, name)
        if name in ("get", "put", "join"):
            return functools.partial(self._tracer.blocking_call, name, value)
        return value


class TracedLoop:
    """A callbacks-style loop whose callbacks are timed: every other attribute is the loop's."""

    def __init__(self, loop: Any, tracer: Tracer) -> None:
        self._loop, self._tracer = loop, tracer

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)

    def __repr__(self) -> str:
        return f"<traced {self._loop!r}>"

    def call_soon(self, callback: Any, *args: Any) -> Any:
        return self._loop.call_soon(self._tracer.callback(callback, "call_soon"), *args)

    def call_soon_threadsafe(self, callback: Any, *args: Any) -> Any:
        return self._loop.call_soon_threadsafe(
            self._tracer.callback(callback, "call_soon_threadsafe"), *args
        )

    def call_later(self, delay: float, callback: Any, *args: Any) -> Any:
        return self._loop.call_later(delay, self._tracer.callback(callback, "timer"), *args)

    def call_at(self, when: float, callback: Any, *args: Any) -> Any:
        return self._loop.call_at(when, self._tracer.callback(callback, "timer"), *args)

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> Any:
        return self._loop.add_reader(fd, self._tracer.callback(callback, "readable"), *args)

    def add_writer(self, fd: Any, callback: Any, *args: Any) -> Any:
        return self._loop.add_writer(fd, self._tracer.callback(callback, "writable"), *args)

    def run_in_thread(self, fn: Any, *args: Any, callback: Any) -> Any:
        return self._loop.run_in_thread(
            self._tracer.thread_work(fn),
            *args,
            callback=self._tracer.callback(callback, "thread done"),
        )


def traced(variant: Variant, tracer: Tracer) -> Variant:
    """A copy of variant whose every style records into tracer; variant itself is untouched."""
    entries: dict[str, Any] = {}
    if variant.callbacks is not None:
        factory = variant.callbacks
        entries["callbacks"] = lambda: TracedLoop(factory(), tracer)
    for style in ("generators", "coroutines"):
        api = getattr(variant, style)
        if api is not None:
            entries[style] = TracedAPI(api, tracer, style)
    if variant.blocking is not None:
        entries["blocking"] = TracedBlocking(variant.blocking, tracer)
    return dataclasses.replace(variant, **entries)
