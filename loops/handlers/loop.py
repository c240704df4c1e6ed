"""handlers: the Python Cookbook's event-driven I/O, grown into the lab's callbacks contract.

The idea (Beazley & Jones, *Python Cookbook* 3rd ed., recipe 11.12): every I/O endpoint is a
handler object, and each iteration the loop *asks every handler* whether it wants to receive or
send, passes the ones that do to ``select()``, and calls ``handle_receive()`` /
``handle_send()`` on those that are ready. There is no registration to keep in sync: the
handlers' own state is the truth. Thread offload is the recipe's ``ThreadPoolHandler``: workers
finish, queue the completion and write a byte to a socketpair whose handler runs it.

What it costs, and what the lab measures: the asking is O(handlers) per iteration even when one
socket is busy, ``select()`` copies fd sets in and out on every call, and ``select()`` cannot
watch a descriptor numbered 1024 or more (FD_SETSIZE): add_reader/add_writer on such an fd is a
clear ValueError, not a silent failure. Timers (a heap with lazy cancellation) and the ready
queue are the minimum the contract needs on top of the recipe.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import contextvars
import errno
import heapq
import logging
import os
import select
import socket
import time

from loops._signals import signals_wake

logger = logging.getLogger(__name__)

FD_SETSIZE = 1024  # select()'s ceiling on Linux: fds at or above it cannot be watched
MAX_WAIT = 24 * 3600.0  # the longest single select(): its time_t overflows for far timers
# asyncio's compaction rule: rebuild the heap when it holds more than COMPACT_MIN_TIMERS
# timers and more than COMPACT_CANCELLED_FRACTION of them are cancelled.
COMPACT_MIN_TIMERS = 100
COMPACT_CANCELLED_FRACTION = 0.5


class Handle:
    """A callback with its arguments and context, scheduled to run once."""

    __slots__ = ("_args", "_callback", "_cancelled", "_context")

    def __init__(self, callback, args):
        self._callback = callback
        self._args = args
        self._context = contextvars.copy_context()
        self._cancelled = False

    def cancel(self):
        # Drop the references too: a cancelled handle must not keep its arguments alive.
        self._cancelled = True
        self._callback = self._args = None

    def cancelled(self):
        return self._cancelled

    def __repr__(self):
        state = " cancelled" if self._cancelled else ""
        return f"<Handle {getattr(self._callback, '__qualname__', self._callback)!s}{state}>"


class TimerHandle(Handle):
    """A handle due at a loop time; ordered by deadline, then by scheduling order."""

    __slots__ = ("_loop", "_sequence", "_when")

    def __init__(self, when, sequence, callback, args, loop):
        super().__init__(callback, args)
        self._when = when
        self._sequence = sequence
        self._loop = loop

    def cancel(self):
        # Counted, so the heap can be compacted when cancellations dominate.
        if not self._cancelled:
            super().cancel()
            self._loop._cancelled_timers += 1

    def when(self):
        return self._when

    def __lt__(self, other):
        return (self._when, self._sequence) < (other._when, other._sequence)


class EventHandler:
    """The recipe's handler: the loop asks it every iteration what it wants."""

    def fileno(self):
        raise TypeError(f"{type(self).__name__} must define fileno()")

    def wants_to_receive(self):
        return False

    def handle_receive(self):
        pass

    def wants_to_send(self):
        return False

    def handle_send(self):
        pass


class CallbackHandler(EventHandler):
    """A file descriptor watched through add_reader / add_writer."""

    __slots__ = ("fd", "fileobj", "loop", "reader", "writer")

    def __init__(self, loop, fd):
        self.loop = loop
        self.fd = fd
        self.fileobj = fd  # what the user passed (a socket, or the number itself)
        self.reader: Handle | None = None
        self.writer: Handle | None = None

    def fileno(self):
        return self.fd

    def wants_to_receive(self):
        return self.reader is not None

    def handle_receive(self):
        if self.reader is not None:
            self.loop._run(self.reader)

    def wants_to_send(self):
        return self.writer is not None

    def handle_send(self):
        if self.writer is not None:
            self.loop._run(self.writer)


