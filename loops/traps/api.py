"""The coroutines style of the traps loop: the namespace ``VARIANT.coroutines`` points at.

Everything here is ordinary async code built on the traps: the kernel knows nothing about
sockets, timeouts or threads beyond "wake this task when the fd is ready / the timer fires /
the future is done". Socket calls are optimistic: they try the non-blocking call first and
trap (wait for readiness) only when it raises BlockingIOError, so a busy connection rarely
waits at all.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from loops.contract import check_nonblocking
from loops.traps.kernel import Kernel, running_kernel
from loops.traps.queues import Queue
from loops.traps.task import CancelledError, Expired
from loops.traps.traps import (
    call_in_thread,
    cancel,
    clear_timer,
    join,
    set_timer,
    sleep,
    spawn,
    wait_readable,
    wait_writable,
)

__all__ = [
    "CancelledError",
    "Queue",
    "accept",
    "cancel",
    "connect",
    "join",
    "now",
    "recv",
    "recvfrom",
    "run",
    "run_in_thread",
    "sendall",
    "sendto",
    "sleep",
    "spawn",
    "timeout_after",
]


def run(coro: Any) -> Any:
    """Run coro on a new kernel until it ends; return its result or raise its exception."""
    kernel = Kernel()
    try:
        return kernel.run(coro)
    finally:
        kernel.close()


def now() -> float:
    """The running kernel's clock (time.monotonic), in seconds."""
    running_kernel()
    return time.monotonic()


async def timeout_after(seconds: float, coro: Any) -> Any:
    """Run coro; if it takes longer than seconds, cancel it and raise TimeoutError.

    The inner work is cancelled in place (a CancelledError subclass thrown at its suspension
    point, so its cleanup runs) and the TimeoutError is raised here, where the timer was set.
    """
    timer = await set_timer(seconds)
    try:
        return await coro
    except Expired as expired:
        if expired.timer is not timer:
            raise  # an outer timeout_after's timer: its business
        raise TimeoutError(f"timed out after {seconds} s") from expired
    finally:
        await clear_timer(timer)


async def recv(sock: socket.socket, n: int) -> bytes:
    """Receive up to n bytes; b'' at EOF."""
    check_nonblocking(sock)
    while True:
        try:
            return sock.recv(n)
        except BlockingIOError:
            await wait_readable(sock)


async def sendall(sock: socket.socket, data: bytes) -> None:
    """Send all of data, waiting for the socket to drain as needed."""
    check_nonblocking(sock)
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    if sent == len(data):  # the usual case: the socket buffer took it all
        return
    with memoryview(data) as view, view.cast("B") as remaining:
        while sent < len(remaining):
            await wait_writable(sock)
            with contextlib.suppress(BlockingIOError):  # a spurious wake-up: wait again
                sent += sock.send(remaining[sent:])


async def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
    """Accept a connection: (a non-blocking socket, the peer's address)."""
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
    """Connect sock to address (resolved addresses: a host name is looked up blocking)."""
    check_nonblocking(sock)
    try:
        sock.connect(address)
        return
    except BlockingIOError:  # EINPROGRESS: the handshake goes on without us
        pass
    await wait_writable(sock)
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}")


async def recvfrom(sock: socket.socket, n: int) -> tuple[bytes, Any]:
    """Receive a datagram of up to n bytes: (data, sender's address)."""
    check_nonblocking(sock)
    while True:
        try:
            return sock.recvfrom(n)
        except BlockingIOError:
            await wait_readable(sock)


async def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
    """Send a datagram to address; returns the number of bytes sent."""
    check_nonblocking(sock)
    while True:
        try:
            return sock.sendto(data, address)
        except BlockingIOError:
            await wait_writable(sock)


async def run_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) in a worker thread; its result, or its exception re-raised."""
    return await call_in_thread(fn, args)
