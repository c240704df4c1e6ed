"""The coroutines style of the roundrobin loop: awaitables that yield plain request tuples.

Each waiting function is a ``@types.coroutine`` generator (or an ``async def`` built on them)
that yields one of the requests listed in :mod:`.scheduler` and gets the loop's answer back as
the value of its ``yield``. What waits for nothing talks to the running loop directly instead
and costs no tick: ``spawn`` (queue a task) and the Queue's wake-ups (make a parked task
runnable). Reading this file top to bottom shows the whole vocabulary a task has.

Two choices follow from the idea that every task gets exactly one turn per tick:
- every socket call starts with a checkpoint (one tick) before it tries the call, so a
  connection that always has data cannot starve the others; the call is then tried at once
  and the task waits for readiness only on BlockingIOError. A cancellation delivered at the
  checkpoint or the readiness wait never loses data: nothing has been received yet. Two
  fenced exceptions keep the turn without adding work: a recv on a socket whose last try found
  nothing waits for readiness at once (``_drained``), and a sendall right after its recv is
  still in the turn that recv's yield began (``_reply_in_turn``).
- ``timeout_after`` arms a deadline on the calling task, in the timer heap beside the sleeps;
  when it passes, the loop throws Expired (a CancelledError) into the work where it waits, and
  ``timeout_after`` turns it into the builtin TimeoutError. (It once ran the work as a child
  task and cancelled it: two ticks late, so a sleep due just after the deadline ran first.)
"""

from __future__ import annotations

import itertools
import os
import types
import weakref
from collections import deque
from socket import SO_ERROR, SOL_SOCKET

from loops.contract import check_nonblocking
from loops.roundrobin.scheduler import (
    COROUTINE_TYPES,
    CancelledError,
    Deadline,
    Expired,
    Loop,
    Task,
    running_loop,
)

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

_NEXT_TICK = ("yield",)  # one shared tuple: a checkpoint allocates nothing


def run(coro):
    """Run coro on a new loop until it ends; return its result or raise its exception."""
    if not isinstance(coro, COROUTINE_TYPES):
        raise TypeError(f"run() needs a coroutine (an async def called), got {coro!r}")
    loop = Loop()
    try:
        return loop.run(coro)
    finally:
        loop.close()


def now() -> float:
    """The running loop's clock, in seconds."""
    return running_loop().time()


def _check_seconds(seconds, caller: str) -> None:
    """Refuse a delay that is not a number, or NaN, before any state changes (a NaN deadline
    would sit in the heap comparing false with everything)."""
    try:
        seconds + 0.0
    except TypeError:
        raise TypeError(f"{caller}() needs a number of seconds, got {seconds!r}") from None
    if seconds != seconds:
        raise ValueError(f"{caller}(nan): a delay must be a number of seconds")


@types.coroutine
def sleep(seconds: float):
    """Suspend the calling task for at least seconds (0 or less: until the next tick)."""
    _check_seconds(seconds, "sleep")
    if seconds > 0:
        yield ("sleep", seconds)
    else:
        yield _NEXT_TICK


async def spawn(coro) -> Task:
    """Start coro as a concurrent task, which first runs in the next tick.

    The one call that is not a request: queueing a task waits for nothing, so it costs the
    spawner no tick.
    """
    return running_loop().spawn(coro)


def _check_task(task) -> None:
    if not isinstance(task, Task):
        raise TypeError(f"expected a task made by spawn(), got {task!r}")
    if not task.done and task not in running_loop()._tasks:
        # Its end would wake us on another loop's runnable list, from another thread.
        raise RuntimeError(f"{task!r} belongs to another loop (spawned by another run)")


@types.coroutine
def join(task: Task):
    """Wait until task has ended; its result, or its exception raised here."""
    _check_task(task)
    if not task.done:
        yield ("join", task)
    task.joined = True
    if task.reporter is not None:
        task.reporter.error = None  # seen: nothing to report
    if task.error is not None:
        raise task.error
    return task.result


