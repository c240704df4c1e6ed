"""Transports: asyncio's stream and datagram transports, written on add_reader/add_writer.

A transport is a socket driven by readiness callbacks on behalf of a *protocol* object: the
loop calls ``_read_ready`` when the socket is readable and hands the bytes to
``protocol.data_received``; ``write`` tries ``send`` at once and keeps what the kernel did not
take, flushed by ``_write_ready`` when the socket becomes writable. This is the callbacks style
of the lab's echo server (``workloads/echo/callbacks.py``) given asyncio's names, so that
asyncio's streams, uvicorn's HTTP protocols and any ``asyncio.Protocol`` run on it unchanged.

Not asyncio's ``_SelectorSocketTransport``: the same contract (its docs, not its code), in
about a third of the lines, without sendfile or Windows. What follows asyncio on purpose: the
order of events (``connection_made``, reading, the waiter; ``connection_lost`` always
scheduled), the flow control marks, and the messages of errors and log lines, in CPython's
wording (see ``LICENSE-PSF`` in this folder).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import stat
import warnings
from typing import Any

logger = logging.getLogger("loops.callbacks.dropin")

MAX_READ = 256 * 1024  # bytes read per readiness event (asyncio's max_size)
HIGH_WATER = 64 * 1024  # default write-buffer high-water mark (asyncio's)
_CONNECTION_LOST_WARN_AFTER = 5  # writes after the connection died, before a warning
_WOULD_BLOCK = (BlockingIOError, InterruptedError)  # the kernel says "not now": wait, try again
READ_FAILED = "Fatal read error on socket transport"  # asyncio's messages, on purpose
WRITE_FAILED = "Fatal write error on socket transport"
PIPE_WRITE_FAILED = "Fatal write error on pipe transport"


class _Outcome:
    """What :meth:`_Transport._attempt` returns instead of a result; one name each."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


AGAIN = _Outcome("AGAIN")  # a socket call would block: wait for readiness, then call again
FAILED = _Outcome("FAILED")  # the call raised: the transport is closing with the error
REPORTED = _Outcome("REPORTED")  # a datagram's OSError went to protocol.error_received


def _socket_extra(sock: socket.socket, extra: dict | None) -> dict:
    """get_extra_info's entries for a socket: the socket, its own and its peer's address."""
    info = {"socket": asyncio.trsock.TransportSocket(sock)}  # see servers.Server.sockets
    for key, call in (("sockname", sock.getsockname), ("peername", sock.getpeername)):
        try:
            info[key] = call()
        except OSError:
            info[key] = None
    return info | (extra or {})


