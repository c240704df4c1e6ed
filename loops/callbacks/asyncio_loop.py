"""The callbacks reactor as asyncio's event loop: :class:`AsyncioLoop`, the loop proper.

The reactor (``reactor.py``) already is asyncio's core: asyncio's ``Future`` and ``Task`` need
little more from a loop than its calls. This module adds what asyncio's high-level API asks of
the loop itself, each part under its own banner: running coroutines, threads, subprocesses,
signals; the other seams are mixed in from their own modules (``loops/callbacks/README.md``
lists them and what each answers). Nothing here touches the reactor's run loop.

What follows asyncio on purpose: behaviour a program can observe (the order of
``run_until_complete``'s checks, ``shutdown_default_executor``'s helper thread and its timeout
warning, the async-generator hooks, signal handlers refusing coroutines) and the messages of
exceptions and log lines, in CPython's wording, so that CPython's own tests and users' ``except``
clauses and log filters see the same thing; those methods are written after CPython's
``asyncio/base_events.py`` and ``unix_events.py`` (see ``LICENSE-PSF`` in this folder).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import errno
import inspect
import logging
import os
import signal
import socket
import sys
import threading
import weakref
from collections.abc import Callable
from subprocess import PIPE
from typing import Any

from loops.callbacks import subprocesses
from loops.callbacks.connections import Connections
from loops.callbacks.datagrams import Datagrams
from loops.callbacks.handles import Handle
from loops.callbacks.reactor import Loop
from loops.callbacks.servers import Servers
from loops.callbacks.sockets import SocketCalls
from loops.callbacks.transports import _set_result_unless_done

logger = logging.getLogger("loops.callbacks.dropin")
# asyncio's handle for call_soon_threadsafe (3.14, 3.13.1+), None where asyncio has none.
_ThreadSafeHandle = getattr(asyncio.events, "_ThreadSafeHandle", None)


class AsyncioLoop(Loop, SocketCalls, Connections, Servers, Datagrams, asyncio.AbstractEventLoop):
    """The callbacks reactor with the rest of ``asyncio.AbstractEventLoop``: its own methods
    here, the sockets, connections, servers and datagrams from their modules' mixins."""

    def __init__(self) -> None:
        super().__init__()
        # asyncio's rule for a new loop's debug mode: on under -X dev or PYTHONASYNCIODEBUG
        # (unless -E), so a program debugging its loop that way sees this one in debug too.
        self._debug = sys.flags.dev_mode or (
            not sys.flags.ignore_environment and bool(os.environ.get("PYTHONASYNCIODEBUG"))
        )
        self.slow_callback_duration = 0.1  # read by asyncio's debug tools; kept for them
        self._task_factory: Callable[..., Any] | None = None
        # run_in_executor(None, ...)'s pool, made on first use (asyncio's name for it, which
        # CPython's test helpers read).
        self._default_executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_shutdown_called = False
        self._asyncgens: weakref.WeakSet = weakref.WeakSet()  # started, not yet finalized
        self._asyncgens_shutdown_called = False
        self._signal_handlers: dict[int, Handle] = {}
        self._signal_reader: socket.socket | None = None  # set_wakeup_fd writes signal numbers

    # -- running coroutines -----------------------------------------------------------------

    def run_forever(self) -> None:
        """The reactor's run_forever, with asyncio told which loop runs in this thread."""
        self._check_closed()
        if self.is_running():
            raise RuntimeError("This event loop is already running")
        if asyncio._get_running_loop() is not None:
            raise RuntimeError("Cannot run the event loop while another loop is running")
        hooks = sys.get_asyncgen_hooks()
        sys.set_asyncgen_hooks(
            firstiter=self._asyncgen_firstiter, finalizer=self._asyncgen_finalize
        )
        # The hook asyncio gives loop implementations (in asyncio.events.__all__; uvloop calls
        # it too): get_running_loop(), Future and Task find this loop through it.
        asyncio._set_running_loop(self)
        try:
            super().run_forever()
        finally:
            asyncio._set_running_loop(None)
            sys.set_asyncgen_hooks(*hooks)

    def run_until_complete(self, future: Any) -> Any:
        """Run until future (a coroutine is wrapped in a task) is done; its result."""
        self._check_closed()
        if self.is_running():
            raise RuntimeError("This event loop is already running")
        new_task = not asyncio.isfuture(future)
        future = asyncio.ensure_future(future, loop=self)
        future.add_done_callback(_stop_loop_of)
        try:
            self.run_forever()
        except BaseException:
            if new_task and future.done() and not future.cancelled():
                future.exception()  # the error is on its way up: do not also log it as lost
            raise
        finally:
            future.remove_done_callback(_stop_loop_of)
        if not future.done():
            raise RuntimeError("Event loop stopped before Future completed.")
        return future.result()

    # asyncio.futures.Future and asyncio.tasks.Task, not the package's names, as asyncio's
    # loop reads them: a program that replaces asyncio.Task (anyio's suite puts the pure-
    # Python Task there) gets from this loop the tasks asyncio's own loop would make.
    def create_future(self) -> asyncio.Future:
        return asyncio.futures.Future(loop=self)

    def create_task(self, coro: Any, *, name: str | None = None, context: Any = None) -> Any:
        self._check_closed()
        if self._task_factory is None:
            task = asyncio.tasks.Task(coro, loop=self, name=name, context=context)
        else:
            kwargs = {} if context is None else {"context": context}
            task = self._task_factory(self, coro, **kwargs)
            if name is not None:
                task.set_name(name)
        return task

    def set_task_factory(self, factory: Callable[..., Any] | None) -> None:
        if factory is not None and not callable(factory):
            raise TypeError("task factory must be a callable or None")
        self._task_factory = factory

    def get_task_factory(self) -> Callable[..., Any] | None:
        return self._task_factory

    def get_debug(self) -> bool:
        return self._debug

    def set_debug(self, enabled: bool) -> None:
        self._debug = bool(enabled)

    def close(self) -> None:
        """Close as the reactor does, and also the default executor and signal handlers."""
        if self.is_running():
            raise RuntimeError("Cannot close a running event loop")
        if self._closed:
            return
        for sig in list(self._signal_handlers):
            self.remove_signal_handler(sig)
        executor, self._default_executor = self._default_executor, None
        if executor is not None:
            executor.shutdown(wait=False)  # asyncio's choice: close() does not wait for threads
        super().close()

    # -- async generators -------------------------------------------------------------------

    def _asyncgen_firstiter(self, agen: Any) -> None:
        if self._asyncgens_shutdown_called:
            logger.warning("asynchronous generator %r was scheduled after shutdown_asyncgens", agen)
        self._asyncgens.add(agen)

    def _asyncgen_finalize(self, agen: Any) -> None:
        # Called by the garbage collector, from any thread: close it on the loop.
        self._asyncgens.discard(agen)
        if not self.is_closed():
            self.call_soon_threadsafe(self.create_task, agen.aclose())

    async def shutdown_asyncgens(self) -> None:
        """aclose() every async generator still open; errors go to the exception handler."""
        self._asyncgens_shutdown_called = True
        agens, self._asyncgens = list(self._asyncgens), weakref.WeakSet()
        if not agens:
            return
        results = await asyncio.gather(*[agen.aclose() for agen in agens], return_exceptions=True)
        for agen, result in zip(agens, results, strict=True):
            if isinstance(result, Exception):
                self.call_exception_handler(
                    {
                        "message": f"an error occurred during closing of async generator {agen!r}",
                        "exception": result,
                        "asyncgen": agen,
                    }
                )

    # -- threads ----------------------------------------------------------------------------

    def call_soon_threadsafe(
        self, callback: Callable[..., Any], *args: Any, context: Any = None
    ) -> Any:
        """The reactor's call_soon_threadsafe, returning asyncio's thread-safe handle where
        asyncio has one (3.14, 3.13.1+): its lock makes a cancel() from another thread wait
        for a callback already running, and a cancel() before it runs stick (asyncio's rules
        since gh-123965). The reactor runs the handle's own ``_run``, which takes that lock."""
        if _ThreadSafeHandle is None:
            return super().call_soon_threadsafe(callback, *args, context=context)
        self._check_closed()
        handle = _ThreadSafeHandle(callback, args, self, context)
        super().call_soon_threadsafe(handle._run)
        return handle

    def run_in_executor(
        self, executor: Any, func: Callable[..., Any], *args: Any
    ) -> asyncio.Future:
        """Run func(*args) in executor (default: a thread pool); an asyncio future of it."""
        self._check_closed()
        if asyncio.iscoroutine(func) or inspect.iscoroutinefunction(func):
            raise TypeError("coroutines cannot be used with run_in_executor()")
        if executor is None:
            if self._executor_shutdown_called:
                raise RuntimeError("Executor shutdown has been called")
            if self._default_executor is None:
                self._default_executor = concurrent.futures.ThreadPoolExecutor(
                    thread_name_prefix="asyncio"
                )
            executor = self._default_executor
        return asyncio.wrap_future(executor.submit(func, *args), loop=self)

    def set_default_executor(self, executor: Any) -> None:
        if not isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            raise TypeError("executor must be ThreadPoolExecutor")
        self._default_executor = executor

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        """Wait (in a helper thread, so the loop runs on) for the default executor's work."""
        self._executor_shutdown_called = True
        if self._default_executor is None:
            return
        done = self.create_future()

        def shut_down() -> None:
            try:
                self._default_executor.shutdown(wait=True)
                if not self.is_closed():
                    self.call_soon_threadsafe(_set_result_unless_done, done)
            except Exception as exc:
                if not self.is_closed():
                    self.call_soon_threadsafe(done.set_exception, exc)

        thread = threading.Thread(target=shut_down)
        thread.start()
        try:
            await asyncio.wait_for(asyncio.shield(done), timeout)
        except TimeoutError:
            logger.warning(
                "The executor did not finish joining its threads within %s seconds.", timeout
            )
            self._default_executor.shutdown(wait=False)
        else:
            thread.join()

    async def getaddrinfo(
        self,
        host: Any,
        port: Any,
        *,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> list:
        return await self.run_in_executor(
            None, socket.getaddrinfo, host, port, family, type, proto, flags
        )

    async def getnameinfo(self, sockaddr: Any, flags: int = 0) -> tuple[str, str]:
        return await self.run_in_executor(None, socket.getnameinfo, sockaddr, flags)

    # -- subprocesses ---------------------------------------------------------------------------

    # -- subprocesses ---------------------------------------------------------------------------

    async def subprocess_exec(
        self, protocol_factory: Callable[[], Any], program: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, Any]:
        """Start program with args; its pipes and its exit reach the protocol."""
        if kwargs.pop("shell", False):
            raise ValueError("shell must be False")
        return await self._subprocess(protocol_factory, (program, *args), False, kwargs)

    async def subprocess_shell(
        self, protocol_factory: Callable[[], Any], cmd: str | bytes, **kwargs: Any
    ) -> tuple[Any, Any]:
        """Start cmd with the shell; its pipes and its exit reach the protocol."""
        if not isinstance(cmd, str | bytes):
            raise ValueError("cmd must be a string")
        if not kwargs.pop("shell", True):
            raise ValueError("shell must be True")
        return await self._subprocess(protocol_factory, cmd, True, kwargs)

    async def _subprocess(
        self, protocol_factory: Callable[[], Any], args: Any, shell: bool, popen: dict
    ) -> tuple[Any, Any]:
        if not subprocesses.PIDFD:
            raise NotImplementedError("subprocesses need pidfd (Linux 5.3+, Python 3.9+)")
        if popen.pop("universal_newlines", False) or popen.pop("text", False):
            raise ValueError("universal_newlines must be False")
        if popen.pop("bufsize", 0) != 0:
            raise ValueError("bufsize must be 0")
        for name in ("encoding", "errors"):
            if popen.pop(name, None) is not None:
                raise ValueError(f"{name} must be None")
        popen = {"stdin": PIPE, "stdout": PIPE, "stderr": PIPE} | popen
        protocol = protocol_factory()
        transport = subprocesses.SubprocessTransport(self, protocol, args, shell, **popen)
        try:
            await transport._start()
        except BaseException:
            transport.close()
            await transport._wait()
            raise
        return transport, protocol

    # -- signals ----------------------------------------------------------------------------

    def add_signal_handler(self, sig: int, callback: Callable[..., Any], *args: Any) -> None:
        """Run callback(*args) on the loop when sig arrives.

        The C-level handler writes the signal number to a socket (``signal.set_wakeup_fd``),
        which the loop watches like any other: the callback runs as an ordinary handle, in
        the loop's thread, never inside the interrupted code.
        """
        if asyncio.iscoroutine(callback) or inspect.iscoroutinefunction(callback):
            raise TypeError("coroutines cannot be used with add_signal_handler()")
        _check_signal(sig)
        self._check_closed()
        if self._signal_reader is None:
            reader, writer = socket.socketpair()
            reader.setblocking(False)
            writer.setblocking(False)
            try:
                signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
            except (ValueError, OSError) as exc:  # not the main thread
                reader.close()
                writer.close()
                raise RuntimeError(str(exc)) from None
            self._signal_reader, self._signal_writer = reader, writer
            self.add_reader(reader, self._read_signals)
        self._signal_handlers[sig] = Handle(callback, args, None)
        try:
            signal.signal(sig, _ignore_signal)  # the wake-up fd does the work
            signal.siginterrupt(sig, False)
        except OSError as exc:
            del self._signal_handlers[sig]
            if not self._signal_handlers:
                self._close_signal_socket()
            if exc.errno == errno.EINVAL:
                raise RuntimeError(f"sig {sig} cannot be caught") from None
            raise

    def remove_signal_handler(self, sig: int) -> bool:
        """Restore sig's default handling; True if a handler was set."""
        _check_signal(sig)
        if self._signal_handlers.pop(sig, None) is None:
            return False
        default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
        try:
            signal.signal(sig, default)
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise RuntimeError(f"sig {sig} cannot be caught") from None
            raise
        if not self._signal_handlers:
            self._close_signal_socket()
        return True

    def _signal_wake_fd(self) -> int:
        """A signal handler's socket once there is one (it tells which signal came), else the
        threads' wake-up: either wakes the poll."""
        if self._signal_reader is not None:
            return self._signal_writer.fileno()
        return super()._signal_wake_fd()

    def _read_signals(self) -> None:
        try:
            data = self._signal_reader.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        for sig in data:
            handle = self._signal_handlers.get(sig)
            if handle is not None:
                self._ready.append(handle)  # run in the next turn, as a call_soon would

    def _close_signal_socket(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            # A running loop's poll must still wake for a signal (loops/_signals.py).
            signal.set_wakeup_fd(self._wake_writer.fileno() if self.is_running() else -1)
        if self._signal_reader is not None:
            self.remove_reader(self._signal_reader)
            self._signal_reader.close()
            self._signal_writer.close()
            self._signal_reader = None


# -- helpers --------------------------------------------------------------------------------


def _stop_loop_of(future: asyncio.Future) -> None:
    if not future.cancelled() and isinstance(future.exception(), SystemExit | KeyboardInterrupt):
        return  # it is escaping run_forever already
    future.get_loop().stop()


def _check_signal(sig: Any) -> None:
    if not isinstance(sig, int):
        raise TypeError(f"sig must be an int, not {sig!r}")
    if sig not in signal.valid_signals():
        raise ValueError(f"invalid signal number {sig}")


def _ignore_signal(signum: int, frame: Any) -> None:
    """The Python-level handler of a loop's signals: set_wakeup_fd already told the loop."""