@types.coroutine
def cancel(task: Task):
    """Throw CancelledError into task where it waits, and wait until it has ended."""
    _check_task(task)
    if not task.done:
        yield ("cancel", task)


@types.coroutine
def _park(waiters: deque, seconds: float | None = None):
    """Wait in waiters until woken (True) or, given seconds, until they pass (False)."""
    return (yield ("park", waiters, seconds))


async def timeout_after(seconds: float | None, coro):
    """Run coro; if it has not ended after seconds, cancel it and raise TimeoutError.

    The deadline is armed on the calling task, in the loop's timer heap beside every sleep, so
    deadlines that pass together act in deadline order whatever kind of wait they end. When it
    passes, Expired (a CancelledError) is thrown into coro where it waits: its cleanup runs,
    and the TimeoutError is raised here.
    """
    if seconds is None:
        return await coro
    try:
        _check_seconds(seconds, "timeout_after")
    except (TypeError, ValueError):
        if hasattr(coro, "close"):
            coro.close()  # it will never run: do not leave it to warn "never awaited"
        raise
    deadline = Deadline()  # made here, so an Expired that comes before the work starts is known
    started = False
    try:
        await _arm(deadline, seconds)
        started = True
        return await coro
    except Expired as expired:
        if expired.deadline is not deadline:
            raise  # an outer timeout_after's deadline: its business
        raise TimeoutError(f"timed out after {seconds} s") from None
    finally:
        running_loop().clear_deadline(deadline)
        if not started and hasattr(coro, "close"):
            coro.close()  # it will never run: do not leave it to warn "never awaited"


@types.coroutine
def _arm(deadline: Deadline, seconds: float):
    yield ("deadline", seconds, deadline)


# -- sockets: a checkpoint, then the call, then readiness waits only as long as it would block --


@types.coroutine
def _io(direction: str, sock, call, *args):
    check_nonblocking(sock)
    yield _NEXT_TICK
    idle = -1  # wake-ups in this call that found nothing (-1: not woken yet): _woken_for_nothing
    while True:
        try:
            return call(*args)
        except BlockingIOError:
            idle = _woken_for_nothing(idle) if idle >= 0 else 0
            yield (direction, sock)


# twin of loops/traps/api.py: WAKEUPS_FOR_NOTHING_BEFORE_REBUILD
# The rare path, fenced here: a socket call that fails with EAGAIN right after the loop woke
# it for that socket was woken for nothing. Level-triggered readiness that is real cannot do
# that twice in a row (the data or the room is there until someone takes it; only another
# process sharing the socket can), but a ghost can, forever: a socket closed behind a dup,
# whose number a new socket reuses, stays in epoll under that number (see Loop._drop_ghost),
# and its readiness looks like the new socket's. So the second wake-up for nothing in one call
# has the loop rebuild its epoll from its live registrations, which drops the ghost; once
# per call, so a socket shared with another process costs one rebuild per contested call, not
# one per wake-up. Costs nothing on the common path: the count lives in the calling frame and
# moves only after an EAGAIN that followed a wait.
WAKEUPS_FOR_NOTHING_BEFORE_REBUILD = 2


# twin of loops/traps/api.py: _woken_for_nothing
def _woken_for_nothing(idle: int) -> int:
    """Count one more wake-up that found nothing; at the limit, drop ghosts (see above)."""
    idle += 1
    if idle == WAKEUPS_FOR_NOTHING_BEFORE_REBUILD:
        running_loop().drop_ghosts()
    return idle


TRY_FIRST_EVERY = 8  # of a drained socket's recvs, one in this many tries first anyway