class ThreadPoolHandler(EventHandler):
    """The recipe's wake-up: other threads queue work and write a byte to a socketpair."""

    def __init__(self, loop):
        self.loop = loop
        self.signal_done, self.done_sock = socket.socketpair()
        self.signal_done.setblocking(False)
        self.done_sock.setblocking(False)
        self.pool: concurrent.futures.ThreadPoolExecutor | None = None

    def fileno(self):
        return self.done_sock.fileno()

    def wants_to_receive(self):
        return True

    def handle_receive(self):
        try:
            while self.done_sock.recv(4096):
                pass
        except BlockingIOError:
            pass

    def wake(self):
        # A full pipe means a wake-up is already pending; a closed one, that the loop is closing.
        with contextlib.suppress(BlockingIOError, OSError):
            self.signal_done.send(b"\0")

    def run(self, fn, args, callback):
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="handlers")
        future = self.pool.submit(fn, *args)
        future.add_done_callback(lambda f: self.loop.call_soon_threadsafe(callback, f))

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True)
        self.signal_done.close()
        self.done_sock.close()


def _ask_every_handler(handlers):
    """The recipe's question, put to every handler: {fd: handler} that want to receive, send.

    Speed trick, fenced here: select() is given the fds (the dicts' keys), not the handler
    objects. Given objects, select() calls each one's fileno(), a Python method call per
    watched handler per iteration, on top of the two questions the idea needs; the fds are
    the handlers' keys already. The handlers asked are kept with their fds, so what select()
    reports maps back to the handler that asked, even if a callback replaces it meanwhile.
    Measured (echo, 1 KiB x 100 connections): the folder README has the command.
    """
    receivers = {fd: h for fd, h in handlers.items() if h.wants_to_receive()}
    senders = {fd: h for fd, h in handlers.items() if h.wants_to_send()}
    return receivers, senders


def _is_open(fd):
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _fileno(fd):
    if not isinstance(fd, int):
        try:
            fd = int(fd.fileno())
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"invalid file object {fd!r}: not an int, no fileno()") from None
    if fd < 0:
        raise ValueError(f"invalid file descriptor {fd}")
    return fd


def _watchable(fileobj):
    """The fd of fileobj, or a clear ValueError if select() cannot watch it."""
    fd = _fileno(fileobj)
    if fd >= FD_SETSIZE:
        raise ValueError(
            f"fd {fd} is beyond select()'s ceiling of {FD_SETSIZE}: "
            "the handlers loop cannot watch it (this is the lesson of this variant)"
        )
    return fd


def _check_callable(callback, caller):
    # Refused here, where the mistake is made, not when the loop calls it much later.
    if not callable(callback):
        raise TypeError(f"{caller}() needs a callable, got {callback!r}")


def _check_when(when, caller):
    # A deadline that is not a number would break the heap's comparisons on every later
    # iteration, and a NaN one would compare false with everything: refuse both up front.
    try:
        when + 0.0
    except TypeError:
        raise TypeError(f"{caller}() needs a number of seconds, got {when!r}") from None
    if when != when:
        raise ValueError(f"{caller}() got NaN, a time that never comes")


def _closed_since(fileobj, fd):
    """True if the object watched under fd was closed since (its number may be reused)."""
    if isinstance(fileobj, int):
        return False
    try:
        return fileobj.fileno() != fd
    except (OSError, ValueError):
        return True


