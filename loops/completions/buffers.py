"""Receive buffers: lent to Linux by an operation, taken back only at its completion.

A readiness loop reads into a buffer it owns for the length of one syscall. A completion loop
hands the buffer over when it *submits* the recv and gets it back when the recv *completes*,
which may be long after the task that asked has been cancelled. Reusing or freeing the buffer
in between is the proactor's classic bug: Linux writes a late datagram into memory that
now belongs to someone else. Here a buffer is given back to the pool in exactly one place, the
completer of the operation it was lent to (``_complete_recv``, ``_complete_recvmsg`` in
``api.py``), which the loop calls once that operation's completion has arrived
(``Proactor.deliver``, ``Proactor.give_back``), never when a task is cancelled.

Speed trick, fenced here: buffers are pooled by size, so the steady state of an echo server
allocates (and zeroes) no buffer per recv; ``ctypes.create_string_buffer`` memory is zeroed
once, at creation. The pool keeps at most ``POOL_BYTES`` per size, so one burst of large recvs
does not stay resident.
"""

from __future__ import annotations

import ctypes

POOL_BYTES = 8 << 20  # free buffers kept per size, in bytes (at least one buffer)

_free: dict[int, list[Buffer]] = {}  # size -> buffers no operation holds


class Buffer:
    """Memory Linux may write into: its ctypes storage, address and size."""

    __slots__ = ("address", "lent", "size", "storage", "view")

    def __init__(self, size: int) -> None:
        self.storage = ctypes.create_string_buffer(size)
        self.address = ctypes.addressof(self.storage)
        # Speed trick: the received bytes are copied out through this view
        # (``view[:n].tobytes()``) rather than ``ctypes.string_at``'s foreign-function call,
        # which marshals its arguments (loops/completions/README.md, "Levers").
        self.view = memoryview(self.storage).cast("B")
        self.size = size
        self.lent = False  # True from take() to give(): an operation may still write into it


def take(size: int) -> Buffer:
    """A buffer of size bytes that no operation in flight holds."""
    free = _free.get(size)
    buffer = free.pop() if free else Buffer(size)
    buffer.lent = True
    return buffer


def give(buffer: Buffer) -> None:
    """Take a buffer back: only once the completion of the operation it was lent to came."""
    buffer.lent = False
    free = _free.setdefault(buffer.size, [])
    if (len(free) + 1) * buffer.size <= POOL_BYTES or not free:
        free.append(buffer)
