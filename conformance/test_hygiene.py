"""Hygiene and shutdown: nothing left behind, and a closed loop says so.

Measured from outside, as a user could: open fds from /proc/self/fd, which fds an epoll
instance still watches from /proc/self/fdinfo, liveness by weakref after gc.collect().
What the upstream tests check: asyncio's and uvloop's test_close (close twice, then every call
raises RuntimeError), trio's test_run.py (tasks and the runner are collected:
gc_collect_harder), asyncio's test_base_events (handles drop their callbacks once run or
cancelled).
"""

import contextlib
import gc
import inspect
import socket
import threading
import warnings
import weakref

from conformance.harness import prop
from conformance.support import (
    SAFETY,
    fill_send_buffer,
    listener,
    nonblocking_pair,
    nonblocking_socket,
    open_fds,
    watched,
)


@prop("hygiene")
def test_no_fd_is_left_open_after_a_workload(play):
    play()  # a first run may create process-wide singletons (worker threads, caches)
    before = open_fds()
    result = play()
    assert (result, open_fds() - before) == ("done", set())  # the loop's own fds, released


@test_no_fd_is_left_open_after_a_workload.callbacks
def _(loop):
    a, b = nonblocking_pair()
    steps = []

    def on_readable():
        steps.append(a.recv(10))
        loop.remove_reader(a)
        loop.run_in_thread(threading.get_ident, callback=lambda future: loop.stop())

    loop.add_reader(a, on_readable)
    loop.call_later(0.001, b.send, b"ping")
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    a.close()
    b.close()
    return "done" if steps == [b"ping"] else steps


@test_no_fd_is_left_open_after_a_workload.generators
def _(co):
    server = listener()
    with server, nonblocking_socket() as client:
        yield from co.connect(client, server.getsockname())
        conn, _ = yield from co.accept(server)
        with conn:
            yield from co.sendall(client, b"ping")
            data = yield from co.recv(conn, 10)
        yield from co.run_in_thread(threading.get_ident)
        yield from co.sleep(0.001)
    return "done" if data == b"ping" else data


@test_no_fd_is_left_open_after_a_workload.coroutines
async def _(co):
    server = listener()
    with server, nonblocking_socket() as client:
        await co.connect(client, server.getsockname())
        conn, _ = await co.accept(server)
        with conn:
            await co.sendall(client, b"ping")
            data = await co.recv(conn, 10)
        await co.run_in_thread(threading.get_ident)
        await co.sleep(0.001)
    return "done" if data == b"ping" else data


@test_no_fd_is_left_open_after_a_workload.blocking
def _(co):
    server = listener()
    with server, nonblocking_socket() as client:
        co.connect(client, server.getsockname())
        conn, _ = co.accept(server)
        with conn:
            co.sendall(client, b"ping")
            data = co.recv(conn, 10)
        co.run_in_thread(threading.get_ident)
        co.sleep(0.001)
    return "done" if data == b"ping" else data


@prop("hygiene")
def test_finished_and_cancelled_io_leaves_no_fd_watched(play):
    # Checked while the sockets are still open (closing them would hide a stale registration),
    # after each fd was ready with nobody waiting and the loop went round: a loop may narrow
    # its registrations lazily, on the next event, but one that keeps watching a ready fd
    # nobody waits for would wake for it forever.
    assert play() == set()


def _make_ready(a, b, server, client, conn):
    """Readiness on every fd of the workload: data both ways, a pending connection."""
    b.send(b"wake")
    client.send(b"wake")
    conn.send(b"wake")
    knock = socket.create_connection(server.getsockname())
    return knock


@test_finished_and_cancelled_io_leaves_no_fd_watched.callbacks
def _(loop):
    a, b = nonblocking_pair()
    server, client = listener(), nonblocking_socket()
    client.connect_ex(server.getsockname())
    conn, _ = server.accept()
    conn.setblocking(False)
    socks = (a, b, server, client, conn)

    def on_readable():
        a.recv(1 << 20)
        loop.remove_reader(a)
        loop.add_reader(server, print)
        loop.add_writer(client, print)
        loop.add_reader(conn, print)
        for sock, remove in ((server, loop.remove_reader), (client, loop.remove_writer)):
            remove(sock)
        loop.remove_reader(conn)
        knocks.append(_make_ready(*socks))
        loop.call_later(0.01, loop.stop)

    knocks = []
    loop.add_reader(a, on_readable)
    b.send(b"go")
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    still_watched = watched({sock.fileno() for sock in socks})
    for sock in (*socks, *knocks):
        sock.close()
    return still_watched


