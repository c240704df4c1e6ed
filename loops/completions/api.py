"""The coroutines style of the completions loop: the namespace ``VARIANT.coroutines`` points at.

Every socket call is an io_uring operation: the call prepares what Linux needs (a buffer to
fill, the bytes to send, an address in Linux's ``sockaddr`` layout), awaits
``operation(...)``, and its *completer* (``_complete_recv``, ``_complete_send``...) turns the
completion's ``res`` into the answer (``Proactor.deliver``), or, called with
``interrupted=True`` by ``Proactor.give_back`` when the task will not take the answer, releases
the buffer and keeps what came. ``recv`` and ``sendall`` try the syscall first (their
docstrings say when and why). A recv's buffer comes from :mod:`loops.completions.buffers`,
taken back only once its completion has arrived (the proactor's hazard); a send hands
Linux the caller's ``bytes`` itself (immutable, its address fixed), kept alive by the task
until the completion. The task calls (run, timeout_after, run_in_thread) are twins of
``loops/traps/api.py``'s on purpose (``tests/test_twins.py`` holds them together).
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
from collections.abc import Callable
from typing import Any

from loops.completions import buffers, leftovers
from loops.completions.kernel import Loop, _running, now, running_loop
from loops.completions.leftovers import kept  # the dict itself: a truth test per call
from loops.completions.queues import Queue
from loops.completions.task import CancelledError, Expired
from loops.completions.traps import (
    call_in_thread,
    cancel,
    clear_timer,
    join,
    operation,
    set_timer,
    sleep,
    spawn,
)
from loops.completions.uring import (
    OP_ACCEPT,
    OP_CONNECT,
    OP_RECV,
    OP_RECVMSG,
    OP_SEND,
    OP_SENDMSG,
)
from loops.contract import check_nonblocking

# twin of loops/traps/api.py: __all__
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

_address_of = ctypes.addressof
SOCKADDR_MAX = 128  # sizeof(struct sockaddr_storage)
MSGHDR = struct.Struct("<QI4xQQQQi4x")  # name, namelen, iov, iovlen, control, controllen, flags
IOVEC = struct.Struct("<QQ")  # base, len
MSGHDR_IOVEC = struct.Struct(MSGHDR.format + IOVEC.format[1:])  # the two, packed at once
ACCEPT_FLAGS = socket.SOCK_NONBLOCK | socket.SOCK_CLOEXEC
MSG_NOSIGNAL = socket.MSG_NOSIGNAL  # SEND's op_flags: EPIPE, not SIGPIPE, for a closed peer


def _bytes_data_offset() -> int:
    """Where a bytes object's data starts, from the object's address (its ``id``), in CPython.

    Speed trick, fenced here: ``ctypes.cast(data, c_void_p).value`` gives a bytes object's data
    address through a foreign-function call that marshals its arguments (its cost per request,
    counted by ``python -m bench.studies.instructions.profile``, is in loops/completions/README.md,
    "Levers"); ``id(data) + BYTES_DATA`` is one addition. ``id`` is the object's address in
    CPython, and the data sits at a fixed offset in every bytes object; that offset is measured
    here, once, with ctypes itself, and checked on a second object, so a build that lays bytes
    out otherwise fails at import instead of sending the wrong memory.
    """
    first, second = b"offset probe", bytes(range(64))
    offset = ctypes.cast(first, ctypes.c_void_p).value - id(first)
    if ctypes.cast(second, ctypes.c_void_p).value - id(second) != offset:
        raise ImportError("bytes objects keep their data at no fixed offset here")
    return offset


BYTES_DATA = _bytes_data_offset()


# twin of loops/traps/api.py: run
def run(coro: Any) -> Any:
    """Run coro on a new kernel until it ends; return its result or raise its exception."""
    kernel = Loop()
    try:
        return kernel.run(coro)
    finally:
        kernel.close()


# twin of loops/traps/api.py: timeout_after
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


def _error(res: int, what: str) -> OSError:
    """A completion's -errno as the OSError subclass Python would raise for it."""
    return OSError(-res, f"{what}: {os.strerror(-res)}")


