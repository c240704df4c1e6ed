"""Readiness: one epoll registration per fd, holding that fd's reader and writer handles.

This is what ``selectors.DefaultSelector`` is on Linux, written out small because the reactor
reads it on every iteration. ``records[fd]`` is an :class:`IORecord` (the fd's file object, its
registered events, its reader and writer handles); a new interest changes the epoll mask
(``epoll_ctl`` MOD), never unregisters and registers again; dropping the last one unregisters.
``epoll.poll()`` is read straight into the handles rather than through ``selectors`` (why, and
the commands that measure it, above :class:`Readiness`). Where epoll is missing (macOS, the
BSDs), ``select.poll`` stands in; never ``select()``: its 1024-fd ceiling.
"""

from __future__ import annotations

import contextlib
import select
from typing import Any

from loops._poll import new_poller

# Event bits: POLLIN/POLLOUT have the same values as EPOLLIN/EPOLLOUT (1 and 4).
READ, WRITE = select.POLLIN, select.POLLOUT  # what a reader / a writer waits for
# Which returned bits wake which side: anything but "only writable" wakes the reader (an
# error or a hang-up must reach the reader, or it would never learn of it), and anything but
# "only readable" wakes the writer; this is how selectors turns poll events into EVENT_*.
WAKES_READER, WAKES_WRITER = ~WRITE, ~READ


class IORecord:
    """One watched fd: the events registered for it and the handles waiting on them.

    The same record, with the same fields, in each loop that keeps its own epoll set:
    callbacks, futures, greenlets, roundrobin, scopes and traps (what ``selectors`` calls a
    ``SelectorKey``, with the reader and the writer in place of its ``data``).
    """

    __slots__ = ("events", "fd", "fileobj", "reader", "writer")

    def __init__(self, fileobj: Any, fd: int, events: int) -> None:
        self.fileobj = fileobj  # what the caller passed: a socket, a file, or the fd itself
        self.fd = fd
        self.events = events  # the poll bits registered: READ if a reader, WRITE if a writer
        self.reader: Any = None  # the Handle queued when the fd is readable
        self.writer: Any = None  # the Handle queued when the fd is writable


def fileno(fileobj: Any) -> int:
    """The fd of an int or of an object with fileno(); ValueError for anything else."""
    if isinstance(fileobj, int):
        fd = fileobj
    else:
        try:
            fd = int(fileobj.fileno())
        except (AttributeError, TypeError, ValueError):
            raise ValueError(f"Invalid file object: {fileobj!r}") from None
    if fd < 0:
        raise ValueError(f"Invalid file descriptor: {fd}")
    return fd


