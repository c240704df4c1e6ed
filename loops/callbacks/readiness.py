"""Readiness: one epoll registration per fd, holding that fd's reader and writer handles.

This is what ``selectors.DefaultSelector`` is on Linux, written out small because the reactor
reads it on every iteration. ``registrations[fd]`` is ``[reader, writer, file object]`` and the
epoll mask always says "reader present, writer present": a new interest changes the mask
(``epoll_ctl`` MOD), never unregisters and registers again; dropping the last one unregisters.

Why not ``selectors`` itself: its ``select()`` makes a ``(key, events)`` pair per ready fd
through a method call, only for the reactor to unpack it again; on a busy socket server that
is about 40% of the loop's own cost per readiness event (measured; see the folder README).
Reading ``epoll.poll()`` straight into the handles keeps the same semantics (an error or
hang-up wakes both directions, as selectors reports it) at half the cost.

Where epoll is missing (macOS, the BSDs), ``select.poll`` stands in: the same calls and the
same event bits, with the timeout in milliseconds. Never ``select()``: its 1024-fd ceiling.
"""

from __future__ import annotations

import contextlib
import math
import select
from typing import Any

READER, WRITER = 0, 1  # the two handle slots of a registration

# Event bits: POLLIN/POLLOUT have the same values as EPOLLIN/EPOLLOUT (1 and 4).
_IN, _OUT = select.POLLIN, select.POLLOUT
MASKS = (_IN, _OUT)  # the poll mask each slot asks for
# Which returned bits wake which side: anything but "only writable" wakes the reader (an
# error or a hang-up must reach the reader, or it would never learn of it), and anything but
# "only readable" wakes the writer; this is how selectors turns poll events into EVENT_*.
WAKES_READER, WAKES_WRITER = ~_OUT, ~_IN


class PollAsEpoll:
    """``select.poll`` behind the calls of ``select.epoll`` that Readiness uses."""

    def __init__(self) -> None:
        self._poll = select.poll()
        self.register = self._poll.register
        self.modify = self._poll.modify
        self.unregister = self._poll.unregister

    def poll(self, timeout: float = -1, maxevents: int = -1) -> list[tuple[int, int]]:
        if timeout < 0:
            return self._poll.poll()
        # Round up, like epoll: waking a little late is fine, waking early is a spin.
        return self._poll.poll(math.ceil(timeout * 1e3))

    def close(self) -> None:
        pass  # a poll object holds no fd


def new_poller() -> Any:
    """The fastest readiness primitive here: epoll on Linux, poll elsewhere."""
    return select.epoll() if hasattr(select, "epoll") else PollAsEpoll()


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


class Readiness:
    """The fds a loop watches: their handles, and the poller that reports them ready."""

    def __init__(self) -> None:
        self.poller = new_poller()
        self.registrations: dict[int, list] = {}  # fd -> [reader, writer, file object]

    def watch(self, fileobj: Any, slot: int, handle: Any) -> None:
        """Make handle the fd's reader or writer, replacing (and cancelling) any previous one."""
        fd = fileno(fileobj)
        registration = self.registrations.get(fd)
        if registration is not None and _closed_since(registration[2], fd):
            # Closed without remove_reader/remove_writer, and the number now belongs to a
            # new file: the old handles must never run for it.
            self._forget(fd)
            registration = None
        if registration is None:
            self.poller.register(fd, MASKS[slot])  # first: a refused fd leaves nothing behind
            registration = self.registrations[fd] = [None, None, fileobj]
        elif registration[slot] is None:
            try:
                self.poller.modify(fd, _IN | _OUT)
            except FileNotFoundError:
                # The same story for an fd registered as a bare int: only epoll can tell,
                # having dropped the closed file by itself.
                self._forget(fd)
                self.poller.register(fd, MASKS[slot])
                registration = self.registrations[fd] = [None, None, fileobj]
        replaced = registration[slot]
        registration[slot] = handle
        registration[2] = fileobj
        if replaced is not None:
            replaced.cancel()

    def unwatch(self, fileobj: Any, slot: int) -> bool:
        """Drop the fd's reader or writer; True if there was one. Works on a closed socket."""
        fd = self._find(fileobj)
        registration = self.registrations.get(fd)
        if registration is None or registration[slot] is None:
            return False
        handle = registration[slot]
        registration[slot] = None
        # OSError: the fd is closed already, and epoll dropped it by itself.
        with contextlib.suppress(OSError):
            if registration[1 - slot] is None:
                del self.registrations[fd]
                self.poller.unregister(fd)
            else:
                self.poller.modify(fd, MASKS[1 - slot])
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
        for fd, registration in list(self.registrations.items()):
            if _closed_since(registration[2], fd):
                _cancel_handles(self.registrations.pop(fd))
                continue
            mask = (MASKS[READER] if registration[READER] else 0) | (
                MASKS[WRITER] if registration[WRITER] else 0
            )
            try:
                self.poller.register(fd, mask)
            except OSError:  # a bare fd number, closed as well
                _cancel_handles(self.registrations.pop(fd))
        old.close()

    def close(self) -> None:
        """Close the poller; the registrations (and their handles) are dropped."""
        for registration in self.registrations.values():
            _cancel_handles(registration)
        self.registrations.clear()
        self.poller.close()

    def _find(self, fileobj: Any) -> int:
        try:
            return fileno(fileobj)
        except ValueError:
            # A socket closed before remove_reader has fileno() -1: find it by identity.
            for fd, registration in self.registrations.items():
                if registration[2] is fileobj:
                    return fd
            raise

    def _forget(self, fd: int) -> None:
        _cancel_handles(self.registrations.pop(fd))
        with contextlib.suppress(OSError):  # epoll already dropped the closed file
            self.poller.unregister(fd)


def _cancel_handles(registration: list) -> None:
    for handle in registration[:2]:
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