# ---------------------------------------------------------------------- recv, send


SKIPS_MAX = 63  # after tries that found nothing, at most this many receives skip the try
FAST_CALLS_PER_TURN = 128  # receives tried at once that may succeed in a row (traps' budget)


def _complete_recv(
    res: int, buffer: buffers.Buffer, sock: Any, *, interrupted: bool
) -> bytes | None:
    try:
        if res < 0:
            if interrupted:
                return None  # -ECANCELED, most likely: nothing came
            raise _error(res, "recv")
        data = buffer.view[:res].tobytes()  # one copy, out of the pooled buffer
        if interrupted:
            if data:
                leftovers.keep(sock, data)  # won the race with the cancel: for the next recv
            return None
        return data
    finally:
        buffers.give(buffer)  # Linux is done with it: only now may another op use it


def _kept(sock: socket.socket, n: int) -> bytes | None:
    """Up to n bytes a cancelled recv on sock received after all (``leftovers.keep``), or None:
    they come before anything still in the socket."""
    data = leftovers.take(sock)
    if data is not None and len(data) > n:
        leftovers.keep(sock, data[n:], first=True)
        data = data[:n]
    return data


async def recv(sock: socket.socket, n: int) -> bytes:
    """Receive up to n bytes; b'' at EOF: tried with ``sock.recv`` at once or at the task's
    next turn, then a RECV through the ring if nothing was waiting.

    Speed trick, fenced here (loops/completions/README.md, "Levers", the receive tried at the
    next turn): io_uring itself tries a socket's receive when the enter that submits it runs,
    and waits (arms a poll) only if that finds nothing. Here the task makes that try itself, at
    the same point: it lets the other ready tasks run first (one ``sleep(0)``, where the enter
    would have come at the end of their turn), then calls ``sock.recv``. When bytes wait, the
    receive costs a syscall and no SQE, CQE, lent buffer or completer, which in Python cost more
    than the syscall; when nothing waits, it costs a failed syscall and a ``BlockingIOError`` on
    top of the SQE. So a try that finds nothing makes the next receives skip it and go straight
    to the ring, 1, 3, 7... up to SKIPS_MAX of them after tries that keep failing, and a try
    that finds bytes makes every receive try again: where nothing waits (a request/response peer
    at a moderate load), one receive in SKIPS_MAX + 1 pays the yield and the failed syscall. The
    counts are the loop's (``Loop.recv_skips``), not a socket's: whether a request waits when
    its task comes back to receive depends on the load, which every connection of a server
    shares. The yield comes before the try and nothing can interrupt the task between the
    syscall and its return, so a cancellation or a timeout loses nothing.

    Before the yield, a try at once (the README's "Levers", the receive tried at once while it
    finds bytes), skipped by a rule of its own (``Loop.recv_now_skips``): a request/response
    peer answers only after our reply, so right after it a try finds nothing, and once failures
    come in a row one receive in SKIPS_MAX + 1 pays it; but where the peers are ahead of the
    server (a server slower than its clients, a pipelining client) the request is often there
    already, and the yield and the turn would be paid for nothing. There a failure is one among
    successes: the first failure in a row skips no try, the next ones 1, 3, 7... Tries at once that
    keep finding bytes never give up the turn, so after FAST_CALLS_PER_TURN of them in a row the
    next receive takes the yield (traps' budget): a connection that always has bytes cannot
    keep the others from running."""
    if sock.getblocking():  # blocking: a clear error, as the other coroutine loops give
        check_nonblocking(sock)
    if n <= 0:
        if n < 0:
            raise ValueError("negative buffersize in recv")
        return b""
    kernel = _running.loop or running_loop()  # running_loop() raises outside of run()
    if kept and (data := _kept(sock, n)) is not None:  # the rare path (leftovers.py)
        return data
    if kernel.recv_now_skips_left:  # a try at once found nothing not long ago
        kernel.recv_now_skips_left -= 1
    elif kernel.fast_calls < FAST_CALLS_PER_TURN:
        try:  # the receive, tried at once: see the docstring
            data = sock.recv(n)
        except BlockingIOError:  # the first failure in a row skips none, the next 1, 3...
            kernel.recv_now_skips_left = kernel.recv_now_skips
            kernel.recv_now_skips = min(2 * kernel.recv_now_skips + 1, SKIPS_MAX)
        else:
            kernel.recv_now_skips = 0
            kernel.fast_calls += 1
            return data
    kernel.fast_calls = 0  # this receive gives up its turn, here or at the ring
    tried = not kernel.recv_skips_left  # else a try found nothing not long ago: to the ring
    if tried:
        await sleep(0)  # the others' turn first: the peer may answer meanwhile
        # A cancelled recv on this socket may have completed during the others' turn.
        if kept and (data := _kept(sock, n)) is not None:
            return data
        try:  # the receive, tried at the next turn: see the docstring
            data = sock.recv(n)
        except BlockingIOError:  # nothing waited: the next recv_skips receives are not tried
            kernel.recv_skips_left = kernel.recv_skips = min(2 * kernel.recv_skips + 1, SKIPS_MAX)
        else:
            kernel.recv_skips = 0
            return data
    else:
        kernel.recv_skips_left -= 1
    buffer = buffers.take(n)
    return await operation(OP_RECV, sock, buffer.address, n, buffer, _complete_recv)


