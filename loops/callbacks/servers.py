"""Servers: ``create_server``, ``create_unix_server``, and the :class:`Server` they return,
with its accept path.

A server is listening sockets watched for readability; each readable event accepts up to
``backlog`` connections (``Server._accept``) and gives each a ``StreamTransport``
(``transports.py``) with a protocol from the factory, or, with ``ssl=``, asyncio's
``SSLProtocol`` over it (``tls.py``). The server counts the connections it accepted so that
``wait_closed`` returns when the last one has closed. Out of file descriptors, accepting pauses
for ``ACCEPT_RETRY_DELAY`` instead of spinning on a listener that stays readable.

What follows asyncio on purpose: the arguments, their rules and error messages (CPython's
``base_events`` and ``unix_events`` wording, so that CPython's tests and users' ``except``
clauses see the same thing; see ``LICENSE-PSF`` in this folder), ``server.sockets`` as
``asyncio.trsock.TransportSocket``, ``cleanup_socket`` (3.13's: the socket file goes on close,
on every Python here), and a TLS handshake failure told only in debug mode.
"""

from __future__ import annotations

import asyncio
import collections.abc
import contextlib
import errno
import functools
import os
import socket
import stat
from collections.abc import Callable
from typing import Any

from loops.callbacks import tls
from loops.callbacks.transports import StreamTransport, _set_result_unless_done

ACCEPT_RETRY_DELAY = 1.0  # out of fds: stop accepting this long, instead of spinning
_ACCEPT_PAUSING = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class Servers:
    """create_server and create_unix_server of asyncio's event loop; mixed into
    ``AsyncioLoop`` (``asyncio_loop.py``)."""

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
            if not _abstract(path):  # a stale socket file from an earlier run goes
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
        if cleanup_socket:
            server._remove_on_close(sock)
        if start_serving:
            server._start_serving()
            await asyncio.sleep(0)
        return server


# -- the server object ----------------------------------------------------------------------


class Server(asyncio.AbstractServer):
    """What create_server returns: its listening sockets and the connections they accepted."""

    def __init__(
        self,
        loop: Any,
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
        # An SSLContext: every accepted connection speaks TLS (tls.py). Named as asyncio.Server
        # names it, since code beyond asyncio reads it (websockets' test helpers do).
        self._ssl_context = ssl
        self._ssl_handshake_timeout = ssl_handshake_timeout
        self._ssl_shutdown_timeout = ssl_shutdown_timeout
        self._serving = False
        self._transports: set[Any] = set()  # accepted connections still open
        self._waiters: list[asyncio.Future] | None = []  # wait_closed() callers; None when done
        self._serving_forever: asyncio.Future | None = None
        self._socket_files: dict[socket.socket, tuple[Any, int]] = {}  # unlinked on close

    def get_loop(self) -> Any:
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
            self._loop.add_reader(listener, self._accept, listener)

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
            self._unlink_socket_file(listener)
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

    # -- Unix socket files ---------------------------------------------------------------------

    def _remove_on_close(self, listener: socket.socket) -> None:
        """create_unix_server's cleanup_socket: the socket's file goes when the server closes,
        if it is still the one bound (same inode); an abstract socket has no file."""
        path = listener.getsockname()
        if path and not _abstract(path):
            with contextlib.suppress(OSError):
                self._socket_files[listener] = (path, os.stat(path).st_ino)

    def _unlink_socket_file(self, listener: socket.socket) -> None:
        path, inode = self._socket_files.pop(listener, (None, None))
        if path is None:
            return
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:
                os.unlink(path)

    # -- the accept path -------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        """Readable listener: accept up to backlog connections, a transport for each."""
        loop = self._loop
        for _ in range(self._backlog):
            try:
                conn, address = listener.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                return
            except OSError as exc:
                if exc.errno not in _ACCEPT_PAUSING:
                    raise
                # Out of descriptors: pause accepting for a while rather than spin on a
                # listener that stays readable; connections wait in the backlog meanwhile.
                loop.call_exception_handler(
                    {
                        "message": "socket.accept() out of system resource",
                        "exception": exc,
                        "socket": listener,
                    }
                )
                loop.remove_reader(listener)
                loop.call_later(ACCEPT_RETRY_DELAY, self._resume_listener, listener)
                return
            conn.setblocking(False)
            try:
                protocol = self._protocol_factory()
            except (SystemExit, KeyboardInterrupt):
                raise
            except BaseException as exc:
                conn.close()
                loop.call_exception_handler(
                    {"message": "Error in protocol factory", "exception": exc, "socket": listener}
                )
                continue
            extra = {"peername": address}
            if self._ssl_context is None:
                StreamTransport(loop, conn, protocol, extra=extra, server=self)
                continue
            handshake = loop.create_future()
            over = tls.protocol(
                loop,
                protocol,
                self._ssl_context,
                handshake,
                server_side=True,
                handshake_timeout=self._ssl_handshake_timeout,
                shutdown_timeout=self._ssl_shutdown_timeout,
            )
            StreamTransport(loop, conn, over, extra=extra, server=self)
            handshake.add_done_callback(
                functools.partial(self._handshake_done, over._app_transport, listener)
            )

    def _handshake_done(self, transport: Any, listener: socket.socket, done: Any) -> None:
        """An accepted TLS connection whose handshake failed is closed; the error is told
        only in debug mode, as asyncio does (a scanner's bad hello is no server error)."""
        if done.cancelled() or done.exception() is None:
            return
        transport.close()
        if self._loop.get_debug():
            self._loop.call_exception_handler(
                {
                    "message": "Error on transport creation for incoming connection",
                    "exception": done.exception(),
                    "socket": listener,
                }
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} sockets={self.sockets!r}>"


def _hosts(host: Any) -> list[Any]:
    """create_server's host: None or "" (every interface), one name, or a sequence of names."""
    if host in (None, ""):
        return [None]
    if isinstance(host, str) or not isinstance(host, collections.abc.Iterable):
        return [host]
    return list(host)


def _abstract(path: str | bytes) -> bool:
    """A Linux abstract socket's address starts with a NUL (a str "\\0..." or bytes b"\\0...",
    whose first item is the integer 0): no file to stat, remove or clean up."""
    return path[0] in (0, "\0")