class Loop:
    """The callbacks style over handler objects and select()."""

    def __init__(self):
        self._handlers: dict[int, EventHandler] = {}  # fd -> handler, asked every iteration
        self._ready: collections.deque[Handle] = collections.deque()  # run in the next batch
        self._timers: list[TimerHandle] = []  # heap by (deadline, sequence)
        self._cancelled_timers = 0  # cancelled but still in the heap (dropped lazily)
        self._timer_seq = 0  # tie-breaker: equal deadlines fire in scheduling order
        self._stopping = False
        self._running = False
        self._closed = False
        self._exception_handler = None
        self._wakeup = ThreadPoolHandler(self)
        try:
            # Its own socket too: made while a thousand others are open, it would be past the
            # ceiling, and select() would fail later with no word of why.
            self._handlers[_watchable(self._wakeup)] = self._wakeup
        except ValueError:
            self._wakeup.close()
            raise

    # -- time and scheduling ----------------------------------------------------------------

    def time(self):
        return time.monotonic()

    def call_soon(self, callback, *args):
        self._check_open()
        _check_callable(callback, "call_soon")
        handle = Handle(callback, args)
        self._ready.append(handle)
        return handle

    def call_later(self, delay, callback, *args):
        _check_when(delay, "call_later")
        return self.call_at(self.time() + delay, callback, *args)

    def call_at(self, when, callback, *args):
        self._check_open()
        _check_when(when, "call_at")
        _check_callable(callback, "call_at")
        self._timer_seq += 1
        timer = TimerHandle(when, self._timer_seq, callback, args, self)
        heapq.heappush(self._timers, timer)
        return timer

    def call_soon_threadsafe(self, callback, *args):
        self._check_open()
        _check_callable(callback, "call_soon_threadsafe")
        handle = Handle(callback, args)
        self._ready.append(handle)  # deque.append is atomic; the byte wakes select()
        self._wakeup.wake()
        return handle

    def run_in_thread(self, fn, *args, callback):
        self._check_open()
        _check_callable(fn, "run_in_thread")
        _check_callable(callback, "run_in_thread")
        self._wakeup.run(fn, args, callback)

    # -- handlers -----------------------------------------------------------------------------

    def add_handler(self, handler):
        """Watch an application handler (the recipe's own way): asked every iteration.

        The handler needs ``fileno()`` and the four methods of :class:`EventHandler`; its own
        state answers ``wants_to_receive``/``wants_to_send``. Beyond the lab's contract: the
        contract's add_reader/add_writer are this, through the :class:`CallbackHandler` adapter.
        """
        self._check_open()
        fd = _watchable(handler)
        watched = self._handlers.get(fd)
        if watched is not None:
            owner = watched.fileobj if isinstance(watched, CallbackHandler) else watched
            if not _closed_since(owner, fd):  # else: closed without remove_*, number reused
                raise RuntimeError(f"fd {fd} is already watched by {watched!r}")
        self._handlers[fd] = handler

    def remove_handler(self, handler):
        """Stop asking handler; True if it was watched. Works on a closed socket's handler."""
        with contextlib.suppress(OSError, ValueError):
            fd = handler.fileno()
            if self._handlers.get(fd) is handler:
                del self._handlers[fd]
                return True
        for fd, watched in self._handlers.items():  # closed already: find it by identity
            if watched is handler:
                del self._handlers[fd]
                return True
        return False

    def _handler_for(self, fileobj):
        fd = _watchable(fileobj)
        handler = self._handlers.get(fd)
        if isinstance(handler, CallbackHandler) and _closed_since(handler.fileobj, fd):
            handler = None  # closed without remove_*: the number now names another file
        if handler is None:
            handler = self._handlers[fd] = CallbackHandler(self, fd)
        elif not isinstance(handler, CallbackHandler):
            raise RuntimeError(f"fd {fd} is watched by {handler!r}: remove_handler() it first")
        handler.fileobj = fileobj
        return handler

    def add_reader(self, fd, callback, *args):
        self._check_open()
        _check_callable(callback, "add_reader")
        self._handler_for(fd).reader = Handle(callback, args)

    def add_writer(self, fd, callback, *args):
        self._check_open()
        _check_callable(callback, "add_writer")
        self._handler_for(fd).writer = Handle(callback, args)

    def _find(self, fileobj):
        try:
            return _fileno(fileobj)
        except ValueError:
            # A socket closed before remove_reader has fileno() -1: find it by identity.
            for fd, handler in self._handlers.items():
                if getattr(handler, "fileobj", None) is fileobj:
                    return fd
            raise

    def _remove(self, fd, side):
        handler = self._handlers.get(self._find(fd))
        if not isinstance(handler, CallbackHandler) or getattr(handler, side) is None:
            return False
        setattr(handler, side, None)
        if handler.reader is None and handler.writer is None:
            del self._handlers[handler.fd]
        return True

    def remove_reader(self, fd):
        return self._remove(fd, "reader")

    def remove_writer(self, fd):
        return self._remove(fd, "writer")

    # -- errors -------------------------------------------------------------------------------

    def set_exception_handler(self, handler):
        if handler is not None and not callable(handler):
            raise TypeError(f"exception handler must be callable or None, not {handler!r}")
        self._exception_handler = handler

    def call_exception_handler(self, context):
        if self._exception_handler is None:
            self._default_exception_handler(context)
            return
        try:
            self._exception_handler(self, context)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:
            # A broken handler must not kill the loop: report both, the default way.
            self._default_exception_handler(
                {
                    "message": "exception in the exception handler",
                    "exception": error,
                    "context": context,
                }
            )

    def _default_exception_handler(self, context):
        error = context.get("exception")
        details = f" in {context['handle']!r}" if "handle" in context else ""
        logger.error(
            "%s%s",
            context.get("message", "error in the loop"),
            details,
            exc_info=(type(error), error, error.__traceback__) if error else None,
        )

    def _run(self, handle):
        try:
            handle._context.run(handle._callback, *handle._args)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as error:
            self.call_exception_handler(
                {"message": "exception in callback", "exception": error, "handle": handle}
            )

    # -- running ------------------------------------------------------------------------------

    def run_forever(self):
        self._check_open()
        if self._running:
            raise RuntimeError("this loop is already running")
        self._running = True
        try:
            # Not `while not self._stopping:`, which CPython 3.13 compiles with its back edge
            # outside this try (CPython gh-130279): a Ctrl-C taken there would skip the finally
            # and leave the loop marked running. A signal writes to the threads' wake-up, so
            # it ends the select() and its Python handler runs at once (loops/_signals.py).
            with signals_wake(self._wakeup.signal_done.fileno()):
                while True:
                    if self._stopping:
                        break
                    self._run_once()
        finally:
            self._stopping = False
            self._running = False

    def stop(self):
        self._stopping = True

    def _run_once(self):
        # Stage 1: ask every handler what it wants, select(), let the ready ones handle it.
        if self._ready or self._stopping:
            timeout = 0
        elif self._timers:
            timeout = min(max(0.0, self._timers[0]._when - self.time()), MAX_WAIT)
        else:
            timeout = None
        receivers, senders = _ask_every_handler(self._handlers)
        try:
            can_receive, can_send, _ = select.select(receivers, senders, [], timeout)
        except OSError as error:
            # A watched fd closed behind the loop's back makes select() refuse the whole set,
            # every iteration: drop the dead ones (reported) and carry on with the timers.
            if error.errno != errno.EBADF or not self._forget_closed(error):
                raise
            can_receive = can_send = []
        for fd in can_receive:
            handler = receivers[fd]
            try:
                handler.handle_receive()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as error:  # an application handler's (callbacks are caught)
                self._handler_failed(handler, error)
        for fd in can_send:
            handler = senders[fd]
            try:
                handler.handle_send()
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as error:
                self._handler_failed(handler, error)

        # Stage 2: move due timers to the ready queue; compact when cancellations dominate.
        timers = self._timers
        heap_size = len(timers)
        if heap_size > COMPACT_MIN_TIMERS and self._cancelled_timers > (
            COMPACT_CANCELLED_FRACTION * heap_size
        ):
            self._timers = timers = [t for t in timers if not t._cancelled]
            heapq.heapify(timers)
            self._cancelled_timers = 0
        now = self.time()
        while timers and timers[0]._when <= now:
            timer = heapq.heappop(timers)
            if timer._cancelled:
                self._cancelled_timers -= 1
            else:
                self._ready.append(timer)

        # Stage 3: run the batch that is ready now; what it schedules runs next iteration.
        ready = self._ready
        for _ in range(len(ready)):
            handle = ready.popleft()
            if not handle._cancelled:
                self._run(handle)

    def _handler_failed(self, handler, error):
        self.call_exception_handler(
            {"message": f"exception in handler {handler!r}", "exception": error, "handler": handler}
        )

    def _forget_closed(self, error):
        """Stop watching fds that were closed while watched; True if there were any."""
        closed = [fd for fd in self._handlers if not _is_open(fd)]
        for fd in closed:
            del self._handlers[fd]
            self.call_exception_handler(
                {
                    "message": f"fd {fd} was closed while watched (no remove_reader/writer "
                    "first); it is no longer watched",
                    "exception": error,
                }
            )
        return bool(closed)

    def close(self):
        if self._running:
            raise RuntimeError("cannot close a running loop")
        if self._closed:
            return
        self._closed = True
        self._ready.clear()
        self._timers.clear()
        self._handlers.clear()
        self._wakeup.close()

    def _check_open(self):
        if self._closed:
            raise RuntimeError("this loop is closed")
