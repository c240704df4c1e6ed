"""The callback-only reactor: a ready queue, a timer heap and a selector, nothing else.

The idea: every piece of work is a callback. ``call_soon`` queues a handle, ``call_later``
pushes a timer handle on a heap, ``add_reader``/``add_writer`` keep a handle in the selector
registration of an fd. One iteration of the loop (:meth:`Loop._run_once`) waits on the
selector no longer than the next timer allows, moves expired timers to the ready queue, and
runs the batch of handles in the queue when that third stage begins. There are no futures and
no tasks: state that a coroutine would keep on its stack lives in objects, as in the first
fetcher of the "500 Lines or Less" crawler.

Builds on: asyncio's ``base_events`` (``Handle``/``TimerHandle``, ``_run_once`` and its
compaction rule), epoll (what ``selectors.DefaultSelector`` wraps here; ``readiness.py`` says
why the reactor reads it directly), and the Python Cookbook's socketpair wake-up for work
handed in from other threads.

Limits: the callbacks style only (futures and tasks are the ``futures`` and ``traps``
variants' business); no signal handlers, subprocesses or transports; one running loop per
thread at a time.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import contextvars
import heapq
import logging
import socket
import threading
import time
from collections.abc import Callable
from itertools import count
from typing import Any

from loops._signals import signals_wake
from loops.callbacks.handles import Handle, TimerHandle
from loops.callbacks.readiness import READ, WAKES_READER, WAKES_WRITER, WRITE, Readiness

logger = logging.getLogger(__name__)

MAX_WAIT = 24 * 3600.0  # epoll's millisecond timeout overflows for far timers
# asyncio's compaction rule: rebuild the heap when it holds more than COMPACT_MIN_TIMERS
# timers and more than COMPACT_CANCELLED_FRACTION of them are cancelled.
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5
_CLOCK_RESOLUTION = time.get_clock_info("monotonic").resolution

_monotonic = time.monotonic
_heappush, _heappop = heapq.heappush, heapq.heappop
_running = threading.local()  # .loop: the loop running in this thread, to refuse nesting


class Loop:
    """A callbacks-style event loop (asyncio's loop API without futures or tasks)."""

    def __init__(self) -> None:
        self._ready: collections.deque[Handle] = collections.deque()  # run next, FIFO
        self._timers: list[tuple[float, int, TimerHandle]] = []  # heap of (when, seq, handle)
        self._timer_seq = count()  # breaks deadline ties, so equal deadlines fire FIFO
        self._cancelled_timers = 0  # cancelled handles still inside the heap
        self._readiness = Readiness()  # fd -> IORecord (its reader and writer), and the epoll set
        self._stopping = False  # stop() was called: finish this iteration, then return
        self._thread: int | None = None  # ident of the thread inside run_forever, else None
        self._closed = False
        self._exception_handler: Callable[[Any, dict], Any] | None = None  # None: log it
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None  # for run_in_thread
        # A byte written to _wake_writer makes a blocked poll() return (for other threads).
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._readiness.watch(self._wake_reader, READ, Handle(self._drain_wakeups, ()))

    # -- the run loop ---------------------------------------------------------------------

    def run_forever(self) -> None:
        """Run iterations until stop() is called."""
        self._check_closed()
        if self._thread is not None:
            raise RuntimeError("This event loop is already running")
        if getattr(_running, "loop", None) is not None:
            raise RuntimeError("Cannot run the event loop while another loop is running")
        self._thread = threading.get_ident()
        _running.loop = self
        try:
            # A signal wakes the poll, so its Python handler runs at once (loops/_signals.py).
            with signals_wake(self._signal_wake_fd()):
                run_once = self._run_once
                run_once()  # at least one iteration, even if stop() came first (as asyncio)
                # The test first and a call last: CPython 3.13 and 3.14 put a back edge that
                # follows a test outside this try (CPython gh-130279), where a Ctrl-C would skip
                # the finally.
                while True:
                    if self._stopping:
                        break
                    run_once()
        finally:
            # Also on KeyboardInterrupt/SystemExit: the loop stays usable for another run.
            self._stopping = False
            self._thread = None
            _running.loop = None

    def _run_once(self) -> None:
        """One iteration: wait for I/O, expire timers, run the batch that is ready."""
        ready = self._ready
        timers = self._timers

        # Stage 1: wait for I/O, no longer than the next timer (0 if work is ready, forever
        # if there is nothing at all), and queue the handles of the fds that became ready.
        if self._cancelled_timers:
            while timers and timers[0][2]._cancelled:
                _heappop(timers)
                self._cancelled_timers -= 1
        if ready or self._stopping:
            timeout = 0
        elif timers:
            timeout = min(max(0.0, timers[0][0] - self.time()), MAX_WAIT)
        else:
            timeout = -1
        records = self._readiness.records
        for fd, events in self._readiness.poller.poll(timeout, len(records)):
            try:
                record = records[fd]
            except KeyError:  # a closed fd whose file lives on in a dup: epoll still reports it
                self._readiness.drop_ghosts()
                continue
            reader = record.reader
            if reader is not None and events & WAKES_READER:
                ready.append(reader)
            writer = record.writer
            if writer is not None and events & WAKES_WRITER:
                ready.append(writer)

        # Stage 2: expire timers: every timer due by now joins the ready queue, in deadline
        # order (sequence order for equal deadlines).
        if timers:
            end = self.time() + _CLOCK_RESOLUTION
            while timers and timers[0][0] < end:
                handle = _heappop(timers)[2]
                handle._scheduled = False
                if handle._cancelled:
                    self._cancelled_timers -= 1
                else:
                    ready.append(handle)

        # Stage 3: run exactly the batch that is ready now; what these callbacks schedule
        # waits for the next iteration, so a callback that reschedules itself cannot starve
        # I/O or timers.
        popleft = ready.popleft
        for _ in range(len(ready)):
            handle = popleft()
            if handle._cancelled:
                continue
            try:
                handle._context.run(handle._callback, *handle._args)
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                self._callback_failed(handle, exc)
        # A traceback that passed through this frame keeps its locals: without this, the
        # batch's last handle (and the finished task and exception its arguments hold) lived
        # as long as that traceback did, where asyncio's loop lets them go (asyncio's
        # _run_once drops its handle the same way).
        handle = None

    def stop(self) -> None:
        """Stop run_forever after the callbacks of the current iteration."""
        self._stopping = True

    def is_running(self) -> bool:
        """True while run_forever is running."""
        return self._thread is not None

    def is_closed(self) -> bool:
        """True once close() was called."""
        return self._closed

    def close(self) -> None:
        """Drop pending work and release the selector, wake-up sockets and threads; idempotent.

        Waits for run_in_thread work still running: close() leaves no thread behind.
        """
        if self._thread is not None:
            raise RuntimeError("Cannot close a running event loop")
        if self._closed:
            return
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._closed = True
        self._ready.clear()
        self._timers.clear()
        self._cancelled_timers = 0
        self._readiness.close()
        self._wake_reader.close()
        self._wake_writer.close()

    def time(self) -> float:
        """The loop's clock: time.monotonic(), in seconds. Every deadline is read through this
        method, as asyncio's loop reads them, so a subclass or a test that replaces it moves
        when timers fire, not only what the loop reports."""
        return _monotonic()

    # -- scheduling -----------------------------------------------------------------------

    def call_soon(
        self,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> Handle:
        """Run callback(*args) in the next iteration, FIFO with other call_soon calls."""
        if self._closed:
            raise RuntimeError("Event loop is closed")
        if not callable(callback):
            raise TypeError(f"call_soon() needs a callable, got {callback!r}")
        handle = Handle(callback, args, context)
        self._ready.append(handle)
        return handle

    def call_later(
        self,
        delay: float,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> TimerHandle:
        """Run callback(*args) no earlier than `delay` seconds from now."""
        try:
            when = self.time() + delay
        except TypeError:
            raise TypeError(f"call_later() needs a delay in seconds, got {delay!r}") from None
        return self._schedule(when, callback, args, context, "call_later")

    def call_at(
        self,
        when: float,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> TimerHandle:
        """Run callback(*args) no earlier than loop time `when`."""
        try:
            when + 0.0  # a number; kept as given, so when() returns it as asyncio's does
        except TypeError:
            raise TypeError(f"call_at() needs a loop time in seconds, got {when!r}") from None
        return self._schedule(when, callback, args, context, "call_at")

    def _schedule(
        self,
        when: float,
        callback: Callable[..., Any],
        args: tuple,
        context: contextvars.Context | None,
        caller: str,
    ) -> TimerHandle:
        if self._closed:
            raise RuntimeError("Event loop is closed")
        if not callable(callback):
            raise TypeError(f"{caller}() needs a callable, got {callback!r}")
        if when != when:
            raise ValueError(f"{caller}() got a NaN time, which would never come")
        handle = TimerHandle(when, callback, args, self, context)
        _heappush(self._timers, (when, next(self._timer_seq), handle))
        return handle

    def _timer_cancelled(self) -> None:
        """A scheduled timer was cancelled: compact the heap once cancelled ones dominate.

        asyncio's rule (more than 100 timers, more than half cancelled), checked at cancel time
        so that even one callback cancelling timers in a tight loop keeps the heap bounded:
        at most max(100, 2 x live timers) entries, each compaction paid for by the cancels
        that made it due.
        """
        self._cancelled_timers += 1
        timers = self._timers
        heap_size = len(timers)
        if heap_size > COMPACT_MIN_TIMERS and self._cancelled_timers > (
            COMPACT_CANCELLED_FRACTION * heap_size
        ):
            live = [entry for entry in timers if not entry[2]._cancelled]
            heapq.heapify(live)
            timers[:] = live  # in place: _run_once holds a reference to this list
            self._cancelled_timers = 0

    # -- readiness ------------------------------------------------------------------------

    def add_reader(self, fd: Any, callback: Callable[..., Any], *args: Any) -> None:
        """Call callback(*args) whenever fd is readable, until remove_reader(fd)."""
        self._watch(fd, READ, callback, args)

    def add_writer(self, fd: Any, callback: Callable[..., Any], *args: Any) -> None:
        """Call callback(*args) whenever fd is writable, until remove_writer(fd)."""
        self._watch(fd, WRITE, callback, args)

    def remove_reader(self, fd: Any) -> bool:
        """Stop watching fd for reading; True if it was watched."""
        return not self._closed and self._readiness.unwatch(fd, READ)

    def remove_writer(self, fd: Any) -> bool:
        """Stop watching fd for writing; True if it was watched."""
        return not self._closed and self._readiness.unwatch(fd, WRITE)

    def _watch(self, fd: Any, event: int, callback: Callable[..., Any], args: tuple) -> None:
        self._check_closed()
        if not callable(callback):
            side = "reader" if event == READ else "writer"
            raise TypeError(f"add_{side}() needs a callable, got {callback!r}")
        self._readiness.watch(fd, event, Handle(callback, args))

    # -- threads --------------------------------------------------------------------------

    def call_soon_threadsafe(
        self,
        callback: Callable[..., Any],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> Handle:
        """call_soon from any thread, waking the loop if it is blocked in the selector."""
        handle = self.call_soon(callback, *args, context=context)  # deque.append is atomic
        self._wake()
        return handle

    def run_in_thread(
        self,
        fn: Callable[..., Any],
        *args: Any,
        callback: Callable[[concurrent.futures.Future], Any],
    ) -> None:
        """Run fn(*args) in a worker thread, then callback(future) on the loop."""
        self._check_closed()
        if not callable(fn) or not callable(callback):
            raise TypeError(f"run_in_thread() needs callables, got {fn!r} and {callback!r}")
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="callbacks")
        context = contextvars.copy_context()  # the callback runs in the caller's context
        future = self._pool.submit(fn, *args)
        future.add_done_callback(lambda done: self._deliver(callback, done, context))

    def _deliver(
        self,
        callback: Callable[..., Any],
        future: concurrent.futures.Future,
        context: contextvars.Context,
    ) -> None:
        """From a worker thread: queue callback(future) and wake the loop."""
        self._ready.append(Handle(callback, (future,), context))
        self._wake()

    def _wake(self) -> None:
        # OSError: the buffer is full, so a wake-up is already pending (or the loop closed).
        with contextlib.suppress(OSError):
            self._wake_writer.send(b"\0")

    def _signal_wake_fd(self) -> int:
        """The fd a signal writes to while the loop runs: the threads' wake-up."""
        return self._wake_writer.fileno()

    def _drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError, InterruptedError):
            while self._wake_reader.recv(4096):
                pass

    # -- errors ---------------------------------------------------------------------------

    def _callback_failed(self, handle: Handle, exc: BaseException) -> None:
        self.call_exception_handler(
            {
                "message": f"Exception in callback {handle.describe()}",
                "exception": exc,
                "handle": handle,
            }
        )

    def set_exception_handler(self, handler: Callable[[Any, dict], Any] | None) -> None:
        """Route errors to handler(loop, context); None restores the default (log them)."""
        if handler is not None and not callable(handler):
            raise TypeError(f"an exception handler must be callable or None, got {handler!r}")
        self._exception_handler = handler

    def get_exception_handler(self) -> Callable[[Any, dict], Any] | None:
        """The handler set by set_exception_handler, or None for the default."""
        return self._exception_handler

    def call_exception_handler(self, context: dict) -> None:
        """Report an error: to the handler if one is set (a failing handler is logged and the
        loop goes on), else to default_exception_handler."""
        handler = self._exception_handler
        if handler is not None:
            try:
                handler(self, context)
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                context = {
                    "message": "Unhandled error in exception handler",
                    "exception": exc,
                    "context": context,
                }
        try:
            self.default_exception_handler(context)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException:
            # Logging itself failed; there is nowhere left to report to but the logger.
            logger.error("Exception in default exception handler", exc_info=True)

    def default_exception_handler(self, context: dict) -> None:
        """Log the message, the other context entries (handle, ...) and the traceback."""
        exception = context.get("exception")
        lines = [context.get("message") or "Unhandled exception in event loop"]
        lines += [f"{key}: {context[key]!r}" for key in sorted(context) if key not in _LOGGED_APART]
        exc_info = (type(exception), exception, exception.__traceback__) if exception else False
        logger.error("\n".join(lines), exc_info=exc_info)

    # -- helpers --------------------------------------------------------------------------

    def _check_closed(self) -> None:
        if self._closed:
            raise RuntimeError("Event loop is closed")

    def __repr__(self) -> str:
        return (
            f"<Loop running={self.is_running()} closed={self._closed} "
            f"ready={len(self._ready)} timers={len(self._timers)}>"
        )


_LOGGED_APART = {"message", "exception"}
