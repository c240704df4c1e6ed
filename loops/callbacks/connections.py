"""Connections: the drop-in's stream connections, pipes, STARTTLS and ``loop.sendfile``.

``create_connection`` (and its Unix, accepted-socket and pipe siblings) makes a connected
socket, hands it to a ``StreamTransport`` (``transports.py``) with the protocol, and returns
both once ``connection_made`` has run; with ``ssl=``, the transport's protocol is asyncio's
``SSLProtocol`` and the application gets its plaintext transport (``tls.py``).

``sendfile(transport, file)``: on a plain ``StreamTransport``, once its write buffer is empty
(``StreamTransport._flushed``), the socket is handed to ``sock_sendfile`` (``os.sendfile``:
the kernel copies the file), with ``write`` refused meanwhile; any other transport that says it
can (TLS: asyncio's own ``_sendfile_compatible`` marker on the SSL transport) gets the file
read in chunks and written, waiting at the high-water mark.

What follows asyncio on purpose: the argument rules and their error messages (CPython's
``base_events`` wording, so that CPython's tests and users' ``except`` clauses see the same
thing; see ``LICENSE-PSF`` in this folder), and the order of events (``connection_made``, then
reading, then the caller resumes). Not done: happy eyeballs (the addresses are tried in turn;
its parameters are refused unless None).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import socket
import ssl as ssl_module
from asyncio import staggered
from collections.abc import Callable
from typing import Any

from loops.callbacks import tls
from loops.callbacks.transports import (
    PipeReadTransport,
    PipeWriteTransport,
    StreamTransport,
    opened,
)

SENDFILE_CHUNK = 16 * 1024  # bytes per write when sendfile cannot use os.sendfile (asyncio's)


class Connections:
    """Connections, pipes, STARTTLS and sendfile of asyncio's event loop; mixed into
    ``AsyncioLoop`` (``asyncio_loop.py``)."""

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
        ssl (a context, or True for the default one), TLS over it (``tls.py``).

        Happy eyeballs (RFC 8305) as asyncio does it: ``interleave`` reorders the addresses
        so the families alternate (``interleave`` of the first family first; 1 when only a
        delay is given), and ``happy_eyeballs_delay`` starts the next attempt that long after
        the last unless it has failed sooner, the first to connect winning
        (``asyncio.staggered.staggered_race``, which cancels the rest). Without a delay the
        addresses are tried one after the other."""
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
            if happy_eyeballs_delay is not None and interleave is None:
                interleave = 1  # asyncio's default once a delay is given
            if interleave:
                infos = _interleave(infos, interleave)
            attempts = [
                functools.partial(self._connect_one, family_, type_, proto_, address, local_infos)
                for family_, type_, proto_, _, address in infos
            ]
            errors: list[OSError] = []
            if happy_eyeballs_delay is None:
                for attempt in attempts:
                    try:
                        sock = await attempt()
                        break
                    except OSError as exc:
                        errors.append(exc)
            else:
                sock, _, raised = await staggered.staggered_race(attempts, happy_eyeballs_delay)
                errors = [exc for exc in raised if isinstance(exc, OSError)]
                del raised  # it holds the errors too: a raised one must not keep it alive
            if sock is None:
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
        await opened(transport, waiter)
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
        await opened(transport, waiter)
        return transport, protocol

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
        # asyncio marks the transports start_tls takes with _start_tls_compatible; its TLS
        # transport is one, so TLS runs inside TLS (a client through an HTTPS proxy).
        if not (
            isinstance(transport, StreamTransport)
            or getattr(transport, "_start_tls_compatible", False)
        ):
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

    # -- sendfile ---------------------------------------------------------------------------------

    async def sendfile(
        self,
        transport: Any,
        file: Any,
        offset: int = 0,
        count: int | None = None,
        *,
        fallback: bool = True,
    ) -> int:
        """Send file[offset:offset+count] on transport: ``os.sendfile`` on a plain stream
        transport once its buffer is empty, else (TLS) the file read and written in chunks."""
        if transport.is_closing():
            raise RuntimeError("Transport is closing")
        mode = _sendfile_mode(transport)
        if mode == "UNSUPPORTED":
            raise RuntimeError(f"sendfile is not supported for transport {transport!r}")
        if mode == "TRY_NATIVE":
            try:
                return await self._sendfile_native(transport, file, offset, count)
            except asyncio.SendfileNotAvailableError:
                if not fallback:
                    raise
        if not fallback:
            raise RuntimeError(
                f"fallback is disabled and native sendfile is not supported for transport "
                f"{transport!r}"
            )
        return await self._sendfile_fallback(transport, file, offset, count)

    async def _sendfile_native(
        self, transport: StreamTransport, file: Any, offset: int, count: int | None
    ) -> int:
        """The kernel copies: the transport's buffer is flushed first and write() refused
        until the file is out, so the bytes keep their order on the wire. Reading is paused
        meanwhile (as asyncio does): a peer's EOF read now would close the transport under
        the sendfile, which would then wait on a socket nobody watches."""
        reading = transport.is_reading()
        transport.pause_reading()
        try:
            await transport._flushed()
            return await self.sock_sendfile(transport._sock, file, offset, count, fallback=False)
        finally:
            transport._sendfile_done()
            if reading:
                transport.resume_reading()

    async def _sendfile_fallback(
        self, transport: Any, file: Any, offset: int, count: int | None
    ) -> int:
        """The file in chunks (``SocketCalls._send_file_in_chunks``), each written once the
        transport is below its high-water mark."""
        flow = _FlowWatch(self, transport)

        async def send(data: memoryview) -> None:
            await flow.writable()
            transport.write(data)

        try:
            return await self._send_file_in_chunks(file, offset, count, SENDFILE_CHUNK, send)
        finally:
            await flow.restore()


