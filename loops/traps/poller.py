"""The readiness side of the kernel: epoll, the fds it watches, and the threads' wake-up.

The kernel (:mod:`loops.traps.kernel`) schedules; this module does its I/O the readiness way.
A task that finds a socket not ready traps ``read`` or ``write``: the socket's
:class:`IORecord` notes the task (``Poller._trap_io``) and epoll watches that direction, a
record kept across waits so that a wait is a store, not an ``epoll_ctl``. Stage 1 of the
kernel's turn calls :meth:`Poller.wait`, which puts each woken task back on the ready queue;
the task then makes the call itself. Its twin, :mod:`loops.completions.proactor`, answers the
same four calls (``wait``, ``wake``, ``open_wake_up``, ``close``) and hands Linux the whole
operation instead. epoll is read directly: ``selectors`` would build a ``(SelectorKey, events)``
pair per ready fd through a method call, only for this module to take it apart again (the
callbacks loop's ``readiness.py`` gives the commands that compare the two). Any bit but
``POLLIN``/``POLLOUT`` (error, hang-up) wakes whichever directions are watched, as selectors
does, so a task waiting on a broken socket learns of the error from its next call.
"""

# twin of loops/scopes/poller.py

from __future__ import annotations

import collections
import contextlib
import select
import socket
from collections.abc import Callable
from typing import Any

from loops._poll import new_poller
from loops._signals import wake_pair
from loops.traps.task import READING, READY, SUSPEND, WRITING, Task

IN, OUT = select.POLLIN, select.POLLOUT  # the interest bits
# Any bit but "writable" (data, EOF, an error, a hang-up) reaches a reader, any bit but
# "readable" reaches a writer: the way selectors reports them too.
WAKES_READER, WAKES_WRITER = ~OUT, ~IN


class IORecord:
    """One watched fd, kept across waits: the events registered and the tasks waiting on them.

    Kept registered while its tasks come and go, so a wait is a store here and never an
    epoll_ctl call. The same record, with the same fields, in each loop that keeps its own
    epoll set: callbacks, futures, greenlets, roundrobin, scopes and traps.
    """

    __slots__ = ("events", "fd", "fileobj", "reader", "writer")

    def __init__(self, fileobj: Any, fd: int, events: int) -> None:
        self.fileobj = fileobj  # the socket
        self.fd = fd
        self.events = events  # the poll bits registered (IN, OUT)
        self.reader: Task | None = None  # the task waiting to read, if any
        self.writer: Task | None = None  # the task waiting to write, if any


