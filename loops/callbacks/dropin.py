"""The callbacks reactor as asyncio's event loop: ``asyncio.run(main(), loop_factory=...)``.

The reactor (``reactor.py``) already is asyncio's core: ``call_soon`` with contexts,
``call_later``/``call_at`` timer handles, ``add_reader``/``add_writer``, the exception handler,
``run_forever``/``stop``/``close``. asyncio's ``Future`` and ``Task`` need nothing more from a
loop than those calls plus ``get_debug()`` and ``create_future()``: a task is a chain of
``call_soon`` callbacks, each future's done-callbacks are ``call_soon`` too. So this module adds
only what asyncio's *high-level* API asks for on top, each part under its own banner:

- running coroutines: ``create_task`` (with a task factory), ``run_until_complete``, and
  ``run_forever`` telling asyncio which loop runs (``asyncio._set_running_loop``) and taking
  the async-generator hooks for ``shutdown_asyncgens``;
- threads: ``run_in_executor`` on a default executor, ``getaddrinfo``/``getnameinfo`` there;
- sockets: the ``sock_*`` coroutines (try the call, wait for readiness on
  ``BlockingIOError``, try again: the lab's rule);
- connections and servers: ``create_connection``, ``create_server`` (a :class:`Server`),
  ``create_unix_*``, ``connect_accepted_socket``, ``create_datagram_endpoint``,
  ``connect_read_pipe``/``connect_write_pipe``, with the transports of ``transports.py``;
- subprocesses: ``subprocess_exec``/``subprocess_shell`` (``subprocesses.py``);
- signals: ``add_signal_handler`` over ``signal.set_wakeup_fd`` and a socketpair.

The boundary is uvloop's: asyncio's own ``Future`` and ``Task`` (the C ones), the lab's loop.
Nothing here touches the reactor's run loop (``Loop._run_once``): the variant's callbacks
rows cost what they cost before. TLS (``ssl=`` on connections and servers, ``start_tls``) is
asyncio's own ``SSLProtocol`` over this module's transports (``tls.py`` argues why). Not
provided (``NotImplementedError`` naming it): ``sendfile``; subprocesses (``subprocesses.py``)
need Linux's pidfd. asyncio's public names are used (``asyncio.Future``,
``asyncio.AbstractServer``, ``asyncio._set_running_loop``, the hook asyncio gives loop
implementations, which uvloop calls too); besides ``sslproto``, no private class of asyncio
(``BaseEventLoop``, ``selector_events``, ``base_subprocess``) is reused.
"""

from __future__ import annotations

import asyncio
import collections.abc
import concurrent.futures
import contextlib
import errno
import functools
import inspect
import itertools
import logging
import os
import signal
import socket
import ssl as ssl_module
import stat
import sys
import threading
import weakref
from collections.abc import Callable
from subprocess import PIPE
from typing import Any

from loops.callbacks import subprocesses, tls
from loops.callbacks.handles import Handle
from loops.callbacks.reactor import Loop
from loops.callbacks.readiness import READ, WRITE
from loops.callbacks.transports import (
    DatagramTransport,
    PipeReadTransport,
    PipeWriteTransport,
    StreamTransport,
)

logger = logging.getLogger(__name__)
# asyncio's handle for call_soon_threadsafe (3.14, 3.13.1+), None where asyncio has none.
_ThreadSafeHandle = getattr(asyncio.events, "_ThreadSafeHandle", None)

ACCEPT_RETRY_DELAY = 1.0  # out of fds: stop accepting this long, instead of spinning
_ACCEPT_PAUSING = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def new_event_loop() -> AsyncioLoop:
    """A new loop: the zero-argument factory ``asyncio.run``, ``Runner`` and uvicorn take."""
    return AsyncioLoop()


def _not_provided(name: str) -> Callable[..., Any]:
    """A coroutine method that says which part of asyncio's API this loop leaves out."""

    async def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{name} is not provided by the callbacks loop")

    refuse.__name__ = name
    return refuse