class _FlowWatch(asyncio.Protocol):
    """Stands in for a transport's protocol while sendfile writes: it learns the transport's
    pause_writing/resume_writing (so the loop waits instead of buffering the whole file) and
    keeps the protocol's own flow state for it; restored, it hands the transport back."""

    def __init__(self, loop: Any, transport: Any) -> None:
        self._loop = loop
        self._transport = transport
        self._protocol = transport.get_protocol()
        self._reading = transport.is_reading()
        # Paused already: the transport's protocol heard pause_writing and will hear its
        # resume_writing from us (asyncio's _FlowControlMixin flag, on both transports).
        self._paused = self._owe_resume = bool(getattr(transport, "_protocol_paused", False))
        self._resumed: asyncio.Future | None = None
        transport.pause_reading()
        transport.set_protocol(self)

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)

    def data_received(self, data: bytes) -> None:
        raise RuntimeError("Invalid state: reading should be paused")

    def connection_lost(self, exc: BaseException | None) -> None:
        self._protocol.connection_lost(exc)
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_exception(ConnectionError("Connection closed by peer"))

    async def writable(self) -> None:
        if self._transport.is_closing():
            raise ConnectionError("Connection closed by peer")
        while self._paused:
            self._resumed = self._loop.create_future()
            await self._resumed

    async def restore(self) -> None:
        self._transport.set_protocol(self._protocol)
        if self._owe_resume:
            self._protocol.resume_writing()
        if self._reading and not self._transport.is_closing():
            self._transport.resume_reading()


def _sendfile_mode(transport: Any) -> str:
    """How sendfile may use transport: TRY_NATIVE (our plain stream transport), FALLBACK (one
    that declares it, as asyncio's SSL transport does with ``_sendfile_compatible``), or
    UNSUPPORTED (datagrams, pipes, any other transport)."""
    if type(transport) is StreamTransport:
        return "TRY_NATIVE"
    declared = getattr(transport, "_sendfile_compatible", None)  # an enum of asyncio.constants
    return getattr(declared, "name", "UNSUPPORTED")


def _interleave(infos: list, first_family_count: int) -> list:
    """The addresses reordered so their families alternate, ``first_family_count`` of the
    first family first (RFC 8305 section 4; asyncio's ``_interleave_addrinfos`` in
    base_events.py orders them the same way)."""
    by_family: dict[int, list] = {}
    for info in infos:
        by_family.setdefault(info[0], []).append(info)
    groups = list(by_family.values())
    ordered = groups[0][: first_family_count - 1] if groups else []
    if groups:
        groups[0] = groups[0][first_family_count - 1 :]
    ordered += [info for info in itertools.chain(*itertools.zip_longest(*groups)) if info]
    return ordered


def _hand_buffered_hello_to(over: Any, protocol: Any) -> None:
    """A server's StreamReader may already hold the client's first TLS bytes (its ClientHello
    arrived before ``start_tls``): they belong to the TLS protocol now, so move them to its
    incoming buffer, as asyncio does since 3.14 (gh-142352); left there, the handshake waits
    for bytes that came already and the reader hands TLS records to the application."""
    reader = getattr(protocol, "_stream_reader", None)  # a StreamReaderProtocol's reader
    if isinstance(protocol, asyncio.StreamReaderProtocol) and reader is not None and reader._buffer:
        over._incoming.write(reader._buffer)
        reader._buffer.clear()


def _connect_error(errors: list[OSError], all_errors: bool) -> BaseException:
    if all_errors:
        return ExceptionGroup("create_connection failed", errors)
    if len(errors) == 1 or len({str(e) for e in errors}) == 1:
        return errors[0]
    return OSError(f"Multiple exceptions: {', '.join(map(str, errors))}")
