"""The completion side of the kernel: the ring, the operations in flight, the threads' wake-up.

The kernel (:mod:`loops.completions.kernel`) schedules; this module does its I/O the
completion way (a proactor, as Windows IOCP is). A task hands over the whole operation (recv
into this buffer, send these bytes, accept, connect, recvmsg/sendmsg): the ``operation`` trap
writes it as one SQE with the task's id as ``user_data`` and files the task in
:attr:`Proactor.in_flight` (``Proactor._trap_operation``). Stage 1 of the kernel's turn calls
:meth:`Proactor.wait`: one ``io_uring_enter`` hands every queued SQE to Linux and, if asked to,
waits for the first completion or the timeout (the enter's own, ``IORING_ENTER_EXT_ARG``: the
README argues why not ``IORING_OP_TIMEOUT``); then each CQE puts the task its ``user_data``
names back on the kernel's ready queue. ``res`` is the operation's result (a byte count, a new
fd, 0) or ``-errno``, which the task's completer turns into the answer or an ``OSError`` as
the task runs (:meth:`Proactor.deliver`). Its twin, :mod:`loops.traps.poller`, answers the
same four calls of the kernel (``wait``, ``wake``, ``open_wake_up``, ``close``) with readiness.

The proactor's classic hazard, a buffer Linux owns until its operation's completion even if
the task is cancelled meanwhile, is handled here: :meth:`Proactor.interrupt` asks Linux to
cancel and the error waits for the CQE; :meth:`Proactor.give_back` releases a result nobody
will take; :meth:`Proactor.close` waits for every completion before it frees the ring.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import errno
import logging
import socket
from collections.abc import Callable
from time import monotonic
from typing import Any

from loops._signals import wake_pair
from loops.completions import leftovers
from loops.completions.task import OPERATION, READY, SUSPEND, Task
from loops.completions.uring import CANCEL_ANY, OP_ASYNC_CANCEL, OP_RECV, Ring

CANCEL_USER_DATA = 0  # the user_data of ASYNC_CANCEL requests: their own CQEs are ignored
WAKE_USER_DATA = 1  # the user_data of the wake-up's RECV, kept in flight
WAKE_BYTES = 64  # what one RECV of the wake-up drains: more is read by the next one
SHUTDOWN_GRACE = 5.0  # seconds close() waits for cancelled operations to complete
RING_ENTRIES = 4096  # SQ slots; the CQ gets four times as many (completions pile up faster)

logger = logging.getLogger(__name__)


class Proactor:
    """The ring, the tasks whose operations are in flight, and the wake-up socket."""

    def __init__(self, ready: collections.deque[Task]) -> None:
        self._ready_push = ready.append  # a completed task goes on the kernel's ready queue
        self.ring = Ring(RING_ENTRIES, 4 * RING_ENTRIES)  # the SQ and CQ rings, mapped
        self.in_flight: dict[int, Task] = {}  # user_data (task.id) -> task, until its CQE
        # What wait() calls every turn, bound once (see wait).
        self._enter, self._reap, self._in_flight_pop = (
            self.ring.enter,
            self.ring.reap,
            self.in_flight.pop,
        )
        self._wake_pair: tuple[socket.socket, socket.socket] | None = None  # a RECV in flight
        self.wake_fd = -1  # the wake-up's write end: threads and signals write a byte to it
        self._wake_buffer = ctypes.create_string_buffer(WAKE_BYTES)  # that RECV's buffer
        self._on_wake: Callable[[], None] | None = None  # the kernel's, when woken

    # ------------------------------------------------------------------ the wait (stage 1)

    def wait(self, timeout: float | None) -> None:
        """Submit every queued SQE and wait up to timeout seconds (None: until one completes;
        0: no wait, and no syscall if nothing is queued or due), then put every task whose
        operation completed on the ready queue. Reaping needs no syscall.

        Called once per turn of the kernel, so what it touches is bound once, in __init__: a
        turn costs the kernel this one call more than when stage 1 was written in its loop."""
        self._enter(timeout)
        completed = self._reap()
        if not completed:
            return
        in_flight_pop = self._in_flight_pop
        ready_push = self._ready_push
        for user_data, res in completed:
            task = in_flight_pop(user_data, None)
            # No task: an ASYNC_CANCEL's own answer (ignored), or the wake-up.
            if task is None:
                if user_data == WAKE_USER_DATA:
                    self._arm_wake_up()
                    self._on_wake()
                continue
            if task.state is not OPERATION:  # abandoned (see Loop.run): just release
                self.give_back(task, res)
                continue
            pending = task.pending
            if pending is None:
                # Turned into the value only as the task runs (stage 3): a timeout that
                # expires in stage 2 of this turn can still give the result back.
                task.reaped = res
            else:  # interrupted meanwhile: the interruption wins, the result is kept
                task.pending = None
                self.give_back(task, res)
                task.throw = pending
            task.state = READY
            ready_push(task)

    # ------------------------------------------------------------------ the I/O trap

    # The kernel files this in its trap table (Loop._traps), under the name of the kernel's
    # own handlers: it is one of its handlers, kept beside the I/O.
    def _trap_operation(self, task: Task, request: tuple) -> Any:
        _, opcode, sock, addr, length, pinned, complete, off, op_flags = request
        fd = sock.fileno()
        if fd < 0:
            raise OSError(errno.EBADF, f"cannot operate on a closed socket: {sock!r}")
        self.ring.prepare_op(opcode, fd, addr, length, off, op_flags, task.id)
        self.in_flight[task.id] = task
        task.complete = complete
        task.pinned = pinned
        task.state = OPERATION
        task.waiting_on = sock
        return SUSPEND

    def interrupt(self, task: Task, error: BaseException) -> None:
        """Interrupt an operation in flight: it cannot be undone at once.

        Linux owns its buffer until its completion. So Linux is asked to cancel it and the
        error is held back (``task.pending``); the task stays suspended until the operation's
        CQE arrives, which releases the buffer and resumes the task with the error (see
        :meth:`wait`). If the operation won the race (it completed before the cancel reached
        it), its result is not lost: its completer keeps it for the next call on that socket
        (``leftovers.py``), as the bytes would have stayed in the socket for a
        readiness loop.
        """
        if task.pending is None:  # ASYNC_CANCEL's addr: the user_data of what to cancel
            self.ring.prepare(OP_ASYNC_CANCEL, addr=task.id, user_data=CANCEL_USER_DATA)
        task.pending = error

    @staticmethod
    def deliver(task: Task) -> tuple[Any, BaseException | None]:
        """A completed operation's (value, error) for the task about to run; the buffer goes."""
        complete, pinned, res = task.complete, task.pinned, task.reaped
        task.complete = task.pinned = task.reaped = None
        try:
            return complete(res, pinned, task.waiting_on, interrupted=False), None
        except Exception as error:
            return None, error

    @staticmethod
    def give_back(task: Task, res: int) -> None:
        """Release an operation its task will not take: its buffer goes back to the pool, and
        what it received is kept for the next call on that socket (``leftovers.keep``),
        as the bytes would have stayed in the socket for a readiness loop."""
        complete, pinned = task.complete, task.pinned
        task.complete = task.pinned = task.reaped = None
        complete(res, pinned, task.waiting_on, interrupted=True)

    # ------------------------------------------------------------------ the threads' wake-up

    def open_wake_up(self, on_wake: Callable[[], None]) -> None:
        """From now on, wake() from any thread ends the wait, and on_wake runs in stage 1;
        a byte a signal writes to ``wake_fd`` ends it too. Once: later calls change nothing.

        The wake-up is a socketpair whose read end has a RECV in flight in the ring: a worker
        writes a byte, the RECV completes, its CQE ends the wait like any other completion,
        and it is submitted again once collected. A socket, not an eventfd: CPython's C-level
        signal handler writes one byte to the fd ``signal.set_wakeup_fd`` names, which an
        eventfd refuses (it takes 8)."""
        if self._wake_pair is not None:
            return
        reader, writer = wake_pair()
        self._wake_pair = (reader, writer)
        self.wake_fd = writer.fileno()
        self._on_wake = on_wake
        self._arm_wake_up()

    def _arm_wake_up(self) -> None:
        address = ctypes.addressof(self._wake_buffer)
        self.ring.prepare(
            OP_RECV,
            fd=self._wake_pair[0].fileno(),
            addr=address,
            length=WAKE_BYTES,
            user_data=WAKE_USER_DATA,
        )

    def wake(self) -> None:
        """End the kernel's wait, from a worker thread: one byte into the wake-up socket."""
        # A full buffer means a wake-up is pending anyway; a closed socket, that we closed.
        with contextlib.suppress(OSError):
            self._wake_pair[1].send(b"\0")

    def close(self) -> None:
        """Have Linux cancel whatever is still in flight and wait for every completion, so
        that no buffer is freed while Linux may still write into it; then unmap the ring.
        First, the connections kept for a listener closed since are closed
        (``leftovers.close_orphaned``)."""
        leftovers.close_orphaned()  # completed results: Linux is done with them
        ring = self.ring
        ring.recount()  # a Ctrl-C may have left the count behind (Ring.recount)
        if self._wake_pair is not None:
            self.wake()  # completes the wake-up's RECV
        if self.in_flight:
            ring.prepare(OP_ASYNC_CANCEL, op_flags=CANCEL_ANY, user_data=CANCEL_USER_DATA)
        deadline = monotonic() + SHUTDOWN_GRACE
        while (self.in_flight or self._wake_pair is not None) and monotonic() < deadline:
            ring.enter(max(deadline - monotonic(), 0))
            for user_data, _ in ring.reap():
                if user_data == WAKE_USER_DATA:
                    for sock in self._wake_pair:
                        sock.close()
                    self._wake_pair, self.wake_fd = None, -1
                    continue
                task = self.in_flight.pop(user_data, None)
                if task is not None:
                    task.complete = task.pinned = None
        if self.in_flight or self._wake_pair is not None:
            # Linux still owns these buffers: keep them alive for the life of the process
            # rather than free memory it may write into. Never seen; logged if it happens.
            _orphans.append((ring, self.in_flight, self._wake_buffer))
            logger.error("%d io_uring operations did not complete at close", len(self.in_flight))
            return
        ring.close()


_orphans: list = []  # (ring, operations, buffer) whose completions never came: never freed