class AsyncioLoop(Loop, asyncio.AbstractEventLoop):
    """The callbacks reactor with the rest of ``asyncio.AbstractEventLoop``."""

    def __init__(self) -> None:
        super().__init__()
        self._debug = False
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

    def create_future(self) -> asyncio.Future:
        return asyncio.Future(loop=self)

    def create_task(self, coro: Any, *, name: str | None = None, context: Any = None) -> Any:
        self._check_closed()
        if self._task_factory is None:
            task = asyncio.Task(coro, loop=self, name=name, context=context)
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

    # -- sockets ----------------------------------------------------------------------------

    async def _io(self, sock: socket.socket, write: bool, call: Callable[[], Any]) -> Any:
        """call() on a non-blocking socket: try it, and on BlockingIOError wait for the socket
        to be ready (reading, or writing if `write`) and try again. A call that keeps its own
        progress (sock_sendall) raises BlockingIOError until it is done.

        The wait registers its own handle and, when it ends, removes the fd's reader only if
        that handle is still the one registered: a cancelled sock_recv must not take away the
        reader of the sock_recv that replaced it on the same socket.
        """
        _check_socket(sock)
        try:
            return call()
        except (BlockingIOError, InterruptedError):
            pass
        self._check_closed()
        done = self.create_future()
        # The call's error travels beside the future, not in it: the future is an argument of
        # the handle that wakes the task, alive while the task runs on with the error in hand,
        # so an error set on it would outlive its use (CPython 3.14's refcycles test sees it).
        failed: list[BaseException] = []

        def retry() -> None:
            if done.done():
                return
            try:
                result = call()
            except (BlockingIOError, InterruptedError):
                return
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                failed.append(exc)
                done.set_result(None)
            else:
                done.set_result(result)

        fd = sock.fileno()
        event = WRITE if write else READ
        handle = Handle(retry, ())
        self._readiness.watch(fd, event, handle)
        try:
            result = await done
            if failed:
                raise failed.pop()
            return result
        finally:
            record = self._readiness.records.get(fd)
            if record is not None and handle in (record.reader, record.writer):
                self._readiness.unwatch(fd, event)

    async def sock_recv(self, sock: socket.socket, n: int) -> bytes:
        return await self._io(sock, False, lambda: sock.recv(n))

    async def sock_recv_into(self, sock: socket.socket, buf: Any) -> int:
        return await self._io(sock, False, lambda: sock.recv_into(buf))

    async def sock_recvfrom(self, sock: socket.socket, bufsize: int) -> tuple[bytes, Any]:
        return await self._io(sock, False, lambda: sock.recvfrom(bufsize))

    async def sock_recvfrom_into(self, sock: socket.socket, buf: Any, nbytes: int = 0) -> tuple:
        return await self._io(sock, False, lambda: sock.recvfrom_into(buf, nbytes or len(buf)))

    async def sock_sendto(self, sock: socket.socket, data: bytes, address: Any) -> int:
        return await self._io(sock, True, lambda: sock.sendto(data, address))

    async def sock_sendall(self, sock: socket.socket, data: bytes) -> None:
        view = memoryview(data).cast("B")
        sent = 0

        def send_some() -> None:
            nonlocal sent
            while sent < len(view):
                sent += sock.send(view[sent:])  # BlockingIOError: wait, then go on from here

        await self._io(sock, True, send_some)

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        _check_socket(sock)
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_numeric(
            sock.family, address[0]
        ):
            infos = await self.getaddrinfo(
                *address[:2], family=sock.family, type=sock.type, proto=sock.proto
            )
            if not infos:
                raise OSError(f"getaddrinfo({address[0]!r}) returned an empty list")
            address = infos[0][4]
        try:
            sock.connect(address)
            return
        except (BlockingIOError, InterruptedError):
            pass

        def connected() -> None:
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error in (errno.EINPROGRESS, errno.EALREADY):
                raise BlockingIOError  # not yet: wait again
            if error:
                raise OSError(error, f"Connect call failed {address}")

        await self._io(sock, True, _raise_blocking_once(connected))

    async def sock_accept(self, sock: socket.socket) -> tuple[socket.socket, Any]:
        conn, address = await self._io(sock, False, lambda: sock.accept())
        conn.setblocking(False)
        return conn, address

    async def sock_sendfile(
        self, sock: Any, file: Any, offset: int = 0, count: Any = None, *, fallback: bool = True
    ) -> int:
        raise NotImplementedError("sock_sendfile is not provided by the callbacks loop")

    # -- connections ------------------------------------------------------------------------

    async def create_connection(
        self,
        protocol_factory: Callable[[], Any],
        host: Any = None,
        port: Any = None,
        *,
        ssl: Any = None,
        family: int = 0,
        proto: int = 0,
        flags: int = 0,
        sock: socket.socket | None = None,
        local_addr: Any = None,
        server_hostname: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
        happy_eyeballs_delay: Any = None,
        interleave: Any = None,
        all_errors: bool = False,
    ) -> tuple[Any, Any]:
        """Connect to host:port (each address getaddrinfo gives, in turn) or use sock; with
        ssl (a context, or True for the default one), TLS over it (``tls.py``)."""
        tls.check(ssl, server_hostname, ssl_handshake_timeout, ssl_shutdown_timeout)
        server_hostname = tls.client_hostname(ssl, server_hostname, host)
        if sock is not None:
            if host is not None or port is not None:
                raise ValueError("host/port and sock can not be specified at the same time")
            if sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A Stream Socket was expected, got {sock!r}")
        elif host is None and port is None:
            raise ValueError("host and port was not specified and no sock specified")
        else:
            infos = await self._resolve(host, port, family, socket.SOCK_STREAM, proto, flags)
            local_infos = None
            if local_addr is not None:
                local_infos = await self._resolve(
                    *local_addr, family, socket.SOCK_STREAM, proto, flags
                )
            errors: list[OSError] = []
            for family_, type_, proto_, _, address in infos:
                try:
                    sock = await self._connect_one(family_, type_, proto_, address, local_infos)
                    break
                except OSError as exc:
                    errors.append(exc)
            else:
                try:
                    raise _connect_error(errors, all_errors)
                finally:
                    errors = []  # the raised error's traceback keeps this frame: no cycle
        return await self._make_stream(
            sock,
            protocol_factory,
            ssl=ssl,
            server_hostname=server_hostname,
            handshake_timeout=ssl_handshake_timeout,
            shutdown_timeout=ssl_shutdown_timeout,
        )

    async def _connect_one(
        self, family: int, type_: int, proto: int, address: Any, local_infos: Any
    ) -> socket.socket:
        sock = socket.socket(family, type_, proto)
        try:
            sock.setblocking(False)
            if local_infos is not None:
                for local in local_infos:
                    if local[0] != family:
                        continue
                    try:
                        sock.bind(local[4])
                        break
                    except OSError as exc:
                        raise OSError(
                            exc.errno,
                            f"error while attempting to bind on address {local[4]!r}: "
                            f"{exc.strerror.lower()}",
                        ) from None
                else:
                    raise OSError(f"no matching local address with family={family} found")
            await self.sock_connect(sock, address)
            return sock
        except BaseException:
            sock.close()
            raise

    async def _make_stream(
        self,
        sock: socket.socket,
        protocol_factory: Callable[[], Any],
        server: Any = None,
        ssl: Any = None,
        **tls_options: Any,
    ) -> tuple[Any, Any]:
        """A connected socket's transport and protocol, once connection_made has run (with
        ssl: once the TLS handshake is done, the app's transport the TLS protocol's)."""
        sock.setblocking(False)
        protocol = protocol_factory()
        waiter = self.create_future()
        if ssl:
            over = tls.protocol(self, protocol, ssl, waiter, **tls_options)
            StreamTransport(self, sock, over, server=server)
            transport = over._app_transport
        else:
            transport = StreamTransport(self, sock, protocol, waiter, server=server)
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        return transport, protocol

    async def connect_accepted_socket(
        self,
        protocol_factory: Callable[[], Any],
        sock: socket.socket,
        *,
        ssl: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
    ) -> tuple[Any, Any]:
        tls.check(ssl, None, ssl_handshake_timeout, ssl_shutdown_timeout)
        if sock.type != socket.SOCK_STREAM:
            raise ValueError(f"A Stream Socket was expected, got {sock!r}")
        return await self._make_stream(
            sock,
            protocol_factory,
            ssl=ssl,
            server_side=True,
            handshake_timeout=ssl_handshake_timeout,
            shutdown_timeout=ssl_shutdown_timeout,
        )

    async def create_unix_connection(
        self,
        protocol_factory: Callable[[], Any],
        path: str | None = None,
        *,
        ssl: Any = None,
        sock: socket.socket | None = None,
        server_hostname: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
    ) -> tuple[Any, Any]:
        if ssl and server_hostname is None:
            raise ValueError("you have to pass server_hostname when using ssl")
        tls.check(ssl, server_hostname, ssl_handshake_timeout, ssl_shutdown_timeout)
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.setblocking(False)
                await self.sock_connect(sock, os.fspath(path))
            except BaseException:
                sock.close()
                raise
        elif sock is None:
            raise ValueError("no path and sock were specified")
        elif sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
        return await self._make_stream(
            sock,
            protocol_factory,
            ssl=ssl,
            server_hostname=server_hostname,
            handshake_timeout=ssl_handshake_timeout,
            shutdown_timeout=ssl_shutdown_timeout,
        )

    async def _resolve(
        self, host: Any, port: Any, family: int, type_: int, proto: int, flags: int
    ) -> list:
        infos = await self.getaddrinfo(
            host, port, family=family, type=type_, proto=proto, flags=flags
        )
        if not infos:
            raise OSError("getaddrinfo() returned empty list")
        return infos

    # -- servers ----------------------------------------------------------------------------

    async def create_server(
        self,
        protocol_factory: Callable[[], Any],
        host: Any = None,
        port: Any = None,
        *,
        family: int = socket.AF_UNSPEC,
        flags: int = socket.AI_PASSIVE,
        sock: socket.socket | None = None,
        backlog: int = 100,
        ssl: Any = None,
        reuse_address: bool | None = None,
        reuse_port: bool | None = None,
        keep_alive: bool | None = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
        start_serving: bool = True,
    ) -> Server:
        """Listen on every address of host (a name, a list of names, or None: all) and port;
        with ssl (a context), every accepted connection speaks TLS."""
        ssl = tls.server_context(ssl)
        tls.check(ssl, None, ssl_handshake_timeout, ssl_shutdown_timeout)
        if sock is not None:
            if host is not None or port is not None:
                raise ValueError("host/port and sock can not be specified at the same time")
            if sock.type != socket.SOCK_STREAM:
                raise ValueError(f"A Stream Socket was expected, got {sock!r}")
            sockets = [sock]
        else:
            hosts = _hosts(host)
            infos = set()
            for one in hosts:
                infos.update(await self._resolve(one, port, family, socket.SOCK_STREAM, 0, flags))
            sockets = []
            try:
                for family_, type_, proto_, _, address in infos:
                    try:
                        listener = socket.socket(family_, type_, proto_)
                    except OSError:  # an address family the system lacks (no IPv6)
                        continue
                    sockets.append(listener)
                    if reuse_address is None or reuse_address:
                        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    if reuse_port:
                        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                    if keep_alive:
                        listener.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
                    if family_ == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    try:
                        listener.bind(address)
                    except OSError as exc:
                        raise OSError(
                            exc.errno,
                            f"error while attempting to bind on address {address!r}: "
                            f"{exc.strerror.lower()}",
                        ) from None
            except BaseException:
                for listener in sockets:
                    listener.close()
                raise
            if not sockets:
                raise OSError(f"could not bind on any address out of {hosts!r}")
        for listener in sockets:
            listener.setblocking(False)
        server = Server(
            self,
            sockets,
            protocol_factory,
            backlog,
            ssl,
            ssl_handshake_timeout,
            ssl_shutdown_timeout,
        )
        if start_serving:
            server._start_serving()
            await asyncio.sleep(0)  # let the listeners settle, as asyncio does
        return server

    async def create_unix_server(
        self,
        protocol_factory: Callable[[], Any],
        path: str | None = None,
        *,
        sock: socket.socket | None = None,
        backlog: int = 100,
        ssl: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
        start_serving: bool = True,
        cleanup_socket: bool = True,
    ) -> Server:
        ssl = tls.server_context(ssl)
        tls.check(ssl, None, ssl_handshake_timeout, ssl_shutdown_timeout)
        if path is not None:
            if sock is not None:
                raise ValueError("path and sock can not be specified at the same time")
            path = os.fspath(path)
            if path[0] not in ("\0", "\x00"):  # a stale socket file from an earlier run goes
                with contextlib.suppress(FileNotFoundError):
                    if stat.S_ISSOCK(os.stat(path).st_mode):
                        os.remove(path)
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.bind(path)
            except OSError as exc:
                sock.close()
                if exc.errno == errno.EADDRINUSE:
                    raise OSError(errno.EADDRINUSE, f"Address {path!r} is already in use") from None
                raise
        elif sock is None:
            raise ValueError("path was not specified, and no sock specified")
        elif sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
            raise ValueError(f"A UNIX Domain Stream Socket was expected, got {sock!r}")
        sock.setblocking(False)
        server = Server(
            self,
            [sock],
            protocol_factory,
            backlog,
            ssl,
            ssl_handshake_timeout,
            ssl_shutdown_timeout,
        )
        if start_serving:
            server._start_serving()
            await asyncio.sleep(0)
        return server

    def _accept(self, server: Server, listener: socket.socket) -> None:
        """Readable listener: accept up to backlog connections, a transport for each."""
        for _ in range(server._backlog):
            try:
                conn, address = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno not in _ACCEPT_PAUSING:
                    raise
                # Out of descriptors: pause accepting for a while rather than spin on a
                # listener that stays readable; connections wait in the backlog meanwhile.
                self.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": exc,
                        "socket": listener,
                    }
                )
                self.remove_reader(listener)
                self.call_later(ACCEPT_RETRY_DELAY, server._resume_listener, listener)
                return
            conn.setblocking(False)
            try:
                protocol = server._protocol_factory()
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                conn.close()
                self.call_exception_handler(
                    {"message": "Error in protocol factory", "exception": exc, "socket": listener}
                )
                continue
            extra = {"peername": address}
            if server._ssl is None:
                StreamTransport(self, conn, protocol, extra=extra, server=server)
                continue
            handshake = self.create_future()
            over = tls.protocol(
                self,
                protocol,
                server._ssl,
                handshake,
                server_side=True,
                handshake_timeout=server._ssl_handshake_timeout,
                shutdown_timeout=server._ssl_shutdown_timeout,
            )
            StreamTransport(self, conn, over, extra=extra, server=server)
            handshake.add_done_callback(
                functools.partial(self._handshake_done, over._app_transport, listener)
            )

    def _handshake_done(self, transport: Any, listener: socket.socket, done: Any) -> None:
        """An accepted TLS connection whose handshake failed is closed; the error is told
        only in debug mode, as asyncio does (a scanner's bad hello is no server error)."""
        if done.cancelled() or done.exception() is None:
            return
        transport.close()
        if self.get_debug():
            self.call_exception_handler(
                {
                    "message": "Error on transport creation for incoming connection",
                    "exception": done.exception(),
                    "socket": listener,
                }
            )

    # -- pipes --------------------------------------------------------------------------------

    async def connect_read_pipe(self, protocol_factory: Callable[[], Any], pipe: Any) -> tuple:
        """A read transport on a pipe, a pty or a socket (a file object with fileno())."""
        return await self._pipe(PipeReadTransport, protocol_factory, pipe)

    async def connect_write_pipe(self, protocol_factory: Callable[[], Any], pipe: Any) -> tuple:
        """A write transport on a pipe, a pty or a socket (a file object with fileno())."""
        return await self._pipe(PipeWriteTransport, protocol_factory, pipe)

    async def _pipe(self, kind: type, protocol_factory: Callable[[], Any], pipe: Any) -> tuple:
        protocol = protocol_factory()
        waiter = self.create_future()
        transport = kind(self, pipe, protocol, waiter)
        try:
            await waiter
        except BaseException:
            transport.close()
            raise
        return transport, protocol

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

    # -- datagrams --------------------------------------------------------------------------

    async def create_datagram_endpoint(
        self,
        protocol_factory: Callable[[], Any],
        local_addr: Any = None,
        remote_addr: Any = None,
        *,
        family: int = 0,
        proto: int = 0,
        flags: int = 0,
        reuse_port: bool | None = None,
        allow_broadcast: bool | None = None,
        sock: socket.socket | None = None,
    ) -> tuple[Any, Any]:
        """A UDP endpoint: bound to local_addr, connected to remote_addr, or on sock."""
        if sock is not None:
            if sock.type != socket.SOCK_DGRAM:
                raise ValueError(f"A datagram socket was expected, got {sock!r}")
            if (
                local_addr
                or remote_addr
                or family
                or proto
                or flags
                or reuse_port
                or allow_broadcast
            ):
                raise ValueError(
                    "socket modifier keyword arguments can not be used when sock is specified"
                )
            remote = None
        else:
            local = remote = None
            if local_addr is not None:
                local = (
                    await self._resolve(*local_addr[:2], family, socket.SOCK_DGRAM, proto, flags)
                )[0]
                family = local[0]
            if remote_addr is not None:
                remote = (
                    await self._resolve(*remote_addr[:2], family, socket.SOCK_DGRAM, proto, flags)
                )[0]
                family = remote[0]
            if local is None and remote is None:
                if not family:
                    raise ValueError("unexpected address family")
                local = (family, socket.SOCK_DGRAM, proto, "", None)
            sock = socket.socket(family, socket.SOCK_DGRAM, proto)
            try:
                if reuse_port:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                if allow_broadcast:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
                sock.setblocking(False)
                if local is not None and local[4] is not None:
                    sock.bind(local[4])
                if remote is not None:
                    await self.sock_connect(sock, remote[4])
                    remote = remote[4]
            except BaseException:
                sock.close()
                raise
        sock.setblocking(False)
        protocol = protocol_factory()
        waiter = self.create_future()
        transport = DatagramTransport(self, sock, protocol, remote, waiter)
        try:
            await waiter
        except BaseException:
            transport.close()
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
            signal.set_wakeup_fd(-1)
        if self._signal_reader is not None:
            self.remove_reader(self._signal_reader)
            self._signal_reader.close()
            self._signal_writer.close()
            self._signal_reader = None

    # -- what this loop does not provide ----------------------------------------------------

    sendfile = _not_provided("sendfile")

    # -- TLS on an open connection ------------------------------------------------------------

    async def start_tls(
        self,
        transport: Any,
        protocol: Any,
        sslcontext: Any,
        *,
        server_side: bool = False,
        server_hostname: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
    ) -> Any:
        """Upgrade a plain stream transport to TLS in place (STARTTLS): its protocol becomes
        the TLS protocol, whose plaintext transport is returned once the handshake is done."""
        if not isinstance(sslcontext, ssl_module.SSLContext):
            raise TypeError(
                f"sslcontext is expected to be an instance of ssl.SSLContext, got {sslcontext!r}"
            )
        if not isinstance(transport, StreamTransport):
            raise TypeError(f"transport {transport!r} is not supported by start_tls()")
        handshake = self.create_future()
        over = tls.protocol(
            self,
            protocol,
            sslcontext,
            handshake,
            server_side=server_side,
            server_hostname=server_hostname,
            handshake_timeout=ssl_handshake_timeout,
            shutdown_timeout=ssl_shutdown_timeout,
            call_connection_made=False,
        )
        # Paused first, so that no bytes reach the TLS protocol before its connection_made.
        transport.pause_reading()
        if server_side:
            _hand_buffered_hello_to(over, protocol)
        transport.set_protocol(over)
        made = self.call_soon(over.connection_made, transport)
        resumed = self.call_soon(transport.resume_reading)
        try:
            await handshake
        except BaseException:
            transport.close()
            made.cancel()
            resumed.cancel()
            raise
        return over._app_transport