@test_finished_and_cancelled_io_leaves_no_fd_watched.generators
def _(co):
    a, b = nonblocking_pair()
    server = listener()
    client = nonblocking_socket()
    with a, b, server, client:
        yield from co.connect(client, server.getsockname())
        conn, _ = yield from co.accept(server)
        with conn:
            expected = fill_send_buffer(client) + 65536
            sender = yield from co.spawn(co.sendall(client, b"x" * 65536))
            yield from co.sleep(0.001)  # the sender waits for room
            while expected:
                expected -= len((yield from co.recv(conn, 1 << 20)))
            yield from co.join(sender)
            pending = yield from co.spawn(co.recv(a, 1))
            yield from co.sleep(0.001)  # blocked in recv
            yield from co.cancel(pending)
            with _make_ready(a, b, server, client, conn):
                yield from co.sleep(0.01)
                return watched({s.fileno() for s in (a, b, server, client, conn)})


@test_finished_and_cancelled_io_leaves_no_fd_watched.coroutines
async def _(co):
    a, b = nonblocking_pair()
    server = listener()
    client = nonblocking_socket()
    with a, b, server, client:
        await co.connect(client, server.getsockname())
        conn, _ = await co.accept(server)
        with conn:
            expected = fill_send_buffer(client) + 65536
            sender = await co.spawn(co.sendall(client, b"x" * 65536))
            await co.sleep(0.001)  # the sender waits for room
            while expected:
                expected -= len(await co.recv(conn, 1 << 20))
            await co.join(sender)
            pending = await co.spawn(co.recv(a, 1))
            await co.sleep(0.001)  # blocked in recv
            await co.cancel(pending)
            with _make_ready(a, b, server, client, conn):
                await co.sleep(0.01)
                return watched({s.fileno() for s in (a, b, server, client, conn)})


@test_finished_and_cancelled_io_leaves_no_fd_watched.blocking
def _(co):
    a, b = nonblocking_pair()
    c, d = nonblocking_pair()  # the cancelled recv's own pair: a variant may spend it (threads)
    server = listener()
    client = nonblocking_socket()
    with a, b, c, d, server, client:
        co.connect(client, server.getsockname())
        conn, _ = co.accept(server)
        with conn:
            client.setblocking(False)  # the variant may have made it blocking: fill it without
            expected = fill_send_buffer(client) + 65536
            sender = co.spawn(co.sendall, client, b"x" * 65536)
            co.sleep(0.001)  # the sender waits for room
            while expected:
                expected -= len(co.recv(conn, 1 << 20))
            co.join(sender)
            pending = co.spawn(co.recv, c, 1)
            co.sleep(0.001)  # blocked in recv
            co.cancel(pending)
            with contextlib.suppress(OSError):  # spent by the cancel (threads): ready anyway
                d.send(b"wake")
            with _make_ready(a, b, server, client, conn):
                co.sleep(0.01)
                return watched({s.fileno() for s in (a, b, c, server, client, conn)})


@prop("hygiene")
def test_close_is_idempotent_and_calls_after_close_raise_runtime_error(play):
    assert play() == {call: "RuntimeError" for call in AFTER_CLOSE}


AFTER_CLOSE = [
    "call_soon",
    "call_later",
    "call_at",
    "call_soon_threadsafe",
    "add_reader",
    "run_in_thread",
    "run_forever",
]