def _complete_send(res: int, pinned: Any, sock: Any, *, interrupted: bool) -> int | None:
    """The completer of SEND (sendall) and SENDMSG (sendto): the bytes Linux took."""
    if res < 0 and not interrupted:
        raise _error(res, "send")
    return res


async def sendall(sock: socket.socket, data: bytes) -> None:
    """Send all of data: tried at once with ``sock.send``, then a SEND of what is left until
    Linux has taken it all.

    Speed trick, fenced here (loops/completions/README.md, "Levers", the send tried first): a
    socket's send buffer almost always has room for what an echo or a request sends, and a
    send that goes through the ring costs a suspension and a resumption of the task, an SQE, a
    CQE and a completer, which in Python is several times the syscall it saves. Only what the
    socket does not take at once (a full buffer: ``BlockingIOError``, or a partial send) goes
    through the ring. Errors of the direct send (a reset, a closed peer's ``EPIPE``) are the
    ``OSError`` the SEND's completion would have raised. Receives are tried too, but at the
    task's next turn and only while the tries find bytes (``recv``): a receive waits for its
    peer far more often than a send waits for room."""
    if sock.getblocking():
        check_nonblocking(sock)
    if type(data) is not bytes:
        data = bytes(data)  # a fixed address the caller cannot change under Linux
    size = len(data)
    try:  # the send, tried first: see the docstring
        sent = sock.send(data, MSG_NOSIGNAL)
    except BlockingIOError:
        sent = 0
    if sent == size:
        return
    address = id(data) + BYTES_DATA  # the bytes object's own buffer: no copy
    while sent < size:
        sent += await operation(
            OP_SEND, sock, address + sent, size - sent, data, _complete_send, 0, MSG_NOSIGNAL
        )


# ---------------------------------------------------------------------- accept, connect


def _complete_accept(res: int, name: Any, listener: Any, *, interrupted: bool) -> Any:
    if res < 0:
        if interrupted:
            return None
        raise _error(res, "accept")
    conn = socket.socket(listener.family, listener.type, listener.proto, fileno=res)
    conn.setblocking(False)  # the fd is non-blocking already (SOCK_NONBLOCK); tell Python
    length = int.from_bytes(name.raw[SOCKADDR_MAX : SOCKADDR_MAX + 4], "little")
    accepted = conn, _parse_sockaddr(name.raw[:length])
    if interrupted:  # accepted for a task cancelled meanwhile: for the next accept
        leftovers.keep(listener, accepted)
        return None
    return accepted


