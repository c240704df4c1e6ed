"""The coroutines style of the traps loop: the namespace ``VARIANT.coroutines`` points at.

Everything here is ordinary async code built on the traps: the kernel knows nothing about
sockets, timeouts or threads beyond "wake this task when the fd is ready / the timer fires /
the future is done". Socket calls are optimistic: they try the non-blocking call first and
trap (wait for readiness) only when it raises BlockingIOError, so a busy connection rarely
waits at all; the one exception, a recv on a socket whose last try found nothing, is explained
at ``_drained``.

Optimism alone is unfair: a peer that answers faster than the loop turns around keeps every
call succeeding, and a task that never waits never lets the others run (an echo server then
serves one connection of a hundred). So calls are counted, as tokio counts its cooperative
budget: after FAST_CALLS_PER_TURN calls in a row that completed without anyone waiting, the
next call first yields its turn (sleep(0)). The yield comes before the call, so a task
cancelled there loses no data. One counter per kernel (``Loop.fast_calls``, with the rest of its
scheduling state), reset whenever a call waits: cheap, and exact enough, since only a task that
never waits can run the count up.
"""

# twin of loops/scopes/api.py

from __future__ import annotations

import itertools
import os
import socket
import weakref
from collections.abc import Callable
from typing import Any

from loops.contract import check_nonblocking
from loops.traps.kernel import Loop, _running, now, running_loop
from loops.traps.queues import Queue
from loops.traps.task import CancelledError, Expired
from loops.traps.traps import (
    call_in_thread,
    cancel,
    clear_timer,
    drop_ghosts,
    join,
    set_timer,
    sleep,
    spawn,
    wait_readable,
    wait_writable,
)

FAST_CALLS_PER_TURN = 128  # calls that may complete in a row before a forced yield (tokio's)
TRY_FIRST_EVERY = 8  # of a drained socket's recvs, one in this many tries first anyway

# twin of loops/roundrobin/api.py: _drained
# twin of loops/futures/api.py: _drained
# Speed trick, fenced here: the fds whose last try at a recv found nothing. On a
# request/response connection the recv right after our reply finds nothing (the peer answers
# only once it has the reply): a syscall and a BlockingIOError per request. So a socket whose
# try found nothing is drained, and its recvs wait for readiness first instead (always correct:
# epoll is level-triggered, data already there wakes us at once). One drained recv in
# TRY_FIRST_EVERY (counted across sockets) tries first anyway, and a try that finds data puts
# the socket back on the optimistic path: where the peer is ahead (a stream, a pipelining
# client, a server slower than its clients) trying first does not fail, and waiting would cost
# a turn of the loop per call. Keyed by fd for a cheap lookup, holding a weak reference so
# that a socket reusing a closed socket's fd starts optimistic and no socket is kept alive.
# Measured (echo, 1 KiB x 100 connections): the folder README has the figures and the command.
_drained: dict[int, weakref.ref] = {}  # fd -> the socket whose last try found nothing
_probes = itertools.count(1)  # drained recvs so far (TRY_FIRST_EVERY)

# twin of loops/roundrobin/api.py: WAKEUPS_FOR_NOTHING_BEFORE_REBUILD
# twin of loops/futures/api.py: WAKEUPS_FOR_NOTHING_BEFORE_REBUILD
# The rare path, fenced here: a socket call that fails with EAGAIN right after the kernel woke
# it for that socket was woken for nothing. Level-triggered readiness that is real cannot do
# that twice in a row (the data or the room is there until someone takes it; only another
# process sharing the socket can), but a ghost can, forever: a socket closed behind a dup,
# whose number a new socket reuses, stays in epoll under that number (see Poller.drop_ghosts),
# and its readiness looks like the new socket's. So the second wake-up for nothing in one call
# has the kernel rebuild its epoll from its live registrations, which drops the ghost; once
# per call, so a socket shared with another process costs one rebuild per contested call, not
# one per wake-up. Costs nothing on the common path: the count lives in the calling frame and
# moves only after an EAGAIN that followed a wait.
WAKEUPS_FOR_NOTHING_BEFORE_REBUILD = 2

# twin of loops/completions/api.py: __all__
# twin of loops/roundrobin/api.py: __all__
# twin of loops/futures/api.py: __all__
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


# twin of loops/completions/api.py: run
def run(coro: Any) -> Any:
    """Run coro on a new kernel until it ends; return its result or raise its exception."""
    kernel = Loop()
    try:
        return kernel.run(coro)
    finally:
        kernel.close()


# twin of loops/completions/api.py: timeout_after
async def timeout_after(seconds: float, coro: Any) -> Any:
    """Run coro; if it takes longer than seconds, cancel it and raise TimeoutError.

    The inner work is cancelled in place (a CancelledError subclass thrown at its suspension
    point, so its cleanup runs) and the TimeoutError is raised here, where the timer was set.
    """
    try:
        timer = await set_timer(seconds)
    except BaseException:
        if hasattr(coro, "close"):
            coro.close()  # it will never run: do not leave it to warn "never awaited"
        raise
    try:
        return await coro
    except Expired as expired:
        if expired.timer != timer:
            raise  # an outer timeout_after's timer: its business
        raise TimeoutError(f"timed out after {seconds} s") from expired
    finally:
        await clear_timer(timer)