def _hand_buffered_hello_to(over: Any, protocol: Any) -> None:
    """A server's StreamReader may already hold the client's first TLS bytes (its ClientHello
    arrived before ``start_tls``): they belong to the TLS protocol now, so move them to its
    incoming buffer, as asyncio does since 3.14 (gh-142352); left there, the handshake waits
    for bytes that came already and the reader hands TLS records to the application."""
    reader = getattr(protocol, "_stream_reader", None)  # a StreamReaderProtocol's reader
    if isinstance(protocol, asyncio.StreamReaderProtocol) and reader is not None and reader._buffer:
        over._incoming.write(reader._buffer)
        reader._buffer.clear()


# -- the server object ----------------------------------------------------------------------


class Server(asyncio.AbstractServer):
    """What create_server returns: its listening sockets and the connections they accepted."""

    def __init__(
        self,
        loop: AsyncioLoop,
        sockets: list[socket.socket],
        protocol_factory: Callable[[], Any],
        backlog: int,
        ssl: Any = None,
        ssl_handshake_timeout: Any = None,
        ssl_shutdown_timeout: Any = None,
    ) -> None:
        self._loop = loop
        self._sockets: list[socket.socket] | None = sockets  # None once closed
        self._protocol_factory = protocol_factory
        self._backlog = backlog
        self._ssl = ssl  # an SSLContext: every accepted connection speaks TLS (tls.py)
        self._ssl_handshake_timeout = ssl_handshake_timeout
        self._ssl_shutdown_timeout = ssl_shutdown_timeout
        self._serving = False
        self._transports: set[Any] = set()  # accepted connections still open
        self._waiters: list[asyncio.Future] | None = []  # wait_closed() callers; None when done
        self._serving_forever: asyncio.Future | None = None

    def get_loop(self) -> AsyncioLoop:
        return self._loop

    @property
    def sockets(self) -> tuple[Any, ...]:
        # asyncio.trsock.TransportSocket: the one piece of asyncio's machinery reused. It is
        # what asyncio documents server.sockets to be (since 3.8): the socket behind a guard
        # that refuses what would break the loop (settimeout, setblocking(True)). A public
        # module of asyncio, a 100-line wrapper; writing our own would only change its name.
        return tuple(asyncio.trsock.TransportSocket(s) for s in self._sockets or ())

    def is_serving(self) -> bool:
        return self._serving

    def _start_serving(self) -> None:
        if self._serving or self._sockets is None:
            return
        self._serving = True
        for listener in self._sockets:
            listener.listen(self._backlog)
            self._resume_listener(listener)

    def _resume_listener(self, listener: socket.socket) -> None:
        if self._serving:
            self._loop.add_reader(listener, self._loop._accept, self, listener)

    async def start_serving(self) -> None:
        self._start_serving()
        await asyncio.sleep(0)

    async def serve_forever(self) -> None:
        """Serve until cancelled; then close the server and wait for it."""
        if self._serving_forever is not None:
            raise RuntimeError(f"server {self!r} is already being awaited on serve_forever()")
        if self._sockets is None:
            raise RuntimeError(f"server {self!r} is closed")
        self._start_serving()
        self._serving_forever = self._loop.create_future()
        try:
            await self._serving_forever
        except asyncio.CancelledError:
            try:
                self.close()
                await self.wait_closed()
            finally:
                raise
        finally:
            self._serving_forever = None

    def close(self) -> None:
        """Stop listening (the accepted connections live on until they close)."""
        sockets, self._sockets = self._sockets, None
        if sockets is None:
            return
        self._serving = False
        for listener in sockets:
            self._loop.remove_reader(listener)
            listener.close()
        if self._serving_forever is not None and not self._serving_forever.done():
            self._serving_forever.cancel()
        self._maybe_wake_waiters()

    def close_clients(self) -> None:
        for transport in list(self._transports):
            transport.close()

    def abort_clients(self) -> None:
        for transport in list(self._transports):
            transport.abort()

    async def wait_closed(self) -> None:
        """Wait until close() was called and every accepted connection has closed."""
        if self._waiters is None:
            return
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter

    def _attach(self, transport: Any) -> None:
        self._transports.add(transport)

    def _detach(self, transport: Any) -> None:
        self._transports.discard(transport)
        self._maybe_wake_waiters()

    def _maybe_wake_waiters(self) -> None:
        if self._sockets is None and not self._transports and self._waiters is not None:
            waiters, self._waiters = self._waiters, None
            for waiter in waiters:
                _set_result_unless_done(waiter)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} sockets={self.sockets!r}>"