# Why not ``selectors`` itself: its ``select()`` makes a ``(key, events)`` pair per ready fd
# through a method call, only for the reactor to unpack it again. Reading ``epoll.poll()``
# straight into the handles keeps the same semantics (an error or hang-up wakes both
# directions, as selectors reports it) for less work per readiness event. The two calls alone,
# with 100 ready sockets (on the lab's 2-core machine the first took about twice as long as the
# second):
#
#     python -m timeit -s "import selectors, socket; s = selectors.DefaultSelector(); \
#       p = [socket.socketpair() for _ in range(100)]; [b.send(b'x') for a, b in p]; \
#       [s.register(a, selectors.EVENT_READ) for a, b in p]" "s.select(0)"
#     python -m timeit -s "import select, socket; e = select.epoll(); \
#       p = [socket.socketpair() for _ in range(100)]; [b.send(b'x') for a, b in p]; \
#       [e.register(a.fileno(), select.POLLIN) for a, b in p]" "e.poll(0)"
#
# What it is worth to a whole server is the echo rows of ``reports/bench.md``: ``callbacks``
# against ``selectors-floor``, a bare selectors loop (``workloads/echo/native/floor.py``).
class Readiness:
    """The fds a loop watches: their records, and the poller that reports them ready."""

    def __init__(self) -> None:
        self.poller = new_poller()
        self.records: dict[int, IORecord] = {}  # fd -> its IORecord

    def watch(self, fileobj: Any, event: int, handle: Any) -> None:
        """Make handle the fd's reader (READ) or writer (WRITE), cancelling any previous one."""
        fd = fileno(fileobj)
        record = self.records.get(fd)
        if record is not None and _closed_since(record.fileobj, fd):
            # Closed without remove_reader/remove_writer, and the number now belongs to a
            # new file: the old handles must never run for it. If a dup keeps the old file
            # open, epoll holds it under this number still, and would report its readiness
            # as the new socket's (a handle run for nothing, at once, forever): rebuilt
            # without it. Only a program that closed a watched socket gets here, so the
            # rebuild (an epoll_ctl per live fd) stays off the common path.
            self.drop_ghosts()
            record = None
        if record is None:
            self.poller.register(fd, event)  # first: a refused fd leaves nothing behind
            record = self.records[fd] = IORecord(fileobj, fd, event)
        elif not record.events & event:
            try:
                self.poller.modify(fd, record.events | event)
            except FileNotFoundError:
                # The same story for an fd registered as a bare int: only epoll can tell,
                # having dropped the closed file by itself (or kept it, behind a dup).
                self._forget(fd)
                self.drop_ghosts()
                self.poller.register(fd, event)
                record = self.records[fd] = IORecord(fileobj, fd, event)
            else:
                record.events |= event
        if event == READ:
            replaced, record.reader = record.reader, handle
        else:
            replaced, record.writer = record.writer, handle
        record.fileobj = fileobj
        if replaced is not None:
            replaced.cancel()

    def unwatch(self, fileobj: Any, event: int) -> bool:
        """Drop the fd's reader or writer; True if there was one. Works on a closed socket."""
        fd = self._find(fileobj)
        record = self.records.get(fd)
        if record is None or not record.events & event:
            return False
        if event == READ:
            handle, record.reader = record.reader, None
        else:
            handle, record.writer = record.writer, None
        record.events &= ~event
        # OSError: the fd is closed already, and epoll dropped it by itself.
        with contextlib.suppress(OSError):
            if not record.events:
                del self.records[fd]
                self.poller.unregister(fd)
            else:
                self.poller.modify(fd, record.events)
        handle.cancel()  # it may already be in the ready queue for this iteration
        return True

    def drop_ghosts(self) -> None:
        """Move every live registration to a fresh poller, and close the old one.

        epoll registers a *file* under an fd number. Once the number is closed while a dup
        (``os.dup``, ``socket.fromfd``, a child process) keeps the file open, epoll goes on
        reporting it under the dead number, and nothing can unregister it: ``epoll_ctl`` takes
        a live number. Readiness reported for an fd nobody watches is that ghost; left alone it
        wakes every poll at once, forever (100 % CPU). Only closing the epoll instance drops
        it. Rare (a program closed a watched fd behind a dup), so rebuilding costs one
        ``epoll_ctl`` per live fd, once. Registrations whose file was closed too are dropped.
        """
        old, self.poller = self.poller, new_poller()
        for fd, record in list(self.records.items()):
            if _closed_since(record.fileobj, fd):
                _cancel_handles(self.records.pop(fd))
                continue
            try:
                self.poller.register(fd, record.events)
            except OSError:  # a bare fd number, closed as well
                _cancel_handles(self.records.pop(fd))
        old.close()

    def close(self) -> None:
        """Close the poller; the records (and their handles) are dropped."""
        for record in self.records.values():
            _cancel_handles(record)
        self.records.clear()
        self.poller.close()

    def _find(self, fileobj: Any) -> int:
        try:
            return fileno(fileobj)
        except ValueError:
            # A socket closed before remove_reader has fileno() -1: find it by identity.
            for fd, record in self.records.items():
                if record.fileobj is fileobj:
                    return fd
            raise

    def _forget(self, fd: int) -> None:
        _cancel_handles(self.records.pop(fd))
        with contextlib.suppress(OSError):  # epoll already dropped the closed file
            self.poller.unregister(fd)


def _cancel_handles(record: IORecord) -> None:
    for handle in (record.reader, record.writer):
        if handle is not None:
            handle.cancel()


def _closed_since(owner: Any, fd: int) -> bool:
    """True if the object registered under fd has been closed (its fileno() moved on)."""
    if isinstance(owner, int):
        return False  # a bare number cannot tell; epoll's ENOENT will
    try:
        return owner.fileno() != fd
    except (OSError, ValueError):
        return True