@test_close_is_idempotent_and_calls_after_close_raise_runtime_error.callbacks
def _(loop):
    a, b = socket.socketpair()
    a.setblocking(False)
    loop.call_soon(loop.stop)
    loop.run_forever()
    loop.close()
    loop.close()
    calls = {
        "call_soon": lambda: loop.call_soon(print),
        "call_later": lambda: loop.call_later(1, print),
        "call_at": lambda: loop.call_at(loop.time() + 1, print),
        "call_soon_threadsafe": lambda: loop.call_soon_threadsafe(print),
        "add_reader": lambda: loop.add_reader(a, print),
        "run_in_thread": lambda: loop.run_in_thread(print, callback=print),
        "run_forever": loop.run_forever,
    }
    results = {}
    with a, b:
        for name in AFTER_CLOSE:
            try:
                calls[name]()
            except RuntimeError:
                results[name] = "RuntimeError"
            except Exception as error:
                results[name] = type(error).__name__
            else:
                results[name] = "accepted"
    return results


class Payload:
    """A weakly referenceable stand-in for whatever a callback or task holds on to."""

    def __call__(self, *args):
        pass


def _alive(refs):
    gc.collect()
    return sorted(name for name, ref in refs.items() if ref() is not None)


def _track(refs, name, obj):
    # A handle or task type without weakref support is skipped: its payload is still tracked.
    with contextlib.suppress(TypeError):
        refs[name] = weakref.ref(obj)


@prop("hygiene")
def test_handles_and_tasks_are_collected_after_they_run(play):
    assert play() == []  # what is still alive after it ran (or was cancelled) and gc ran


@test_handles_and_tasks_are_collected_after_they_run.callbacks
def _(loop):
    refs = {}

    def schedule():
        soon, later, cancelled = Payload(), Payload(), Payload()
        argument = Payload()
        _track(refs, "call_soon handle", loop.call_soon(soon, argument))
        _track(refs, "call_later handle", loop.call_later(0.001, later))
        # A cancelled timer's handle may wait in the heap for compaction (asyncio's does); what
        # it held must go at once.
        loop.call_later(3600, cancelled).cancel()
        for name, obj in [
            ("call_soon callback", soon),
            ("its argument", argument),
            ("call_later callback", later),
            ("cancelled callback", cancelled),
        ]:
            _track(refs, name, obj)

    schedule()
    loop.call_later(0.01, loop.stop)
    loop.run_forever()
    return _alive(refs)


@test_handles_and_tasks_are_collected_after_they_run.generators
def _(co):
    refs = {}

    def child(payload, delay):
        yield from co.sleep(delay)
        return "done"

    def run_children():
        finished, cancelled = child(Payload(), 0.001), child(Payload(), 3600)
        _track(refs, "finished coroutine", finished)
        _track(refs, "cancelled coroutine", cancelled)
        task = yield from co.spawn(finished)
        _track(refs, "finished task", task)
        yield from co.join(task)
        task = yield from co.spawn(cancelled)
        _track(refs, "cancelled task", task)
        yield from co.sleep(0.001)
        yield from co.cancel(task)

    yield from run_children()
    yield from co.sleep(0.001)
    return _alive(refs)


@test_handles_and_tasks_are_collected_after_they_run.coroutines
async def _(co):
    refs = {}

    async def child(payload, delay):
        await co.sleep(delay)
        return "done"

    async def run_children():
        finished, cancelled = child(Payload(), 0.001), child(Payload(), 3600)
        _track(refs, "finished coroutine", finished)
        _track(refs, "cancelled coroutine", cancelled)
        task = await co.spawn(finished)
        _track(refs, "finished task", task)
        await co.join(task)
        task = await co.spawn(cancelled)
        _track(refs, "cancelled task", task)
        await co.sleep(0.001)
        await co.cancel(task)

    await run_children()
    await co.sleep(0.001)
    return _alive(refs)


@test_handles_and_tasks_are_collected_after_they_run.blocking
def _(co):
    refs = {}

    def child(payload, delay):
        co.sleep(delay)
        return "done"

    def run_children():
        finished, cancelled = Payload(), Payload()
        _track(refs, "finished task's argument", finished)
        _track(refs, "cancelled task's argument", cancelled)
        task = co.spawn(child, finished, 0.001)
        _track(refs, "finished task", task)
        co.join(task)
        task = co.spawn(child, cancelled, 3600)
        _track(refs, "cancelled task", task)
        co.sleep(0.001)
        co.cancel(task)

    run_children()
    co.sleep(0.001)
    return _alive(refs)