# -- helpers --------------------------------------------------------------------------------


def _stop_loop_of(future: asyncio.Future) -> None:
    if not future.cancelled() and isinstance(future.exception(), SystemExit | KeyboardInterrupt):
        return  # it is escaping run_forever already
    future.get_loop().stop()


def _set_result_unless_done(future: asyncio.Future) -> None:
    if not future.done():
        future.set_result(None)


def _raise_blocking_once(check: Callable[[], None]) -> Callable[[], None]:
    """The first call says "wait" (the connect is in progress); later calls run check()."""
    first = itertools.count()

    def call() -> None:
        if next(first) == 0:
            raise BlockingIOError
        check()

    return call


def _hosts(host: Any) -> list[Any]:
    """create_server's host: None or "" (every interface), one name, or a sequence of names."""
    if host in (None, ""):
        return [None]
    if isinstance(host, str) or not isinstance(host, collections.abc.Iterable):
        return [host]
    return list(host)


def _check_socket(sock: socket.socket) -> None:
    if sock.gettimeout() != 0:
        raise ValueError("the socket must be non-blocking")


def _is_numeric(family: int, host: Any) -> bool:
    try:
        socket.inet_pton(family, host)
        return True
    except (OSError, TypeError, ValueError):
        return False


def _check_signal(sig: Any) -> None:
    if not isinstance(sig, int):
        raise TypeError(f"sig must be an int, not {sig!r}")
    if sig not in signal.valid_signals():
        raise ValueError(f"invalid signal number {sig}")


def _ignore_signal(signum: int, frame: Any) -> None:
    """The Python-level handler of a loop's signals: set_wakeup_fd already told the loop."""


def _connect_error(errors: list[OSError], all_errors: bool) -> BaseException:
    if all_errors:
        return ExceptionGroup("create_connection failed", errors)
    if len(errors) == 1 or len({str(e) for e in errors}) == 1:
        return errors[0]
    return OSError(f"Multiple exceptions: {', '.join(map(str, errors))}")