class Poller:
    """The fds the kernel watches, their records, epoll, and the threads' wake-up socket."""

    def __init__(self, ready: collections.deque[Task]) -> None:
        self._ready_push = ready.append  # a task whose fd is ready goes on the kernel's queue
        self.epoll = new_poller()  # epoll on Linux
        self.records: dict[int, IORecord] = {}  # fd -> its IORecord
        self._wake_pair: tuple[socket.socket, socket.socket] | None = None  # threads wake us
        self.wake_fd = -1  # the wake-up's write end: threads and signals write a byte to it
        self._wake_reader_fd = -1  # in epoll, in no record: no task waits on it
        self._on_wake: Callable[[], None] | None = None  # the kernel's, when woken

    # ------------------------------------------------------------------ the wait (stage 1)

    def wait(self, timeout: float | None) -> None:
        """Wait up to timeout seconds (None: until an fd is ready), then put every task whose
        fd is ready on the ready queue. With nothing watched, a zero timeout skips the poll.

        Called once per turn of the kernel, so the ready queue's append is bound once, in
        __init__: a turn costs the kernel this one call more than when stage 1 was written in
        its loop. epoll is looked up at each call: drop_ghosts replaces it."""
        records = self.records
        if timeout == 0 and not records:
            return
        ready_push = self._ready_push
        for fd, bits in self.epoll.poll(timeout):
            record = records.get(fd)
            # A ghost (see drop_ghosts) shows as readiness for an fd nobody watches, or,
            # when a new socket reuses its number, as bits that socket never asked for,
            # or as wake-ups for nothing (api.py's _woken_for_nothing asks for the rebuild).
            if record is None:
                if fd == self._wake_reader_fd:
                    self._woken()
                else:
                    self.drop_ghosts()
                continue
            if bits & WAKES_READER:
                if record.events & IN:
                    task = record.reader
                    if task is not None:
                        record.reader = None
                        task.state = READY
                        ready_push(task)
                    else:  # nobody reads this fd any more: stop watching it
                        self.unwatch(record, IN)
                elif not bits & WAKES_WRITER:  # "readable" where it was never asked
                    self.drop_ghosts()
                    continue
            if bits & WAKES_WRITER:
                if record.events & OUT:
                    task = record.writer
                    if task is not None:
                        record.writer = None
                        task.state = READY
                        ready_push(task)
                    else:
                        self.unwatch(record, OUT)
                elif not bits & WAKES_READER:  # "writable" where it was never asked
                    self.drop_ghosts()

    # ------------------------------------------------------------------ the I/O traps
    # The kernel files these in its trap table and its undo table (Loop._traps, Loop._unwait),
    # under the names of the kernel's own handlers: they are its handlers, kept beside the I/O.

    def _trap_io(self, task: Task, request: tuple) -> Any:
        """The kernel's handler of ``read`` and ``write``: wait until sock is ready for it."""
        name, sock = request
        reading = name == "read"
        bit = IN if reading else OUT
        fd = sock.fileno()
        record = self.records.get(fd)
        if record is None or record.fileobj is not sock:  # first wait, or the fd was reused
            record = self.watch(fd, sock, bit)
        elif (waiter := record.reader if reading else record.writer) is not None:
            raise RuntimeError(f"{waiter!r} is already waiting to {name} {sock!r}")
        elif not record.events & bit:  # watched for the other direction only: add this one
            record.events |= bit
            self.epoll.modify(fd, record.events)
        if reading:
            record.reader = task
            task.state = READING
        else:
            record.writer = task
            task.state = WRITING
        task.waiting_on = record
        return SUSPEND

    def _trap_drop_ghosts(self, task: Task, request: tuple) -> None:
        """The kernel's handler of ``drop_ghosts``: answered at once; the caller then waits."""
        self.drop_ghosts()

    def _unwait_reader(self, task: Task) -> None:
        """Undo a READING wait (the task is cancelled or times out)."""
        record = task.waiting_on
        record.reader = None
        self.unwatch(record, IN)

    def _unwait_writer(self, task: Task) -> None:
        """Undo a WRITING wait."""
        record = task.waiting_on
        record.writer = None
        self.unwatch(record, OUT)

    # ------------------------------------------------------------------ registrations

    def watch(self, fd: int, sock: Any, bit: int) -> IORecord:
        """Register sock's fd for bit, in a new record (replacing a closed socket's)."""
        if fd < 0:
            raise ValueError(f"cannot wait on a closed socket: {sock!r}")
        if fd in self.records:  # a closed socket's fd, now reused: forget the old registration
            del self.records[fd]
            with contextlib.suppress(OSError):  # epoll dropped the closed file by itself
                self.epoll.unregister(fd)
        self.epoll.register(fd, bit)
        record = self.records[fd] = IORecord(sock, fd, bit)
        return record

    def unwatch(self, record: IORecord, bit: int) -> None:
        """Stop watching record's fd for bit (nobody waits for it), unregistering if idle."""
        fd = record.fd
        if self.records.get(fd) is not record:
            return  # a closed socket's record, its number reused since: not ours to touch
        record.events &= ~bit
        # OSError: the socket was closed under us, and epoll dropped it by itself.
        with contextlib.suppress(OSError):
            if record.events:
                self.epoll.modify(fd, record.events)
                return
            self.epoll.unregister(fd)
        del self.records[fd]

    def drop_ghosts(self) -> None:
        """Move every live registration to a fresh epoll instance, and close the old one.

        epoll registers a *file* under an fd number. Once the number is closed while a dup
        (``os.dup``, ``socket.fromfd``, a child process) keeps the file open, epoll goes on
        reporting it under the dead number, and nothing can unregister it: ``epoll_ctl`` takes
        a live number. A readiness event for an fd the kernel no longer watches is that ghost;
        left alone it wakes the poll at once, forever (100 % CPU). Only closing the epoll
        instance drops it. Rare (a user closed a socket the kernel was watching, behind a
        dup), so rebuilding costs one ``epoll_ctl`` per live fd, once.
        """
        old, self.epoll = self.epoll, new_poller()
        if self._wake_reader_fd >= 0:
            self.epoll.register(self._wake_reader_fd, IN)
        for fd, record in list(self.records.items()):
            if record.fileobj.fileno() == fd:
                self.epoll.register(fd, record.events)
                continue
            del self.records[fd]  # closed as well: its waiters learn so from their next call
            for task in record.reader, record.writer:
                if task is not None:
                    task.state = READY
                    self._ready_push(task)
        old.close()

    # ------------------------------------------------------------------ the threads' wake-up

    def open_wake_up(self, on_wake: Callable[[], None]) -> None:
        """From now on, wake() from any thread ends the wait, and on_wake runs in stage 1;
        a byte a signal writes to ``wake_fd`` ends it too. Once: later calls change nothing.

        The wake-up is a socketpair whose read end epoll watches: a worker writes a byte,
        epoll reports the read end readable (the Python Cookbook's ``ThreadPoolHandler``
        idea). It is in no record, since no task waits on it: ``records`` stays the fds tasks
        wait on, which is what the kernel's deadlock test counts."""
        if self._wake_pair is not None:
            return
        reader, writer = wake_pair()
        self._wake_pair = (reader, writer)
        self._on_wake = on_wake
        self.wake_fd = writer.fileno()
        self._wake_reader_fd = reader.fileno()
        self.epoll.register(self._wake_reader_fd, IN)

    def wake(self) -> None:
        """End the kernel's wait, from a worker thread: one byte into the wake-up socket."""
        # A full buffer means a wake-up is pending anyway; a closed socket, that we closed.
        with contextlib.suppress(OSError):
            self._wake_pair[1].send(b"\0")

    def _woken(self) -> None:
        """The wake-up socket is readable: empty it, then the kernel collects (on_wake)."""
        reader = self._wake_pair[0]
        try:
            while reader.recv(4096):
                pass
        except BlockingIOError:
            pass
        self._on_wake()

    def close(self) -> None:
        """Close epoll and the wake-up socket; the records are dropped."""
        self.epoll.close()
        self.records.clear()
        if self._wake_pair is not None:
            for sock in self._wake_pair:
                sock.close()