# twin of loops/traps/api.py: _drained
# Speed trick, fenced here: the fds whose last try at a recv found nothing. On a
# request/response connection the recv right after our reply finds nothing (the peer answers
# only once it has the reply): a syscall and a BlockingIOError per request. So a socket whose
# try found nothing is drained, and its recvs wait for readiness first instead (always correct:
# epoll is level-triggered, data already there wakes us at once); here a try comes after a
# checkpoint tick, during which the fd may be reported ready with nobody waiting (the loop then
# narrows its registration, and the wait registers it again: two epoll_ctl), so a wait first
# is the checkpoint, with the registration in place when the data comes. One drained recv in
# TRY_FIRST_EVERY (counted across sockets) tries first anyway, and a try that finds data puts
# the socket back on the optimistic path: where the peer is ahead (a stream, a pipelining
# client, a server slower than its clients) trying first does not fail, and waiting would cost
# a turn of the loop per call. Keyed by fd for a cheap lookup, holding a weak reference so
# that a socket reusing a closed socket's fd starts optimistic and no socket is kept alive.
# Measured (echo, 1 KiB x 100 connections): the folder README has the figures and the command.
_drained: dict[int, weakref.ref] = {}  # fd -> the socket whose last try found nothing
_probes = itertools.count(1)  # drained recvs so far (TRY_FIRST_EVERY)


@types.coroutine
def recv(sock, n: int):
    """Receive up to n bytes; b'' at end of stream."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    fd = sock.fileno()
    drained = _drained.get(fd)
    idle = -1  # wake-ups in this call that found nothing (-1: not woken yet): _woken_for_nothing
    if drained is not None and drained() is sock and next(_probes) % TRY_FIRST_EVERY:
        yield ("read", sock)  # found nothing lately: wait first (_drained)
        idle = 0
    else:
        yield _NEXT_TICK
    while True:
        try:
            data = sock.recv(n)
        except BlockingIOError:
            if idle < 0:  # a try found nothing: wait first from now on (_drained)
                _drained[fd] = weakref.ref(sock)
            idle = _woken_for_nothing(idle) if idle >= 0 else 0
            yield ("read", sock)
            continue
        if idle < 0 and drained is not None:  # a try found data: optimistic again
            del _drained[fd]
        _turn_began[0] = sock  # this recv yielded first: a reply may skip its checkpoint
        return data


def recvfrom(sock, n: int):
    """Receive a datagram: (data, address)."""
    return _io("read", sock, sock.recvfrom, n)


def sendto(sock, data: bytes, address):
    """Send a datagram to address."""
    return _io("write", sock, sock.sendto, data, address)


@types.coroutine
def accept(sock):
    """Accept a connection: (a non-blocking socket, its address)."""
    conn, address = yield from _io("read", sock, sock.accept)
    conn.setblocking(False)
    return conn, address


# Speed trick, fenced here: a reply skips its checkpoint. recv always yields (a checkpoint or a
# readiness wait), so a sendall on the same socket right after it is still in the turn that
# recv's yield began; a second checkpoint there only sends an echo task round the loop once
# more per request (a resume, a request dispatch, a place in the next tick). The credit is one
# slot, granted by every recv and taken by the next sendall on that socket whatever it holds,
# so a turn still does at most a recv and a sendall: a task that only sends, or sends twice,
# checkpoints as before, and no task can starve the others (the fairness property in
# conformance). A cancellation still arrives at recv's yield, before anything was received.
# One slot for every loop in the process: loops in other threads can only take it away (then
# the send checkpoints as before), never grant it for a socket they do not hold.
# Measured (echo, 1 KiB x 100 connections): the folder README has the command.
_turn_began: list = [None]  # the socket whose recv began the running turn, until a send on it


def _reply_in_turn(sock) -> bool:
    """True if sock's last recv began this turn (and take that credit): skip the checkpoint."""
    if _turn_began[0] is sock:
        _turn_began[0] = None
        return True
    return False