async def accept(sock: socket.socket) -> tuple[socket.socket, Any]:
    """Accept a connection: (a non-blocking socket, the peer's address)."""
    if sock.getblocking():
        check_nonblocking(sock)
    if kept:
        accepted = leftovers.take(sock)
        if accepted is not None:
            return accepted
    name = ctypes.create_string_buffer(SOCKADDR_MAX + 4)  # sockaddr, then its socklen_t
    name[SOCKADDR_MAX : SOCKADDR_MAX + 4] = SOCKADDR_MAX.to_bytes(4, "little")
    base = _address_of(name)
    # ACCEPT: addr is the sockaddr, off (addr2) the address of its length, in and out.
    return await operation(
        OP_ACCEPT,
        sock,
        addr=base,
        length=0,
        pinned=name,
        complete=_complete_accept,
        off=base + SOCKADDR_MAX,
        op_flags=ACCEPT_FLAGS,
    )


def _complete_connect(res: int, pinned: Any, sock: Any, *, interrupted: bool) -> None:
    if res < 0 and not interrupted:
        raise _error(res, "connect")


async def connect(sock: socket.socket, address: Any) -> None:
    """Connect sock to address (a host name is resolved blocking, as in the traps loop)."""
    if sock.getblocking():
        check_nonblocking(sock)
    name = ctypes.create_string_buffer(_sockaddr(sock, address))
    await operation(
        OP_CONNECT,
        sock,
        addr=_address_of(name),
        length=0,
        pinned=name,
        complete=_complete_connect,
        off=len(name.raw),  # CONNECT: off is the sockaddr's length
    )


# ---------------------------------------------------------------------- UDP: recvmsg, sendmsg


def _msghdr(name_size: int, data_address: int, data_size: int) -> ctypes.Array:
    """A msghdr, its one iovec and room for the name, in one buffer (Linux reads it)."""
    block = ctypes.create_string_buffer(MSGHDR_IOVEC.size + name_size)
    base = _address_of(block)
    iov = base + MSGHDR.size
    MSGHDR_IOVEC.pack_into(
        block, 0, base + MSGHDR_IOVEC.size, name_size, iov, 1, 0, 0, 0, data_address, data_size
    )
    return block


def _complete_recvmsg(res: int, pinned: tuple, sock: Any, *, interrupted: bool) -> Any:
    block, buffer = pinned
    try:
        if res < 0:
            if interrupted:
                return None
            raise _error(res, "recvfrom")
        data = buffer.view[:res].tobytes()
        name_size = MSGHDR.unpack_from(block, 0)[1]  # Linux wrote the sender's length
        start = MSGHDR_IOVEC.size
        received = data, _address(block.raw[start : start + name_size])
        if interrupted:  # a datagram that won the race with the cancel: for the next call
            leftovers.keep(sock, received)
            return None
        return received
    finally:
        buffers.give(buffer)


async def recvfrom(sock: socket.socket, n: int) -> tuple[bytes, Any]:
    """Receive a datagram of up to n bytes: (data, sender's address)."""
    if sock.getblocking():
        check_nonblocking(sock)
    if kept:
        received = leftovers.take(sock)
        if received is not None:
            return received
    buffer = buffers.take(max(n, 1))
    block = _msghdr(SOCKADDR_MAX, buffer.address, n)
    return await operation(
        OP_RECVMSG,
        sock,
        addr=_address_of(block),
        length=1,  # RECVMSG: one msghdr
        pinned=(block, buffer),
        complete=_complete_recvmsg,
    )


async def sendto(sock: socket.socket, data: bytes, address: Any) -> int:
    """Send a datagram to address; returns the number of bytes sent."""
    if sock.getblocking():
        check_nonblocking(sock)
    if type(data) is not bytes:
        data = bytes(data)
    name = _sockaddrs.get((sock.family, address)) if type(address) is tuple else None
    if name is None:
        name = _sockaddr(sock, address)
    block = _msghdr(len(name), id(data) + BYTES_DATA, len(data))
    block[MSGHDR_IOVEC.size :] = name
    return await operation(
        OP_SENDMSG,
        sock,
        addr=_address_of(block),
        length=1,  # SENDMSG: one msghdr
        pinned=(block, data),
        complete=_complete_send,
    )