class _Transport(asyncio.BaseTransport):
    """What both transports share: extra info, closing, errors and write flow control.

    Shared by ``StreamTransport`` (TCP and Unix sockets), ``PipeReadTransport`` and
    ``PipeWriteTransport`` (pipes and ptys) and ``DatagramTransport`` (UDP, ``datagrams.py``);
    TLS is a protocol on top of a ``StreamTransport`` (``tls.py``). Every socket or protocol
    call goes through one error policy, :meth:`_attempt`.

    Flow control, both ways: ``pause_reading`` removes the reader and ``resume_reading`` adds
    it back (a protocol with a full buffer, asyncio's ``StreamReader`` for one, stops the bytes
    at the kernel); past the high-water mark of buffered bytes the transport calls
    ``protocol.pause_writing()``, and ``resume_writing()`` once the buffer drains below the low
    mark (``StreamWriter.drain`` waits on exactly this). Closing: ``close`` flushes the buffer
    first, then calls ``connection_lost(None)``; ``abort`` drops the buffer; an error calls
    ``connection_lost(exc)``. ``connection_lost`` is always scheduled with ``call_soon``, never
    called inside the caller's stack, as asyncio does. The one piece of asyncio reused is the public
    ``asyncio.trsock.TransportSocket`` (see ``servers.Server.sockets``).
    """

    def __init__(self, loop: Any, sock: Any, protocol: Any, extra: dict) -> None:
        self._loop = loop
        self._sock = sock  # a socket, or a pipe's file object (anything with fileno and close)
        self._protocol = protocol
        self._extra = extra
        self._closing = False  # close() or abort() was called, or an error happened
        self._conn_lost = 0  # > 0 once connection_lost is scheduled
        self._protocol_paused = False  # we called pause_writing and not yet resume_writing
        self._high_water, self._low_water = HIGH_WATER, HIGH_WATER // 4

    # -- what a protocol sees ----------------------------------------------------------------

    # get_extra_info is asyncio.BaseTransport's, reading self._extra, as asyncio's own
    # transports inherit it: a test that patches the base's method reaches these transports too.

    def get_protocol(self) -> Any:
        return self._protocol

    def set_protocol(self, protocol: Any) -> None:
        self._protocol = protocol

    def is_closing(self) -> bool:
        return self._closing

    def close(self) -> None:
        """Stop reading; flush what is buffered, then connection_lost(None)."""
        if self._closing:
            return
        self._closing = True
        self._loop.remove_reader(self._sock)
        if not self._buffer_size():
            self._conn_lost += 1
            self._loop.remove_writer(self._sock)
            self._loop.call_soon(self._call_connection_lost, None)

    def abort(self) -> None:
        """Close at once, dropping whatever is buffered."""
        self._force_close(None)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return self._low_water, self._high_water

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = HIGH_WATER if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self._high_water, self._low_water = high, low
        self._maybe_pause_protocol()

    def get_write_buffer_size(self) -> int:
        return self._buffer_size()

    # -- flow control towards the protocol ---------------------------------------------------

    def _maybe_pause_protocol(self) -> None:
        if self._buffer_size() <= self._high_water or self._protocol_paused:
            return
        self._protocol_paused = True
        self._protocol_call("pause_writing")

    def _maybe_resume_protocol(self) -> None:
        if self._protocol_paused and self._buffer_size() <= self._low_water:
            self._protocol_paused = False
            self._protocol_call("resume_writing")

    def _protocol_call(self, name: str) -> None:
        try:
            getattr(self._protocol, name)()
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._loop.call_exception_handler(
                {
                    "message": f"protocol.{name}() failed",
                    "exception": exc,
                    "transport": self,
                    "protocol": self._protocol,
                }
            )

    # -- the error policy, in one place --------------------------------------------------------

    _PEER_ERRORS: tuple[type[BaseException], ...] = ()  # a datagram transport's: OSError

    def _attempt(self, message: str, call: Any, *args: Any, io: bool = False) -> Any:
        """call(*args), under the one error policy every transport call follows (asyncio's):
        SystemExit and KeyboardInterrupt escape; any other error closes the transport with
        ``message`` (``_fatal_error``) and gives :data:`FAILED`. A socket or pipe call
        (``io=True``) that would block gives :data:`AGAIN`, and on a datagram transport an
        OSError (an ICMP refusal: the socket lives) goes to ``protocol.error_received``
        and gives :data:`REPORTED`. Otherwise the call's result."""
        would_block = _WOULD_BLOCK if io else ()  # "()": an except clause that matches nothing
        peer_errors = self._PEER_ERRORS if io else ()
        try:
            return call(*args)
        except would_block:
            return AGAIN
        except peer_errors as exc:
            self._protocol.error_received(exc)
            return REPORTED
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            self._fatal_error(exc, message)
            return FAILED

    # -- endings -----------------------------------------------------------------------------

    def _fatal_error(self, exc: BaseException, message: str) -> None:
        # An OSError is the peer's doing (a reset, a refused datagram): not worth a report.
        if not isinstance(exc, OSError):
            self._loop.call_exception_handler(
                {
                    "message": message,
                    "exception": exc,
                    "transport": self,
                    "protocol": self._protocol,
                }
            )
        self._force_close(exc)

    def _force_close(self, exc: BaseException | None) -> None:
        if self._conn_lost:
            return
        self._clear_buffer()
        self._loop.remove_writer(self._sock)
        if not self._closing:
            self._closing = True
            self._loop.remove_reader(self._sock)
        self._conn_lost += 1
        self._loop.call_soon(self._call_connection_lost, exc)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        waiter = getattr(self, "_sendfile", None)
        if waiter is not None and not waiter.done():
            waiter.set_exception(ConnectionError("Connection is closed by peer"))
        try:
            self._protocol.connection_lost(exc)
        finally:
            self._sock.close()
            self._protocol = None
            server, self._server = getattr(self, "_server", None), None
            if server is not None:
                server._detach(self)

    def __del__(self) -> None:
        # Dropped while open: say so (asyncio's ResourceWarning) and free the socket or pipe.
        if _fileno(getattr(self, "_sock", None)) != -1:
            warnings.warn(
                f"unclosed transport {self!r}", ResourceWarning, stacklevel=2, source=self
            )
            self._sock.close()

    def __repr__(self) -> str:
        fd = _fileno(self._sock)
        state = "closed" if fd < 0 else "closing" if self._closing else "open"
        return f"<{type(self).__name__} fd={fd} {state}>"