@types.coroutine
def sendall(sock, data: bytes):
    """Send all of data, waiting for the socket to drain as often as needed."""
    if sock.getblocking():  # blocking: would freeze the loop (the check's call only then)
        check_nonblocking(sock)
    if not _reply_in_turn(sock):
        yield _NEXT_TICK
    try:  # the usual case: the socket buffer takes it all at once, no view of it needed
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    # len() of bytes is its size; of a memoryview or array, its item count: ask the buffer.
    if sent == (len(data) if type(data) is bytes else memoryview(data).nbytes):
        return
    remaining = memoryview(data).cast("B")[sent:]  # the rare path: the buffer is full
    idle = -1  # wake-ups in this call that found no room (-1: not woken yet): _woken_for_nothing
    while remaining:
        try:
            remaining = remaining[sock.send(remaining) :]
        except BlockingIOError:
            idle = _woken_for_nothing(idle) if idle >= 0 else 0
            yield ("write", sock)


@types.coroutine
def connect(sock, address):
    """Connect sock to address (give an IP address: a host name would block in the resolver)."""
    check_nonblocking(sock)
    yield _NEXT_TICK
    try:
        sock.connect(address)
    except BlockingIOError:  # EINPROGRESS: writable once the handshake is over, either way
        yield ("write", sock)
        error = sock.getsockopt(SOL_SOCKET, SO_ERROR)
        if error:
            raise OSError(error, f"connect to {address!r} failed: {os.strerror(error)}") from None


@types.coroutine
def run_in_thread(fn, *args):
    """Run fn(*args) in a worker thread; its result, or its exception raised here."""
    if not callable(fn):
        raise TypeError(f"run_in_thread needs a callable, got {fn!r}")
    return (yield ("thread", fn, args))


class Queue:
    """A FIFO queue for tasks with unfinished-work accounting (asyncio.Queue's semantics).

    Waiting is parking: a task that finds the queue empty (or full) parks in a wait list and
    checks again when woken, so an item is never handed to a task that is then cancelled.
    """

    def __init__(self, maxsize: int = 0) -> None:
        self._items: deque = deque()
        self._maxsize = maxsize  # 0: unbounded
        self._getters: deque[Task] = deque()  # tasks waiting for an item
        self._putters: deque[Task] = deque()  # tasks waiting for room
        self._joiners: deque[Task] = deque()  # tasks waiting for unfinished to reach 0
        self._unfinished = 0  # items put and not yet marked done

    def __repr__(self) -> str:
        return f"<Queue items={len(self._items)} unfinished={self._unfinished}>"

    async def put(self, item) -> None:
        """Add an item, first waiting for room if the queue has a maxsize and is full."""
        while 0 < self._maxsize <= len(self._items):
            await self._wait(self._putters, self._has_room)
        self._items.append(item)
        self._unfinished += 1
        if self._getters:
            running_loop().wake(self._getters, 1)

    async def get(self):
        """Remove and return the oldest item, waiting for one if there is none."""
        while not self._items:
            await self._wait(self._getters, self._items.__len__)
        item = self._items.popleft()
        if self._putters:
            running_loop().wake(self._putters, 1)
        return item

    # twin of loops/traps/queues.py: Queue.task_done
    def task_done(self) -> None:
        """Mark one got item as processed; join() returns once every put item is."""
        if self._unfinished <= 0:
            raise ValueError("task_done() called more times than items were put")
        self._unfinished -= 1
        if not self._unfinished and self._joiners:
            running_loop().wake(self._joiners)

    # twin of loops/traps/queues.py: Queue.join
    async def join(self) -> None:
        """Wait until every item put has been marked done."""
        while self._unfinished:
            await _park(self._joiners)

    def _has_room(self) -> bool:
        return len(self._items) < self._maxsize

    async def _wait(self, waiters: deque, ready) -> None:
        try:
            await _park(waiters)
        except CancelledError:
            # Woken and cancelled before running: pass the wake-up on, or it would be lost.
            if ready() and waiters:
                running_loop().wake(waiters, 1)
            raise