# -- what a loop refuses, it closes --------------------------------------------------------


def _refusal(call, make):
    """Hand call a fresh make(); how it refused, and what became of what it was handed.

    'RuntimeError, closed, let go' is the only good answer: the refusal is an error a caller
    can catch, a coroutine or generator handed in is closed (else Python warns that it "was
    never awaited" when it is collected), and nothing (a half-made task, a loop) keeps it.
    """
    handed = make()
    ref = weakref.ref(handed)
    try:
        call(handed)
    except RuntimeError:
        error = "RuntimeError"
    except Exception as other:  # a refusal, but not the error the contract names
        error = f"{type(other).__name__}: {other}"
    else:
        error = "accepted"
    if inspect.iscoroutine(handed):
        state = "closed" if inspect.getcoroutinestate(handed) == "CORO_CLOSED" else "left open"
    elif inspect.isgenerator(handed):
        state = "closed" if inspect.getgeneratorstate(handed) == "GEN_CLOSED" else "left open"
    else:
        state = "closed"  # a callback or a function: nothing to close
    del handed
    gc.collect()
    return f"{error}, {state}, {'kept' if ref() is not None else 'let go'}"


REFUSED = "RuntimeError, closed, let go"


@prop("hygiene")
def test_a_refused_run_closes_what_it_was_handed(play):
    """run() inside a running loop, a call after close(), a second run of one coroutine.

    curio's test_kernel.py (test_reentrant_kernel) runs a kernel inside a running one; asyncio's
    test_base_events refuses run_until_complete inside a running loop and any call after
    close. The suite records every warning, so "coroutine ... was never awaited" fails here.
    """
    play([])  # a first run may create process-wide singletons (worker threads, caches)
    before = open_fds()
    again = []  # what the scenario leaves to try once its loop has ended
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        refusals = play(again)
        for name, attempt in again:
            refusals[name] = attempt()
        gc.collect()  # a coroutine left open warns as it is collected
    never_awaited = [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert (refusals, never_awaited, open_fds() - before) == (
        dict.fromkeys(refusals, REFUSED),
        [],
        set(),
    )


class _Callback:
    """A weakly referenceable callback, to see whether a refusing loop lets it go."""

    def __call__(self, *args):
        pass


@test_a_refused_run_closes_what_it_was_handed.callbacks
def _(loop, again):
    refusals = {}

    def nested():
        refusals["run_forever inside run_forever"] = _refusal(
            lambda callback: loop.run_forever(), _Callback
        )
        loop.stop()

    loop.call_soon(nested)
    loop.run_forever()
    loop.close()
    refusals["run_forever after close"] = _refusal(lambda callback: loop.run_forever(), _Callback)
    refusals["call_soon after close"] = _refusal(loop.call_soon, _Callback)
    refusals["call_later after close"] = _refusal(lambda cb: loop.call_later(0, cb), _Callback)
    return refusals


def _run_twice(run, make):
    """A second run of one coroutine (or generator) that a first run finished."""

    def attempt():
        finished = [make()]
        run(finished[0])
        return _refusal(run, finished.pop)  # pop: only the refusing loop may keep it

    return attempt


@test_a_refused_run_closes_what_it_was_handed.generators
def _(co, again):
    def inner():
        yield from co.sleep(0)
        return "ran"

    refused = _refusal(co.run, inner)
    yield from co.sleep(0.001)  # the outer loop goes on
    again.append(("a second run of one generator", _run_twice(co.run, inner)))
    return {"run inside a running loop": refused}


@test_a_refused_run_closes_what_it_was_handed.coroutines
async def _(co, again):
    async def inner():
        await co.sleep(0)
        return "ran"

    refused = _refusal(co.run, inner)
    await co.sleep(0.001)  # the outer loop goes on
    again.append(("a second run of one coroutine", _run_twice(co.run, inner)))
    return {"run inside a running loop": refused}


@test_a_refused_run_closes_what_it_was_handed.blocking
def _(co, again):
    def inner():
        co.sleep(0)
        return "ran"

    refused = _refusal(co.run, lambda: _Callback())
    co.sleep(0.001)  # the outer loop goes on
    return {"run inside a running loop": refused}