class StreamTransport(_Transport, asyncio.Transport):
    """A connected TCP (or Unix) socket: asyncio.Transport's whole API."""

    def __init__(
        self,
        loop: Any,
        sock: socket.socket,
        protocol: Any,
        waiter: Any = None,
        extra: dict | None = None,
        server: Any = None,
    ) -> None:
        super().__init__(loop, sock, protocol, _socket_extra(sock, extra))
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            # Small writes go out at once: request/response protocols would wait 40 ms otherwise.
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._buffer = bytearray()  # bytes written but not yet taken by the kernel
        self._eof = False  # write_eof() was called
        self._paused = False  # pause_reading() was called
        self._sendfile: Any = None  # while loop.sendfile owns the socket: done when flushed
        self._server = server
        if server is not None:
            server._attach(self)
        # The order asyncio promises: connection_made, then reading, then the waiter.
        loop.call_soon(protocol.connection_made, self)
        loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(_set_result_unless_done, waiter)
        self._buffered = hasattr(protocol, "get_buffer")  # an asyncio.BufferedProtocol

    def set_protocol(self, protocol: Any) -> None:
        super().set_protocol(protocol)
        self._buffered = hasattr(protocol, "get_buffer")  # start_tls hands in a BufferedProtocol

    def _start_reading(self) -> None:
        if not self._closing and not self._paused:
            self._loop.add_reader(self._sock, self._read_ready)

    # -- reading -----------------------------------------------------------------------------

    def _read_ready(self) -> None:
        if self._buffered:
            return self._read_into_buffer()
        data = self._attempt(READ_FAILED, self._sock.recv, MAX_READ, io=True)
        if data is AGAIN or data is FAILED:
            return
        if not data:
            return self._read_eof()
        self._attempt(
            "Fatal error: protocol.data_received() call failed.", self._protocol.data_received, data
        )

    def _read_into_buffer(self) -> None:
        buffer = self._attempt(
            "Fatal error: protocol.get_buffer() call failed.", _get_buffer, self._protocol
        )
        if buffer is FAILED:
            return
        n = self._attempt(READ_FAILED, self._sock.recv_into, buffer, io=True)
        if n is AGAIN or n is FAILED:
            return
        if not n:
            return self._read_eof()
        self._attempt(
            "Fatal error: protocol.buffer_updated() call failed.", self._protocol.buffer_updated, n
        )

    def _read_eof(self) -> None:
        self._loop.remove_reader(self._sock)
        keep_open = self._attempt(
            "Fatal error: protocol.eof_received() call failed.", self._protocol.eof_received
        )
        if not keep_open:  # FAILED is truthy: the error already closes the transport
            self.close()

    def pause_reading(self) -> None:
        if not self._closing and not self._paused:
            self._paused = True
            self._loop.remove_reader(self._sock)

    def resume_reading(self) -> None:
        if not self._closing and self._paused:
            self._paused = False
            self._loop.add_reader(self._sock, self._read_ready)

    def is_reading(self) -> bool:
        return not self._paused and not self._closing

    # -- writing -----------------------------------------------------------------------------

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Send what the kernel takes now; buffer the rest and watch for writability."""
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self._eof:
            raise RuntimeError("Cannot call write() after write_eof()")
        if self._sendfile is not None:
            raise RuntimeError("unable to write; sendfile is in progress")
        if not data:
            return
        if self._conn_lost:
            if self._conn_lost >= _CONNECTION_LOST_WARN_AFTER:
                logger.warning("socket.send() raised exception.")
            self._conn_lost += 1
            return
        if not self._buffer:
            sent = self._attempt(WRITE_FAILED, self._sock.send, data, io=True)
            if sent is FAILED:
                return
            if sent is AGAIN:
                sent = 0
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
            self._loop.add_writer(self._sock, self._write_ready)
        self._buffer += data
        self._maybe_pause_protocol()

    def writelines(self, lines: Any) -> None:
        self.write(b"".join(lines))

    def _write_ready(self) -> None:
        if self._conn_lost:
            return
        sent = self._attempt(WRITE_FAILED, self._sock.send, self._buffer, io=True)
        if sent is AGAIN or sent is FAILED:  # _fatal_error drops the buffer and the writer
            return
        del self._buffer[:sent]
        self._maybe_resume_protocol()  # may write again, in which case the buffer refills
        if self._buffer:
            return
        self._loop.remove_writer(self._sock)
        if self._sendfile is not None:
            _set_result_unless_done(self._sendfile)
        if self._closing:
            self._conn_lost += 1
            self._call_connection_lost(None)
        elif self._eof:
            self._sock.shutdown(socket.SHUT_WR)

    def write_eof(self) -> None:
        if self._closing or self._eof:
            return
        self._eof = True
        if not self._buffer:
            self._sock.shutdown(socket.SHUT_WR)

    # -- loop.sendfile's hold on the socket (connections.py) -----------------------------------

    async def _flushed(self) -> None:
        """Wait until every written byte is out; write() is refused from now until
        _sendfile_done(), so that the file's bytes follow them on the wire."""
        if self._sendfile is not None:
            raise RuntimeError("sendfile is already in progress on this transport")
        self._sendfile = self._loop.create_future()
        if not self._buffer:
            self._sendfile.set_result(None)
        await self._sendfile

    def _sendfile_done(self) -> None:
        self._sendfile = None

    def can_write_eof(self) -> bool:
        return True

    def _buffer_size(self) -> int:
        return len(self._buffer)

    def _clear_buffer(self) -> None:
        self._buffer.clear()