async def recv(sock: socket.socket, n: int) -> bytes:
    """Receive up to n bytes; b'' at EOF."""
    if sock.getblocking():  # blocking: would freeze the loop
        check_nonblocking(sock)
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kernel.fast_calls >= FAST_CALLS_PER_TURN:
        await _yield_turn(kernel)
    fd = sock.fileno()
    drained = _drained.get(fd)
    if drained is None or drained() is not sock or not next(_probes) % TRY_FIRST_EVERY:
        try:
            data = sock.recv(n)
        except BlockingIOError:  # found nothing: wait, and wait first from now on (_drained)
            _drained[fd] = weakref.ref(sock)
        else:
            if drained is not None:  # found data: optimistic again
                del _drained[fd]
            kernel.fast_calls += 1
            return data
    kernel.fast_calls = 0
    await wait_readable(sock)
    try:
        return sock.recv(n)  # what the wait was for
    except BlockingIOError:  # woken for nothing: one wake-up counted (_woken_for_nothing)
        return await _try_first(kernel, sock, wait_readable, 0, sock.recv, n)


async def sendall(sock: socket.socket, data: bytes) -> None:
    """Send all of data, waiting for the socket to drain as needed."""
    if sock.getblocking():  # blocking: would freeze the loop
        check_nonblocking(sock)
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kernel.fast_calls >= FAST_CALLS_PER_TURN:
        await _yield_turn(kernel)
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    if sent == len(data) and type(data) is bytes:  # the usual case: the buffer took it all
        kernel.fast_calls += 1
        return
    # (len() of a memoryview or an array counts items: the loop below counts bytes.)
    kernel.fast_calls = 0
    idle = 0  # wake-ups that found no room (see _woken_for_nothing)
    with memoryview(data) as view, view.cast("B") as remaining:
        while sent < len(remaining):
            await wait_writable(sock)
            try:
                sent += sock.send(remaining[sent:])
            except BlockingIOError:  # woken for nothing: wait again
                idle = await _woken_for_nothing(idle)


async def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
    """Accept a connection: (a non-blocking socket, the peer's address)."""
    if sock.getblocking():  # blocking: would freeze the loop
        check_nonblocking(sock)
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kernel.fast_calls >= FAST_CALLS_PER_TURN:
        await _yield_turn(kernel)
    conn, address = await _try_first(kernel, sock, wait_readable, -1, sock.accept)
    conn.setblocking(False)
    return conn, address


async def connect(sock: socket.socket, address: Any) -> None:
    """Connect sock to address (resolved addresses: a host name is looked up blocking)."""
    if sock.getblocking():  # blocking: would freeze the loop
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
    if sock.getblocking():  # blocking: would freeze the loop
        check_nonblocking(sock)
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kernel.fast_calls >= FAST_CALLS_PER_TURN:
        await _yield_turn(kernel)
    return await _try_first(kernel, sock, wait_readable, -1, sock.recvfrom, n)


async def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
    """Send a datagram to address; returns the number of bytes sent."""
    if sock.getblocking():  # blocking: would freeze the loop
        check_nonblocking(sock)
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kernel.fast_calls >= FAST_CALLS_PER_TURN:
        await _yield_turn(kernel)
    return await _try_first(kernel, sock, wait_writable, -1, sock.sendto, data, address)


async def _try_first(
    kernel: Loop,
    sock: socket.socket,
    wait: Callable[[socket.socket], Any],
    idle: int,
    call: Callable,
    *args: Any,
) -> Any:
    """The loop recv, accept, recvfrom and sendto share: make the call; only when it would block
    wait for readiness and make it again. `idle` counts wake-ups in this call that found
    nothing (-1: not woken yet; see _woken_for_nothing)."""
    while True:
        try:
            result = call(*args)
        except BlockingIOError:
            kernel.fast_calls = 0
            idle = await _woken_for_nothing(idle) if idle >= 0 else 0
            await wait(sock)
        else:
            kernel.fast_calls += 1
            return result


# twin of loops/roundrobin/api.py: _woken_for_nothing
# twin of loops/futures/api.py: _woken_for_nothing
async def _woken_for_nothing(idle: int) -> int:
    """Count one more wake-up that found nothing; at the limit, drop ghosts (see above)."""
    idle += 1
    if idle == WAKEUPS_FOR_NOTHING_BEFORE_REBUILD:
        await drop_ghosts()
    return idle


async def _yield_turn(kernel: Loop) -> None:
    """Let the other ready tasks (and the I/O poll) run before this busy task goes on."""
    kernel.fast_calls = 0
    await sleep(0)


# twin of loops/completions/api.py: run_in_thread
async def run_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) in a worker thread; its result, or its exception re-raised."""
    return await call_in_thread(fn, args)
