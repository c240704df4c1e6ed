"""The drop-in's ``loop.sock_*`` coroutines: socket calls that lose nothing when cancelled.

The rule, for every call here: **the socket is called by the task itself, after it resumes;
the loop's readiness callback only says "ready"**, so whatever cancels the wait interrupts a
task that has not touched the socket: the bytes, the datagram, the pending connection stay in
the kernel for the next call. Why not asyncio's way (its callback calls ``recv`` itself) is
argued on :class:`SocketCalls`; what the calls that progress in steps keep when cancelled, on
``sock_sendall`` and ``sock_connect``.

Argument checks and messages follow asyncio's on purpose (``sock_sendfile``'s are CPython's
``_check_sendfile_params`` word for word, so that CPython's own tests and users' ``except``
clauses see the same thing); see ``LICENSE-PSF`` in this folder.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from loops.callbacks.handles import Handle
from loops.callbacks.readiness import READ, WRITE
from loops.callbacks.transports import _set_result_unless_done

_WOULD_BLOCK = (BlockingIOError, InterruptedError)
SENDFILE_FALLBACK_CHUNK = 256 * 1024  # bytes read from the file per sock_sendall, no sendfile
_SENDFILE_UNAVAILABLE = {errno.ENOTSOCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS}


class SocketCalls:
    """The ``sock_*`` coroutines of asyncio's event loop, for a loop with the reactor's
    ``_readiness``; mixed into ``AsyncioLoop`` (``asyncio_loop.py``).

    A call is tried at once; on ``BlockingIOError`` the task waits on a future that the fd's
    reader (or writer) callback completes with ``None``, and then tries again (:meth:`_io`).
    Why not asyncio's way: asyncio's ``sock_recv`` (and uvloop's) has the reader callback call
    ``recv`` itself and put the bytes into the future the task awaits. When the readiness and a
    timeout's deadline are seen in the same poll, the callback runs first and completes the
    future, then the timeout's handle calls ``Task.cancel`` on a task whose awaited future is
    already done: the task resumes with ``CancelledError`` and the bytes, read out of the
    socket, are gone (CPython issue 78976, "loop.sock_recv failure because of delayed callback
    handling"; ``reports/findings-cancellation.md`` measures it). The other fix, keeping what
    was done for a cancelled waiter for the next call on that socket, needs a per-socket stash
    that every call must consult and that a caller switching to ``sock.recv`` directly would
    never see. Calling in the task costs nothing extra: the task is resumed by the same one
    callback either way, and the call it makes is the call the callback would have made.

    The transports are not of this class: a ``StreamTransport`` hands each read to its
    protocol at once, and asyncio's ``StreamReader`` keeps it in its buffer whether or not the
    ``read`` that waited is cancelled (``conformance/test_cancellation.py`` checks one beside
    the ``sock_*`` calls).
    """

    async def _until_ready(self, sock: socket.socket, event: int) -> None:
        """Wait until sock is readable (READ) or writable (WRITE); no I/O is done here.

        The wait registers its own handle and, when it ends, removes the fd's interest only if
        that handle is still the one registered: a cancelled sock_recv must not take away the
        reader of the sock_recv that replaced it on the same socket.
        """
        self._check_closed()
        ready = self.create_future()
        fd = sock.fileno()
        handle = Handle(_set_result_unless_done, (ready,))
        self._readiness.watch(fd, event, handle)
        try:
            await ready
        finally:
            record = self._readiness.records.get(fd)
            if record is not None and handle in (record.reader, record.writer):
                self._readiness.unwatch(fd, event)

    async def _io(self, sock: socket.socket, event: int, call: Callable[[], Any]) -> Any:
        """call() on a non-blocking socket, in the task: try it; on BlockingIOError wait for
        readiness and try again. Cancelled, it has called nothing since its last try."""
        _check_socket(sock)
        while True:
            try:
                return call()
            except _WOULD_BLOCK:
                pass
            await self._until_ready(sock, event)

    async def sock_recv(self, sock: socket.socket, n: int) -> bytes:
        return await self._io(sock, READ, lambda: sock.recv(n))

    async def sock_recv_into(self, sock: socket.socket, buf: Any) -> int:
        return await self._io(sock, READ, lambda: sock.recv_into(buf))

    async def sock_recvfrom(self, sock: socket.socket, bufsize: int) -> tuple[bytes, Any]:
        return await self._io(sock, READ, lambda: sock.recvfrom(bufsize))

    async def sock_recvfrom_into(self, sock: socket.socket, buf: Any, nbytes: int = 0) -> tuple:
        return await self._io(sock, READ, lambda: sock.recvfrom_into(buf, nbytes or len(buf)))

    async def sock_sendto(self, sock: socket.socket, data: bytes, address: Any) -> int:
        return await self._io(sock, WRITE, lambda: sock.sendto(data, address))

    async def sock_accept(self, sock: socket.socket) -> tuple[socket.socket, Any]:
        conn, address = await self._io(sock, READ, sock.accept)
        conn.setblocking(False)
        return conn, address

    async def sock_sendall(self, sock: socket.socket, data: bytes) -> None:
        """Send all of data; cancelled, a prefix has been sent, its length in a note on the
        ``CancelledError`` (``add_note``: asyncio's API has no other place for it)."""
        _check_socket(sock)
        view = memoryview(data).cast("B")
        sent = 0
        try:
            while sent < len(view):
                try:
                    sent += sock.send(view[sent:])
                except _WOULD_BLOCK:
                    await self._until_ready(sock, WRITE)
        except asyncio.CancelledError as cancelled:
            cancelled.add_note(f"sock_sendall was cancelled: {sent} of {len(view)} bytes sent")
            raise

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        """Connect; cancelled, the connect stays in progress in the kernel, as asyncio's does."""
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
        except _WOULD_BLOCK:
            pass
        while True:
            await self._until_ready(sock, WRITE)
            error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if error in (errno.EINPROGRESS, errno.EALREADY):
                continue  # not yet: wait again
            if error:
                raise OSError(error, f"Connect call failed {address}")
            return

    # -- sendfile -------------------------------------------------------------------------------

    async def sock_sendfile(
        self,
        sock: socket.socket,
        file: Any,
        offset: int = 0,
        count: int | None = None,
        *,
        fallback: bool = True,
    ) -> int:
        """Send file[offset:offset+count] (to its end if count is None) on sock, with
        ``os.sendfile`` (the kernel copies, no bytes through Python); if the file or the
        socket does not allow it, by reading the file and ``sock_sendall`` (unless fallback
        is False: ``asyncio.SendfileNotAvailableError``). The file's position is left after
        the last byte sent, cancelled or not. The number of bytes sent."""
        _check_socket(sock)
        _check_sendfile_params(sock, file, offset, count)
        try:
            return await self._sock_sendfile_native(sock, file, offset, count)
        except asyncio.SendfileNotAvailableError:
            if not fallback:
                raise
        return await self._sock_sendfile_fallback(sock, file, offset, count)

    async def _sock_sendfile_native(
        self, sock: socket.socket, file: Any, offset: int, count: int | None
    ) -> int:
        try:
            fileno = file.fileno()
            size = os.fstat(fileno).st_size
        except (AttributeError, OSError, ValueError) as exc:  # io.UnsupportedOperation too
            raise asyncio.SendfileNotAvailableError("not a regular file") from exc
        blocksize = count if count else size
        if not blocksize:
            return 0
        sent = 0
        try:
            while sent < blocksize:
                try:
                    n = os.sendfile(sock.fileno(), fileno, offset + sent, blocksize - sent)
                except _WOULD_BLOCK:
                    await self._until_ready(sock, WRITE)
                    continue
                except OSError as exc:
                    if sent == 0 and exc.errno in _SENDFILE_UNAVAILABLE:
                        raise asyncio.SendfileNotAvailableError("os.sendfile call failed") from exc
                    raise
                if n == 0:
                    break  # the file ended before count
                sent += n
            return sent
        finally:
            # The file's position after the last byte sent, even when none was (an offset at
            # the file's end): asyncio's _sock_sendfile_update_filepos in unix_events.py does
            # so since 3.14 (3.11-3.13 moved it only after a byte was sent).
            file.seek(offset + sent)

    async def _sock_sendfile_fallback(
        self, sock: socket.socket, file: Any, offset: int, count: int | None
    ) -> int:
        async def send(data: memoryview) -> None:
            await self.sock_sendall(sock, data)

        return await self._send_file_in_chunks(file, offset, count, SENDFILE_FALLBACK_CHUNK, send)

    async def _send_file_in_chunks(
        self,
        file: Any,
        offset: int,
        count: int | None,
        chunk: int,
        send: Callable[[memoryview], Awaitable[None]],
    ) -> int:
        """sendfile without os.sendfile (here, and ``Connections.sendfile`` over TLS): read a
        chunk in the default executor (a file read may block), ``await send(chunk)``; the
        file's position is left after the last byte sent. The number of bytes sent."""
        if hasattr(file, "seek"):
            file.seek(offset)  # offset 0 too: the file's position may be anywhere (asyncio's)
        buffer = bytearray(min(count, chunk) if count else chunk)
        sent = 0
        try:
            while not count or sent < count:
                view = memoryview(buffer)[: min(len(buffer), count - sent) if count else None]
                read = await self.run_in_executor(None, file.readinto, view)
                if not read:
                    break
                await send(view[:read])
                sent += read
            return sent
        finally:
            if sent > 0 and hasattr(file, "seek"):
                file.seek(offset + sent)


def _check_socket(sock: socket.socket) -> None:
    if isinstance(sock, ssl.SSLSocket):  # its recv is TLS records, not the socket's bytes
        raise TypeError("Socket cannot be of type SSLSocket")
    if sock.gettimeout() != 0:
        raise ValueError("the socket must be non-blocking")


def _check_sendfile_params(sock: Any, file: Any, offset: Any, count: Any) -> None:
    """asyncio's checks of sendfile's arguments, with its messages."""
    if "b" not in getattr(file, "mode", "b"):
        raise ValueError("file should be opened in binary mode")
    if sock.type != socket.SOCK_STREAM:
        raise ValueError("only SOCK_STREAM type sockets are supported")
    if count is not None:
        if not isinstance(count, int):
            raise TypeError(f"count must be a positive integer (got {count!r})")
        if count <= 0:
            raise ValueError(f"count must be a positive integer (got {count!r})")
    if not isinstance(offset, int):
        raise TypeError(f"offset must be a non-negative integer (got {offset!r})")
    if offset < 0:
        raise ValueError(f"offset must be a non-negative integer (got {offset!r})")


def _is_numeric(family: int, host: Any) -> bool:
    try:
        socket.inet_pton(family, host)
        return True
    except (OSError, TypeError, ValueError):
        return False
