"""Socket calls for reference adapters whose loops expose only readiness waits (trio, curio).

Each call tries the operation first and waits for readiness only on ``BlockingIOError``, which
is how trio's and curio's own socket wrappers work; the adapters pass in their loop's
``wait_readable``/``wait_writable`` primitives.
"""

from __future__ import annotations

import os
import socket
from types import SimpleNamespace
from typing import Any

from loops.contract import check_nonblocking


def socket_calls(wait_readable: Any, wait_writable: Any) -> SimpleNamespace:
    """recv, sendall, accept, connect, recvfrom, sendto over the given readiness waits."""

    async def recv(sock: socket.socket, n: int) -> bytes:
        check_nonblocking(sock)
        while True:
            try:
                return sock.recv(n)
            except BlockingIOError:
                await wait_readable(sock)

    async def sendall(sock: socket.socket, data: bytes) -> None:
        check_nonblocking(sock)
        view = memoryview(data)
        while view:
            try:
                view = view[sock.send(view) :]
            except BlockingIOError:
                await wait_writable(sock)

    async def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
        check_nonblocking(sock)
        while True:
            try:
                conn, address = sock.accept()
            except BlockingIOError:
                await wait_readable(sock)
            else:
                conn.setblocking(False)
                return conn, address

    async def connect(sock: socket.socket, address: Any) -> None:
        check_nonblocking(sock)
        try:
            sock.connect(address)
            return
        except BlockingIOError:
            await wait_writable(sock)
        error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            # OSError(errno, ...) becomes ConnectionRefusedError etc., as asyncio raises.
            raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}")

    async def recvfrom(sock: socket.socket, n: int) -> tuple[bytes, Any]:
        check_nonblocking(sock)
        while True:
            try:
                return sock.recvfrom(n)
            except BlockingIOError:
                await wait_readable(sock)

    async def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
        check_nonblocking(sock)
        while True:
            try:
                return sock.sendto(data, address)
            except BlockingIOError:
                await wait_writable(sock)

    return SimpleNamespace(
        recv=recv,
        sendall=sendall,
        accept=accept,
        connect=connect,
        recvfrom=recvfrom,
        sendto=sendto,
    )


__all__ = ["socket_calls"]
