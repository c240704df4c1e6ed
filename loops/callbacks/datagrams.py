"""Datagrams: ``create_datagram_endpoint`` and its transport, on add_reader/add_writer.

A datagram transport reads one datagram per readable event and hands it to
``protocol.datagram_received``; ``sendto`` sends at once and, when the kernel's buffer is full,
keeps the datagrams in order and sends them when the socket is writable (with the same
high/low-water flow control as a stream). An ``OSError`` from the peer (an ICMP "port
unreachable" on a connected UDP socket) goes to ``protocol.error_received`` and the socket
lives on, as in asyncio.

What follows asyncio on purpose: the arguments, their rules and error messages (CPython's
``base_events`` wording; see ``LICENSE-PSF`` in this folder), and no ``reuse_address``
(removed from asyncio in 3.11).
"""

from __future__ import annotations

import asyncio
import collections
import socket
from collections.abc import Callable
from typing import Any

from loops.callbacks.transports import (
    AGAIN,
    FAILED,
    MAX_READ,
    _Outcome,
    _set_result_unless_done,
    _socket_extra,
    _Transport,
    opened,
)

DATAGRAM_READ_FAILED = "Fatal read error on datagram transport"  # asyncio's messages, on purpose
DATAGRAM_WRITE_FAILED = "Fatal write error on datagram transport"


class Datagrams:
    """create_datagram_endpoint of asyncio's event loop; mixed into ``AsyncioLoop``
    (``asyncio_loop.py``)."""

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
        await opened(transport, waiter)
        return transport, protocol


class DatagramTransport(_Transport, asyncio.DatagramTransport, asyncio.Transport):
    """A UDP socket: asyncio.DatagramTransport's API (sendto, buffered when the kernel is full)."""

    def __init__(
        self,
        loop: Any,
        sock: socket.socket,
        protocol: Any,
        address: Any = None,
        waiter: Any = None,
        extra: dict | None = None,
    ) -> None:
        super().__init__(loop, sock, protocol, _socket_extra(sock, extra))
        self._address = address  # the connected peer (remote_addr), else None
        self._buffer: collections.deque[tuple[bytes, Any]] = collections.deque()
        self._buffered_bytes = 0
        loop.call_soon(protocol.connection_made, self)
        loop.call_soon(self._start_reading)
        if waiter is not None:
            loop.call_soon(_set_result_unless_done, waiter)

    def _start_reading(self) -> None:
        if not self._closing:
            self._loop.add_reader(self._sock, self._read_ready)

    _PEER_ERRORS = (OSError,)  # ICMP refusals and the like: error_received, the socket lives

    def _read_ready(self) -> None:
        got = self._attempt(DATAGRAM_READ_FAILED, self._sock.recvfrom, MAX_READ, io=True)
        if not isinstance(got, _Outcome):
            self._protocol.datagram_received(*got)

    def _send(self, data: Any, addr: Any) -> Any:
        """One datagram out: send on a connected socket when no address is given."""
        if self._extra["peername"] is not None and addr is None:
            return self._sock.send(data)
        return self._sock.sendto(data, addr)

    def sendto(self, data: bytes, addr: Any = None) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self._address is not None and addr not in (None, self._address):
            raise ValueError(f"Invalid address: must be None or {self._address}")
        if self._conn_lost:
            self._conn_lost += 1
            return
        if not self._buffer:
            if self._attempt(DATAGRAM_WRITE_FAILED, self._send, data, addr, io=True) is not AGAIN:
                return  # sent, reported to error_received, or fatal
            self._loop.add_writer(self._sock, self._write_ready)
        self._buffer.append((bytes(data), addr))
        self._buffered_bytes += len(data)
        self._maybe_pause_protocol()

    def _write_ready(self) -> None:
        while self._buffer:
            data, addr = self._buffer[0]
            sent = self._attempt(DATAGRAM_WRITE_FAILED, self._send, data, addr, io=True)
            if sent is AGAIN or sent is FAILED:
                return
            self._buffer.popleft()  # sent, or refused and reported: either way it is done
            self._buffered_bytes -= len(data)
        self._maybe_resume_protocol()
        self._loop.remove_writer(self._sock)
        if self._closing:
            self._conn_lost += 1
            self._call_connection_lost(None)

    def _buffer_size(self) -> int:
        return self._buffered_bytes

    def _clear_buffer(self) -> None:
        self._buffer.clear()
        self._buffered_bytes = 0