# ---------------------------------------------------------------------- addresses


# Speed trick, fenced here: a UDP server answers the same few peers again and again, so the
# packed form of a numeric address and the parsed form of a sockaddr Linux wrote are
# kept (at most ADDRESSES_KEPT of each; the table starts over when full). Only numeric
# addresses are kept packed: a host name is resolved at each call, as the socket module does.
# Without them, packing and parsing addresses is a tenth of a UDP round trip's Python time
# (cProfile of the workloads' UDP echo on this loop).
ADDRESSES_KEPT = 1024
_sockaddrs: dict[tuple, bytes] = {}  # (family, numeric address) -> the packed sockaddr
_addresses: dict[bytes, Any] = {}  # a sockaddr Linux wrote -> Python's address for it


def _address(raw: bytes) -> Any:
    """_parse_sockaddr, remembered."""
    address = _addresses.get(raw)
    if address is None:
        if len(_addresses) >= ADDRESSES_KEPT:
            _addresses.clear()
        address = _addresses[raw] = _parse_sockaddr(raw)
    return address


def _sockaddr(sock: socket.socket, address: Any) -> bytes:
    """Python's address for sock's family in Linux's sockaddr layout (what the socket
    module does inside every connect and sendto, and does not export)."""
    family = sock.family
    if family == socket.AF_UNIX:
        path = os.fsencode(address) if not isinstance(address, bytes) else address
        return struct.pack("<H", family) + path + (b"" if path[:1] == b"\0" else b"\0")
    if family not in (socket.AF_INET, socket.AF_INET6):
        raise OSError(
            errno.EAFNOSUPPORT,
            f"the completions loop speaks AF_INET, AF_INET6 and AF_UNIX, not {family!r}",
        )
    host, port = address[0], address[1]
    numeric = False
    try:
        packed = socket.inet_pton(family, host)
    except OSError:  # a name, or '' / '<broadcast>': let the resolver answer (blocking)
        host = socket.getaddrinfo(host, port, family, sock.type)[0][4][0]
        packed = socket.inet_pton(family, host)
    else:  # numeric: the same address always packs the same way
        numeric = True
    if family == socket.AF_INET:
        name = struct.pack("<H", family) + struct.pack(">H", port) + packed + bytes(8)
    else:
        flowinfo = address[2] if len(address) > 2 else 0
        scope_id = address[3] if len(address) > 3 else 0
        name = (
            struct.pack("<H", family)
            + struct.pack(">HI", port, flowinfo)
            + packed
            + struct.pack("<I", scope_id)
        )
    if numeric and type(address) is tuple:
        if len(_sockaddrs) >= ADDRESSES_KEPT:
            _sockaddrs.clear()
        _sockaddrs[family, address] = name
    return name


def _parse_sockaddr(raw: bytes) -> Any:
    """A sockaddr Linux wrote, as the address tuple (or path) Python would give."""
    if len(raw) < 2:
        return ""  # an unnamed AF_UNIX peer
    family = int.from_bytes(raw[:2], "little")
    if family == socket.AF_INET:
        return socket.inet_ntop(socket.AF_INET, raw[4:8]), int.from_bytes(raw[2:4], "big")
    if family == socket.AF_INET6:
        port, flowinfo = struct.unpack_from(">HI", raw, 2)
        scope_id = struct.unpack_from("<I", raw, 24)[0]
        return socket.inet_ntop(socket.AF_INET6, raw[8:24]), port, flowinfo, scope_id
    if family == socket.AF_UNIX:
        path = raw[2:]
        if path[:1] == b"\0":
            return path  # abstract namespace: bytes, as Python gives it
        return os.fsdecode(path.split(b"\0", 1)[0])
    return raw


# ---------------------------------------------------------------------- threads


# twin of loops/traps/api.py: run_in_thread
async def run_in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """Run fn(*args) in a worker thread; its result, or its exception re-raised."""
    return await call_in_thread(fn, args)
