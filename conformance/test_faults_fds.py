"""The fd lifecycle: sockets closed while a loop watches them, behind a dup, and reused.

A loop registers a socket's fd with epoll, which watches the *file* under that number. A user
who closes the socket while the loop watches it (a reader or writer waiting, or a registration
the loop kept after a finished wait) leaves the loop holding a number that now means nothing,
or soon means another socket. If a dup keeps the file open (``os.dup``, ``socket.fromfd``, a
child process), epoll keeps reporting it under the dead number, and no call with that number can
remove it: a loop that ignores those reports spins at 100 % CPU for as long as the dup lives.

Where the cases come from (facts, not code): CPython's ``test_asyncio/test_selector_events.py``
and ``test_selectors.py`` (unregistering a closed fd: selectors swallows EBADF, looks the
socket up by identity); epoll(7), "Questions and answers" 6 (a closed fd stays registered
while a dup holds its file; the kernel removes it only when every fd of the file is closed);
trio's ``_io_epoll.py`` notes on the same trap (why it registers with EPOLLONESHOT); uvloop's
``tests/test_sockets.py`` (socket calls on sockets closed under a pending operation); curio's
``tests/test_socket.py`` (a task waiting on a socket another task closes).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time

from conformance.harness import prop
from conformance.support import (
    SAFETY,
    drain,
    fill_send_buffer,
    new_sockets_work,
    nonblocking_pair,
    outcome,
)

QUIET = 0.5  # seconds of sleep during which the loop is watched for CPU use
TRICKLE = 0.1  # at most this share of QUIET spent on CPU: a spinning loop takes all of it
DUPS = ("os.dup", "socket.fromfd", "detach")
WAITERS = ("a reader", "a writer", "a finished reader")


def _keep_alive(sock: socket.socket, how: str) -> int:
    """Close sock (the user's mistake) while its file stays open; return the fd that keeps it."""
    if how == "detach":  # the socket object lets go of the fd without closing it
        return sock.detach()
    if how == "os.dup":
        kept = os.dup(sock.fileno())
    else:
        kept = socket.fromfd(sock.fileno(), sock.family, sock.type).detach()
    sock.close()
    return kept


def _wake_up(peer: socket.socket, waiter: str) -> None:
    """What makes the closed socket's file ready: data for a reader, room for a writer."""
    if waiter == "a writer":
        with contextlib.suppress(BlockingIOError):
            while peer.recv(1 << 20):
                pass
    else:
        peer.send(b"data after the close")


def _cpu_verdict(cpu: float) -> str:
    return "a trickle" if cpu < TRICKLE * QUIET else f"{cpu:.2f} s of CPU in {QUIET} s"


DUP_OUTCOME = {
    "run() went on": True,
    f"CPU during a {QUIET} s sleep": "a trickle",
    "new sockets work": b"fresh",
}


@prop("io", timeout=30)
def test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop(play):
    """Nine sockets, one per (dup kind, waiter kind), closed behind a live dup, then made ready.

    The loop must go on running (no error out of ``run()``), sleep 0.5 s on a trickle of CPU
    (process_time, not wall clock), and serve new sockets. What a waiter on a closed socket
    gets (an OSError, a cancellation) is left open: the references differ.
    """
    assert outcome(play) == ("returned", DUP_OUTCOME)  # (an error out of run() is raised)


@test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop.callbacks
def _(loop):
    pairs, kept = [], []

    reader, writer = _user_callbacks(loop)

    for _ in DUPS:
        for waiter in WAITERS:
            a, b = nonblocking_pair()
            pairs.append((a, b, waiter))
            if waiter == "a writer":
                fill_send_buffer(b)
                loop.add_writer(b, writer, b)
            else:
                loop.add_reader(b, reader, b)
    loop.call_later(0.01, loop.stop)
    for a, _, waiter in pairs:
        if waiter == "a finished reader":
            a.send(b"x")  # read by the reader, which the program then removes
    loop.run_forever()
    for _, b, waiter in pairs:
        if waiter == "a finished reader":
            loop.remove_reader(b)
    for (a, b, waiter), how in zip(pairs, [h for h in DUPS for _ in WAITERS], strict=True):
        kept.append(_keep_alive(b, how))
        _wake_up(a, waiter)
    cpu = time.process_time()
    loop.call_later(QUIET, loop.stop)
    ran = True
    try:
        loop.run_forever()
    except Exception:
        ran = False
    cpu = time.process_time() - cpu
    for _, b, _ in pairs:  # the late cleanup: a closed socket no longer watched is a ValueError
        with contextlib.suppress(ValueError):
            loop.remove_reader(b)
        with contextlib.suppress(ValueError):
            loop.remove_writer(b)
    try:
        fresh = new_sockets_work(loop)
    finally:
        for a, _, _ in pairs:
            a.close()
        for fd in kept:
            os.close(fd)
    return {
        "run() went on": ran,
        f"CPU during a {QUIET} s sleep": _cpu_verdict(cpu),
        "new sockets work": fresh,
    }


@test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop.generators
def _(co):
    pairs, tasks, kept = [], [], []
    for how in DUPS:
        for waiter in WAITERS:
            a, b = nonblocking_pair()
            pairs.append((a, b, how, waiter))
            if waiter == "a writer":
                fill_send_buffer(b)
                tasks.append((yield from co.spawn(co.sendall(b, b"x" * 65536))))
            else:
                tasks.append((yield from co.spawn(co.recv(b, 100))))
    yield from co.sleep(0.01)  # every task waits on its socket now
    for a, _, _, waiter in pairs:
        if waiter == "a finished reader":
            a.send(b"x")
    yield from co.sleep(0.01)  # the finished readers have read and ended
    for a, b, how, waiter in pairs:
        kept.append(_keep_alive(b, how))
        _wake_up(a, waiter)
    cpu = time.process_time()
    yield from co.sleep(QUIET)
    cpu = time.process_time() - cpu
    for task in tasks:  # each ended with an error, or still waits: either way, end it
        with contextlib.suppress(Exception, co.CancelledError):
            yield from co.timeout_after(SAFETY, co.cancel(task))
    c, d = nonblocking_pair()
    with c, d:
        yield from co.sendall(c, b"fresh")
        got = yield from co.timeout_after(SAFETY, co.recv(d, 100))
    for a, *_ in pairs:
        a.close()
    for fd in kept:
        os.close(fd)
    return {
        "run() went on": True,
        f"CPU during a {QUIET} s sleep": _cpu_verdict(cpu),
        "new sockets work": got,
    }


@test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop.coroutines
async def _(co):
    pairs, tasks, kept = [], [], []
    for how in DUPS:
        for waiter in WAITERS:
            a, b = nonblocking_pair()
            pairs.append((a, b, how, waiter))
            if waiter == "a writer":
                fill_send_buffer(b)
                tasks.append(await co.spawn(co.sendall(b, b"x" * 65536)))
            else:
                tasks.append(await co.spawn(co.recv(b, 100)))
    await co.sleep(0.01)  # every task waits on its socket now
    for a, _, _, waiter in pairs:
        if waiter == "a finished reader":
            a.send(b"x")
    await co.sleep(0.01)  # the finished readers have read and ended
    for a, b, how, waiter in pairs:
        kept.append(_keep_alive(b, how))
        _wake_up(a, waiter)
    cpu = time.process_time()
    await co.sleep(QUIET)
    cpu = time.process_time() - cpu
    for task in tasks:  # each ended with an error, or still waits: either way, end it
        with contextlib.suppress(Exception, co.CancelledError):
            await co.timeout_after(SAFETY, co.cancel(task))
    c, d = nonblocking_pair()
    with c, d:
        await co.sendall(c, b"fresh")
        got = await co.timeout_after(SAFETY, co.recv(d, 100))
    for a, *_ in pairs:
        a.close()
    for fd in kept:
        os.close(fd)
    return {
        "run() went on": True,
        f"CPU during a {QUIET} s sleep": _cpu_verdict(cpu),
        "new sockets work": got,
    }


@test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop.blocking
def _(co):
    pairs, tasks, kept = [], [], []
    for how in DUPS:
        for waiter in WAITERS:
            a, b = nonblocking_pair()
            pairs.append((a, b, how, waiter))
            if waiter == "a writer":
                fill_send_buffer(b)
                tasks.append(co.spawn(co.sendall, b, b"x" * 65536))
            else:
                tasks.append(co.spawn(co.recv, b, 100))
    co.sleep(0.01)  # every task waits on its socket now
    for a, _, _, waiter in pairs:
        if waiter == "a finished reader":
            a.send(b"x")
    co.sleep(0.01)  # the finished readers have read and ended
    for a, b, how, waiter in pairs:
        kept.append(_keep_alive(b, how))
        _wake_up(a, waiter)
    cpu = time.process_time()
    co.sleep(QUIET)
    cpu = time.process_time() - cpu
    for task in tasks:  # each ended with an error, or still waits: either way, end it
        with contextlib.suppress(Exception, co.CancelledError):
            co.timeout_after(SAFETY, co.cancel, task)
    c, d = nonblocking_pair()
    with c, d:
        co.sendall(c, b"fresh")
        got = co.timeout_after(SAFETY, co.recv, d, 100)
    for a, *_ in pairs:
        a.close()
    for fd in kept:
        os.close(fd)
    return {
        "run() went on": True,
        f"CPU during a {QUIET} s sleep": _cpu_verdict(cpu),
        "new sockets work": got,
    }


# --- closed while watched, and the number reused ---------------------------------------------

REUSE_OUTCOME = {
    waiter: {"old waiter ended": True, "new socket's data": b"fresh"} for waiter in WAITERS
}


@prop("io")
def test_a_socket_closed_while_watched_and_its_number_reused_confuses_nobody(play):
    """Close a socket with a reader, a writer or a finished reader on it (no dup: the file is
    gone), then open a new one, which most likely gets the same number: the old waiter can be
    ended, and the new socket sees its own data, not the old registration's."""
    assert play() == REUSE_OUTCOME


@test_a_socket_closed_while_watched_and_its_number_reused_confuses_nobody.callbacks
def _(loop):
    seen = {}
    for waiter in WAITERS:
        a, b = nonblocking_pair()
        stale = []
        if waiter == "a writer":
            fill_send_buffer(b)
            loop.add_writer(b, stale.append, "old writer")
        else:
            loop.add_reader(b, stale.append, "old reader")
            if waiter == "a finished reader":
                a.send(b"x")
                loop.call_later(0.01, loop.stop)
                loop.run_forever()
                loop.remove_reader(b)
                stale.clear()
        b.close()  # no remove first (except the finished one): the user forgot
        a.close()
        with contextlib.suppress(ValueError):  # the late cleanup, by the closed socket object
            loop.remove_reader(b)
        with contextlib.suppress(ValueError):
            loop.remove_writer(b)
        c, d = nonblocking_pair()
        got = []

        def on_readable(d=d, got=got):
            got.append(d.recv(100))
            loop.stop()

        loop.add_reader(d, on_readable)
        c.send(b"fresh")
        loop.call_later(SAFETY, loop.stop)
        loop.run_forever()
        loop.remove_reader(d)
        c.close()
        d.close()
        seen[waiter] = {"old waiter ended": not stale, "new socket's data": got[0] if got else None}
    return seen


@test_a_socket_closed_while_watched_and_its_number_reused_confuses_nobody.generators
def _(co):
    seen = {}
    for waiter in WAITERS:
        a, b = nonblocking_pair()
        if waiter == "a writer":
            fill_send_buffer(b)
            task = yield from co.spawn(co.sendall(b, b"x" * 65536))
        else:
            task = yield from co.spawn(co.recv(b, 100))
        yield from co.sleep(0.01)
        if waiter == "a finished reader":
            a.send(b"x")
            yield from co.join(task)
        b.close()
        a.close()
        ended = True
        try:
            yield from co.timeout_after(SAFETY, co.cancel(task))
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass  # it ended with the close's error: ended all the same
        c, d = nonblocking_pair()
        with c, d:
            yield from co.sendall(c, b"fresh")
            got = yield from co.timeout_after(SAFETY, co.recv(d, 100))
        seen[waiter] = {"old waiter ended": ended, "new socket's data": got}
    return seen


@test_a_socket_closed_while_watched_and_its_number_reused_confuses_nobody.coroutines
async def _(co):
    seen = {}
    for waiter in WAITERS:
        a, b = nonblocking_pair()
        if waiter == "a writer":
            fill_send_buffer(b)
            task = await co.spawn(co.sendall(b, b"x" * 65536))
        else:
            task = await co.spawn(co.recv(b, 100))
        await co.sleep(0.01)
        if waiter == "a finished reader":
            a.send(b"x")
            await co.join(task)
        b.close()
        a.close()
        ended = True
        try:
            await co.timeout_after(SAFETY, co.cancel(task))
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass  # it ended with the close's error: ended all the same
        c, d = nonblocking_pair()
        with c, d:
            await co.sendall(c, b"fresh")
            got = await co.timeout_after(SAFETY, co.recv(d, 100))
        seen[waiter] = {"old waiter ended": ended, "new socket's data": got}
    return seen


@test_a_socket_closed_while_watched_and_its_number_reused_confuses_nobody.blocking
def _(co):
    seen = {}
    for waiter in WAITERS:
        a, b = nonblocking_pair()
        if waiter == "a writer":
            fill_send_buffer(b)
            task = co.spawn(co.sendall, b, b"x" * 65536)
        else:
            task = co.spawn(co.recv, b, 100)
        co.sleep(0.01)
        if waiter == "a finished reader":
            a.send(b"x")
            co.join(task)
        b.close()
        a.close()
        ended = True
        try:
            co.timeout_after(SAFETY, co.cancel, task)
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass  # it ended with the close's error: ended all the same
        c, d = nonblocking_pair()
        with c, d:
            co.sendall(c, b"fresh")
            got = co.timeout_after(SAFETY, co.recv, d, 100)
        seen[waiter] = {"old waiter ended": ended, "new socket's data": got}
    return seen


# --- closed behind a dup, and the number reused by a new watched socket -----------------------

CASE_QUIET = 0.1  # each case's sleep: cases run one by one, as one rebuilt epoll heals them all
NUMBER_FREEING_DUPS = ("os.dup", "socket.fromfd")  # detach keeps the number: nothing to reuse
REUSED_CASES = [(old, new) for old in WAITERS for new in WAITERS]
REUSED_OUTCOME = {
    f"old {old}, new {new}": {
        f"CPU during a {CASE_QUIET} s sleep": "a trickle",
        "old waiter ended": True,
        "new socket's data": b"fresh",
    }
    for old, new in REUSED_CASES
}


def _pair_on(number: int) -> tuple[socket.socket, socket.socket]:
    """A new connected pair (peer, watched) whose watched end has fd `number`, just freed.

    The kernel hands out the lowest free number, so a new socket almost always gets it; if
    something else took it first, the new socket's file is moved there (dup2 onto a free
    number), so the case is played every time.
    """
    peer, watched = nonblocking_pair()
    if peer.fileno() == number:
        return watched, peer
    if watched.fileno() != number:
        os.dup2(watched.fileno(), number)
        moved = socket.socket(fileno=number)
        moved.setblocking(False)
        watched.close()
        watched = moved
    return peer, watched


def _case_verdict(cpu: float, ended: bool, data: bytes | None) -> dict:
    return {
        f"CPU during a {CASE_QUIET} s sleep": (
            "a trickle" if cpu < TRICKLE * CASE_QUIET else f"{cpu:.3f} s of CPU"
        ),
        "old waiter ended": ended,
        "new socket's data": data,
    }


@prop("io", timeout=30)
def test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody(play):
    """Nine cases, one per (old waiter kind, new waiter kind): a watched socket is closed
    behind a live dup, its number goes at once to a new socket the program waits on, then the
    old file is made ready.

    epoll now holds two registrations under one number: the ghost (the old file, which no
    ``epoll_ctl`` can reach) and the new socket, and reports both with the same fd. A loop
    that keeps registrations across waits takes the ghost's readiness for the new socket's:
    a waiter woken for nothing (its call fails with EAGAIN, it waits again, at once), bits
    the new socket never asked for, or a report with nobody waiting that makes the loop stop
    watching the new socket, after which the ghost is reported for a number nobody watches.
    Each is a loop woken at once, forever. In every case the loop must go on running, sleep
    on a trickle of CPU, let the old waiter be ended afterwards (its late cleanup must not
    undo the new socket's registration), and the new socket must work. The cases run one at
    a time (the dup closed at the end of each), because a loop that rebuilds its epoll for one
    ghost drops all of them. Where the idea came from: epoll(7), "Questions and answers" 1
    and 6 (registrations are keyed by file *and* number; a closed number stays registered
    while a dup holds its file); libuv's ``uv__io_poll`` (linux.c), which masks reported bits
    with what the watcher asked for and calls closing a polled fd the user's error; trio's
    ``_io_epoll.py`` notes (why it re-arms with EPOLLONESHOT, an ``epoll_ctl`` per wait).
    """
    assert outcome(play) == ("returned", REUSED_OUTCOME)


@test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody.callbacks
def _(loop):
    old_reader, old_writer = _user_callbacks(loop)

    def new_reader(sock, got):
        try:
            got.append(sock.recv(100))
        except BlockingIOError:
            return  # woken for nothing: a correct program just waits again
        loop.remove_reader(sock)
        loop.stop()

    def new_writer(sock, got):
        try:
            sock.send(b"fresh")
        except BlockingIOError:
            return
        loop.remove_writer(sock)
        got.append(b"sent")
        loop.stop()

    def run_for(seconds):
        timer = loop.call_later(seconds, loop.stop)
        loop.run_forever()
        timer.cancel()

    seen = {}
    for i, (old, new) in enumerate(REUSED_CASES):
        a, b = nonblocking_pair()
        if old == "a writer":
            fill_send_buffer(b)
            loop.add_writer(b, old_writer, b)
        else:
            loop.add_reader(b, old_reader, b)
            if old == "a finished reader":
                a.send(b"x")
                run_for(0.01)
                loop.remove_reader(b)
        number = b.fileno()
        kept = _keep_alive(b, NUMBER_FREEING_DUPS[i % 2])
        c, d = _pair_on(number)
        got = []
        if new == "a writer":
            fill_send_buffer(d)
            loop.add_writer(d, new_writer, d, got)
        else:
            loop.add_reader(d, new_reader, d, got)
            if new == "a finished reader":
                c.send(b"x")
                run_for(SAFETY)  # it reads its byte and stops watching
                got.clear()
        _wake_up(a, old)  # the ghost becomes ready
        cpu = time.process_time()
        run_for(CASE_QUIET)
        cpu = time.process_time() - cpu
        with contextlib.suppress(ValueError):  # the late cleanup of the old socket
            loop.remove_reader(b)
        with contextlib.suppress(ValueError):
            loop.remove_writer(b)
        if new == "a writer":
            drain(c)
        else:
            if new == "a finished reader":
                loop.add_reader(d, new_reader, d, got)
            c.send(b"fresh")
        run_for(SAFETY)
        if got == [b"sent"]:
            got = [c.recv(100)]
        with contextlib.suppress(ValueError):
            loop.remove_reader(d)
        with contextlib.suppress(ValueError):
            loop.remove_writer(d)
        for sock in a, c, d:
            sock.close()
        os.close(kept)
        seen[f"old {old}, new {new}"] = _case_verdict(cpu, True, got[0] if got else None)
    return seen


@test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody.generators
def _(co):
    seen = {}
    for i, (old, new) in enumerate(REUSED_CASES):
        a, b = nonblocking_pair()
        if old == "a writer":
            fill_send_buffer(b)
            old_task = yield from co.spawn(co.sendall(b, b"x" * 65536))
        else:
            old_task = yield from co.spawn(co.recv(b, 100))
        yield from co.sleep(0.01)  # the old task waits on its socket
        if old == "a finished reader":  # woken by its data, it reads and ends
            a.send(b"x")
            yield from co.timeout_after(SAFETY, co.join(old_task))
        number = b.fileno()
        kept = _keep_alive(b, NUMBER_FREEING_DUPS[i % 2])
        c, d = _pair_on(number)
        if new == "a writer":
            fill_send_buffer(d)
            new_task = yield from co.spawn(co.sendall(d, b"fresh"))
        else:
            new_task = yield from co.spawn(co.recv(d, 100))
        yield from co.sleep(0.01)  # the new task waits on the new socket
        if new == "a finished reader":  # woken by its data, it reads and ends
            c.send(b"x")
            yield from co.timeout_after(SAFETY, co.join(new_task))
            new_task = None
        _wake_up(a, old)  # the ghost becomes ready
        cpu = time.process_time()
        yield from co.sleep(CASE_QUIET)
        cpu = time.process_time() - cpu
        ended = True
        try:  # the late cleanup of the old task: it ended with an error, or still waits
            yield from co.timeout_after(SAFETY, co.cancel(old_task))
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass
        if new == "a writer":
            drain(c)
            yield from co.timeout_after(SAFETY, co.join(new_task))
            got = yield from co.timeout_after(SAFETY, co.recv(c, 100))
        else:
            yield from co.sendall(c, b"fresh")
            if new_task is None:  # the finished reader reads again
                new_task = yield from co.spawn(co.recv(d, 100))
            got = yield from co.timeout_after(SAFETY, co.join(new_task))
        for sock in a, c, d:
            sock.close()
        os.close(kept)
        seen[f"old {old}, new {new}"] = _case_verdict(cpu, ended, got)
    return seen


@test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody.coroutines
async def _(co):
    seen = {}
    for i, (old, new) in enumerate(REUSED_CASES):
        a, b = nonblocking_pair()
        if old == "a writer":
            fill_send_buffer(b)
            old_task = await co.spawn(co.sendall(b, b"x" * 65536))
        else:
            old_task = await co.spawn(co.recv(b, 100))
        await co.sleep(0.01)  # the old task waits on its socket
        if old == "a finished reader":  # woken by its data, it reads and ends
            a.send(b"x")
            await co.timeout_after(SAFETY, co.join(old_task))
        number = b.fileno()
        kept = _keep_alive(b, NUMBER_FREEING_DUPS[i % 2])
        c, d = _pair_on(number)
        if new == "a writer":
            fill_send_buffer(d)
            new_task = await co.spawn(co.sendall(d, b"fresh"))
        else:
            new_task = await co.spawn(co.recv(d, 100))
        await co.sleep(0.01)  # the new task waits on the new socket
        if new == "a finished reader":  # woken by its data, it reads and ends
            c.send(b"x")
            await co.timeout_after(SAFETY, co.join(new_task))
            new_task = None
        _wake_up(a, old)  # the ghost becomes ready
        cpu = time.process_time()
        await co.sleep(CASE_QUIET)
        cpu = time.process_time() - cpu
        ended = True
        try:  # the late cleanup of the old task: it ended with an error, or still waits
            await co.timeout_after(SAFETY, co.cancel(old_task))
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass
        if new == "a writer":
            drain(c)
            await co.timeout_after(SAFETY, co.join(new_task))
            got = await co.timeout_after(SAFETY, co.recv(c, 100))
        else:
            await co.sendall(c, b"fresh")
            if new_task is None:  # the finished reader reads again
                new_task = await co.spawn(co.recv(d, 100))
            got = await co.timeout_after(SAFETY, co.join(new_task))
        for sock in a, c, d:
            sock.close()
        os.close(kept)
        seen[f"old {old}, new {new}"] = _case_verdict(cpu, ended, got)
    return seen


@test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody.blocking
def _(co):
    seen = {}
    for i, (old, new) in enumerate(REUSED_CASES):
        a, b = nonblocking_pair()
        if old == "a writer":
            fill_send_buffer(b)
            old_task = co.spawn(co.sendall, b, b"x" * 65536)
        else:
            old_task = co.spawn(co.recv, b, 100)
        co.sleep(0.01)  # the old task waits on its socket
        if old == "a finished reader":  # woken by its data, it reads and ends
            a.send(b"x")
            co.timeout_after(SAFETY, co.join, old_task)
        number = b.fileno()
        kept = _keep_alive(b, NUMBER_FREEING_DUPS[i % 2])
        c, d = _pair_on(number)
        if new == "a writer":
            fill_send_buffer(d)
            new_task = co.spawn(co.sendall, d, b"fresh")
        else:
            new_task = co.spawn(co.recv, d, 100)
        co.sleep(0.01)  # the new task waits on the new socket
        if new == "a finished reader":  # woken by its data, it reads and ends
            c.send(b"x")
            co.timeout_after(SAFETY, co.join, new_task)
            new_task = None
        _wake_up(a, old)  # the ghost becomes ready
        cpu = time.process_time()
        co.sleep(CASE_QUIET)
        cpu = time.process_time() - cpu
        ended = True
        try:  # the late cleanup of the old task: it ended with an error, or still waits
            co.timeout_after(SAFETY, co.cancel, old_task)
        except TimeoutError:
            ended = False
        except (Exception, co.CancelledError):
            pass
        if new == "a writer":
            # A writer that is a thread may finish while the drain reads: its bytes are then
            # the drain's last, or else still in the socket after the join.
            drained = _everything_in(c)
            co.timeout_after(SAFETY, co.join, new_task)
            got = (drained + _everything_in(c))[-len(b"fresh") :]
        else:
            co.sendall(c, b"fresh")
            if new_task is None:  # the finished reader reads again
                new_task = co.spawn(co.recv, d, 100)
            got = co.timeout_after(SAFETY, co.join, new_task)
        for sock in a, c, d:
            sock.close()
        os.close(kept)
        seen[f"old {old}, new {new}"] = _case_verdict(cpu, ended, got)
    return seen


def _user_callbacks(loop):
    """A user's reader and writer: each does its I/O, and cleans up once the socket fails it."""

    def reader(sock):
        try:
            sock.recv(100)
        except OSError:
            loop.remove_reader(sock)

    def writer(sock):
        try:
            sock.send(b"more")
        except BlockingIOError:
            pass
        except OSError:
            loop.remove_writer(sock)

    return reader, writer


def _everything_in(sock) -> bytes:
    """What a non-blocking socket holds right now."""
    data = bytearray()
    with contextlib.suppress(BlockingIOError):
        while chunk := sock.recv(1 << 20):
            data += chunk
    return bytes(data)