class PipeReadTransport(_Transport, asyncio.ReadTransport):
    """The read end of a pipe (or a pty, or a socket): connect_read_pipe's transport."""

    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None) -> None:
        super().__init__(loop, pipe, protocol, {"pipe": pipe})
        self._fd = _pipe_fd(pipe)
        self._paused = False
        loop.call_soon(protocol.connection_made, self)
        loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(_set_result_unless_done, waiter)

    _start_reading = StreamTransport._start_reading
    pause_reading = StreamTransport.pause_reading
    resume_reading = StreamTransport.resume_reading
    is_reading = StreamTransport.is_reading

    def _read_ready(self) -> None:
        try:
            data = os.read(self._fd, MAX_READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # EIO: a pty whose other side closed
            return self._fatal_error(exc, "Fatal read error on pipe transport")
        if data:
            self._protocol.data_received(data)
            return
        self._closing = True  # EOF: the writer closed; a pipe ends there
        self._loop.remove_reader(self._fd)
        self._conn_lost += 1
        self._loop.call_soon(self._protocol.eof_received)
        self._loop.call_soon(self._call_connection_lost, None)

    def _buffer_size(self) -> int:
        return 0

    def _clear_buffer(self) -> None:
        pass


class PipeWriteTransport(_Transport, asyncio.WriteTransport):
    """The write end of a pipe (or a pty, or a socket): connect_write_pipe's transport.

    A pipe's write end becomes *readable* when its read end closes: watching that is how the
    transport learns the reader went away (asyncio's trick), with nothing to read."""

    def __init__(self, loop: Any, pipe: Any, protocol: Any, waiter: Any = None) -> None:
        super().__init__(loop, pipe, protocol, {"pipe": pipe})
        self._fd = _pipe_fd(pipe)
        self._buffer = bytearray()
        loop.call_soon(protocol.connection_made, self)
        mode = os.fstat(self._fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            loop.call_soon(loop.add_reader, self._fd, self._reader_gone)
        if waiter is not None:
            loop.call_soon(_set_result_unless_done, waiter)

    def _reader_gone(self) -> None:
        self._force_close(BrokenPipeError() if self._buffer else None)

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if not data:
            return
        if self._conn_lost or self._closing:
            self._conn_lost += 1
            return
        if not self._buffer:
            sent = self._attempt(PIPE_WRITE_FAILED, os.write, self._fd, data, io=True)
            if sent is FAILED:
                return
            if sent is AGAIN:
                sent = 0
            if sent == len(data):
                return
            data = memoryview(data)[sent:]
            self._loop.add_writer(self._fd, self._write_ready)
        self._buffer += data
        self._maybe_pause_protocol()

    def _write_ready(self) -> None:
        sent = self._attempt(PIPE_WRITE_FAILED, os.write, self._fd, self._buffer, io=True)
        if sent is AGAIN or sent is FAILED:  # _fatal_error drops the buffer
            return
        del self._buffer[:sent]
        self._maybe_resume_protocol()
        if self._buffer:
            return
        self._loop.remove_writer(self._fd)
        if self._closing:
            self._loop.remove_reader(self._fd)
            self._conn_lost += 1
            self._call_connection_lost(None)

    def can_write_eof(self) -> bool:
        return True

    def write_eof(self) -> None:
        """A pipe has no half-close: EOF is closing it, once the buffer is out."""
        if self._closing:
            return
        self._closing = True
        if not self._buffer:
            self._loop.remove_reader(self._fd)
            self._conn_lost += 1
            self._loop.call_soon(self._call_connection_lost, None)

    def close(self) -> None:
        self.write_eof()

    def _buffer_size(self) -> int:
        return len(self._buffer)

    def _clear_buffer(self) -> None:
        self._buffer.clear()

    def _force_close(self, exc: BaseException | None) -> None:
        self._loop.remove_reader(self._fd)  # the reader-gone watch, which _Transport leaves
        super()._force_close(exc)


def _get_buffer(protocol: Any) -> Any:
    """A BufferedProtocol's buffer for the next read; an empty one is the protocol's error."""
    buffer = protocol.get_buffer(-1)
    if not len(buffer):
        raise RuntimeError("get_buffer() returned an empty buffer")
    return buffer


def _pipe_fd(pipe: Any) -> int:
    """The pipe's fd, made non-blocking; ValueError for a regular file (always "ready")."""
    fd = pipe.fileno()
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
        raise ValueError("Pipe transport is only for pipes, sockets and character devices")
    os.set_blocking(fd, False)
    return fd


def _fileno(fileobj: Any) -> int:
    """fileobj's fd, or -1 if it is None or closed (a closed file raises, a socket says -1)."""
    try:
        return fileobj.fileno()
    except (AttributeError, ValueError, OSError):
        return -1


async def opened(transport: Any, waiter: Any) -> None:
    """Wait until a new transport has called connection_made (its waiter is done); if the
    wait fails or is cancelled, the transport is closed, not left half-made."""
    try:
        await waiter
    except BaseException:
        transport.close()
        raise


def _set_result_unless_done(future: Any) -> None:
    if not future.done():
        future.set_result(None)
