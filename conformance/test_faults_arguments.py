"""Bad arguments: every public entry of the contract refuses them clearly, and the loop goes on.

A loop that accepts ``call_at(None, cb)`` only fails later, inside its timer heap, on every
iteration from then on: the mistake is reported far from where it was made, and the loop is
broken for good. The contract's answer is the one asyncio gives to most of them (not all: see
its deviation): refuse the call at once with a ``TypeError`` or ``ValueError`` (``OSError`` for
a socket the kernel refuses, ``RuntimeError`` for a task that is not this loop's), change
nothing, and keep running. Some values only look wrong: an infinite delay is a timer that never
fires (and can be cancelled, or ended by a timeout), and a negative or minus-infinite timeout is
a deadline already past, which expires at once (trio refuses it with a ValueError instead:
either is clear).

Where the cases come from (facts, not code): CPython's ``test_asyncio/test_base_events.py``
(``call_soon``/``call_later``/``call_at`` with a non-callable, a coroutine function or a NaN
time; ``run_in_executor`` with a coroutine function), ``test_asyncio/test_sock_lowlevel.py``
and ``test_selector_events.py`` (sock_* calls on blocking sockets: ValueError;
``add_reader`` with an invalid file object), ``test_asyncio/test_tasks.py`` (a task awaiting
something that is not a future: "bad yield"; a future of another loop); uvloop's
``tests/test_base.py`` (the same timer checks, ``call_later`` with infinity) and curio's
``tests/test_kernel.py`` (awaiting a foreign awaitable inside a task).
"""

from __future__ import annotations

import contextlib
import math
import queue
import socket
import threading

from conformance.harness import prop
from conformance.support import SAFETY, nonblocking_pair, outcome

# Errors a caller can act on (and their subclasses); AttributeError is how Python itself says
# "None is not a socket" inside asyncio's sock_* calls. Not KeyError or IndexError: those are
# a loop's own bookkeeping failing.
CLEAR = (TypeError, ValueError, OSError, RuntimeError, AttributeError)


def _refused(call, *args, **kwargs) -> str:
    """The name of the clear error class call raised, or what went wrong instead."""
    try:
        result = call(*args, **kwargs)
    except Exception as error:
        return _kind(error)
    return f"accepted: {result!r}"


def _kind(error: BaseException) -> str:
    if isinstance(error, CLEAR):
        return "refused"
    return f"unclear: {type(error).__name__}: {error}"


def _verdict(seen: dict[str, str], works_after) -> dict:
    return {
        "not refused clearly": {call: how for call, how in seen.items() if how != "refused"},
        "the loop works after them": works_after,
    }


EXPECTED = {"not refused clearly": {}, "the loop works after them": True}


class Foreign:
    """An awaitable of no loop: it yields a value no scheduler understands."""

    def __await__(self):
        return (yield "a request from another world")

    __iter__ = __await__


@prop("core", timeout=30)
def test_bad_arguments_are_refused_clearly_and_the_loop_goes_on(play):
    assert outcome(play) == ("returned", EXPECTED)  # a broken loop raises out of run()


@test_bad_arguments_are_refused_clearly_and_the_loop_goes_on.callbacks
def _(loop):
    a, b = nonblocking_pair()
    closed = socket.socket()
    closed.close()

    def nothing(*args):
        pass

    seen = {
        "call_soon(None)": _refused(loop.call_soon, None),
        "call_soon(42)": _refused(loop.call_soon, 42),
        "call_later(None, cb)": _refused(loop.call_later, None, nothing),
        "call_later('1', cb)": _refused(loop.call_later, "1", nothing),
        "call_later(nan, cb)": _refused(loop.call_later, math.nan, nothing),
        "call_later(1, None)": _refused(loop.call_later, 1, None),
        "call_at(None, cb)": _refused(loop.call_at, None, nothing),
        "call_at(nan, cb)": _refused(loop.call_at, math.nan, nothing),
        "call_at('x', cb)": _refused(loop.call_at, "x", nothing),
        "call_at(now, 42)": _refused(loop.call_at, loop.time(), 42),
        "call_soon_threadsafe(None)": _refused(loop.call_soon_threadsafe, None),
        "add_reader(None, cb)": _refused(loop.add_reader, None, nothing),
        "add_reader(-1, cb)": _refused(loop.add_reader, -1, nothing),
        "add_reader('x', cb)": _refused(loop.add_reader, "x", nothing),
        "add_reader(closed socket, cb)": _refused(loop.add_reader, closed, nothing),
        "add_reader(sock, None)": _refused(loop.add_reader, b, None),
        "add_writer(None, cb)": _refused(loop.add_writer, None, nothing),
        "add_writer(closed socket, cb)": _refused(loop.add_writer, closed, nothing),
        "add_writer(sock, 42)": _refused(loop.add_writer, b, 42),
        "run_in_thread(None, callback=cb)": _refused(loop.run_in_thread, None, callback=nothing),
        "run_in_thread(fn, callback=None)": _refused(loop.run_in_thread, nothing, callback=None),
        "set_exception_handler(42)": _refused(loop.set_exception_handler, 42),
    }
    with contextlib.suppress(Exception):  # a refused add_reader may still have left a watch
        loop.remove_reader(b)
    # An infinite delay is no mistake: a timer that never fires, and can be cancelled.
    forever = loop.call_later(math.inf, nothing)
    fired = []
    loop.call_soon(fired.append, "soon")
    loop.call_later(0.001, fired.append, "later")
    loop.call_at(loop.time() + 0.002, fired.append, "at")

    def on_readable():
        fired.append(b.recv(10))

    loop.add_reader(b, on_readable)
    a.send(b"io")
    loop.call_later(0.05, loop.stop)
    loop.call_later(SAFETY, loop.stop)
    try:
        loop.run_forever()
    finally:
        loop.remove_reader(b)
        forever.cancel()
        a.close()
        b.close()
    return _verdict(seen, sorted(map(str, fired)) == sorted(["soon", "later", "at", "b'io'"]))


@test_bad_arguments_are_refused_clearly_and_the_loop_goes_on.generators
def _(co):
    seen, sockets = {}, []

    def other():
        return "never run"
        yield

    def holder(handoff):  # runs on a loop of its own, in another thread
        task = yield from co.spawn(co.sleep(SAFETY))
        handoff.put(task)
        yield from co.sleep(0.3)
        yield from co.cancel(task)

    foreign, thread = _task_of_another_loop(co, holder)
    try:
        for name, make in _cases(co, other, foreign, sockets).items():
            try:
                yield from co.timeout_after(1.0, make())
            except TimeoutError:
                seen[name] = "accepted: it waited"
            except Exception as error:
                seen[name] = _kind(error)
            else:
                seen[name] = "accepted"
    finally:
        thread.join()  # even when a loop lets an error out: no thread outlives the case
    for sock in sockets:
        sock.close()
    for seconds in -1, -math.inf:  # a deadline already past: it expires at once (or is refused)
        try:
            yield from co.timeout_after(seconds, co.sleep(SAFETY))
            seen[f"timeout_after({seconds}, sleep)"] = "accepted: it slept"
        except TimeoutError:
            seen[f"timeout_after({seconds}, sleep)"] = "refused"
        except Exception as error:
            seen[f"timeout_after({seconds}, sleep)"] = _kind(error)
    with contextlib.suppress(TimeoutError):  # an infinite sleep: a wait a timeout ends
        yield from co.timeout_after(0.01, co.sleep(math.inf))

    def answer():
        yield from co.sleep(0.001)
        return 42

    task = yield from co.spawn(answer())
    a, b = nonblocking_pair()
    with a, b:
        yield from co.sendall(a, b"io")
        got = yield from co.timeout_after(SAFETY, co.recv(b, 10))
    return _verdict(seen, ((yield from co.join(task)), got) == (42, b"io"))


@test_bad_arguments_are_refused_clearly_and_the_loop_goes_on.coroutines
async def _(co):
    seen, sockets = {}, []

    async def other():
        return "never run"

    async def holder(handoff):  # runs on a loop of its own, in another thread
        task = await co.spawn(co.sleep(SAFETY))
        handoff.put(task)
        await co.sleep(0.3)
        await co.cancel(task)

    foreign, thread = _task_of_another_loop(co, holder)
    try:
        for name, make in _cases(co, other, foreign, sockets).items():
            try:
                await co.timeout_after(1.0, make())
            except TimeoutError:
                seen[name] = "accepted: it waited"
            except Exception as error:
                seen[name] = _kind(error)
            else:
                seen[name] = "accepted"
    finally:
        thread.join()  # even when a loop lets an error out: no thread outlives the case
    for sock in sockets:
        sock.close()
    for seconds in -1, -math.inf:  # a deadline already past: it expires at once (or is refused)
        try:
            await co.timeout_after(seconds, co.sleep(SAFETY))
            seen[f"timeout_after({seconds}, sleep)"] = "accepted: it slept"
        except TimeoutError:
            seen[f"timeout_after({seconds}, sleep)"] = "refused"
        except Exception as error:
            seen[f"timeout_after({seconds}, sleep)"] = _kind(error)
    with contextlib.suppress(TimeoutError):  # an infinite sleep: a wait a timeout ends
        await co.timeout_after(0.01, co.sleep(math.inf))

    async def answer():
        await co.sleep(0.001)
        return 42

    task = await co.spawn(answer())
    a, b = nonblocking_pair()
    with a, b:
        await co.sendall(a, b"io")
        got = await co.timeout_after(SAFETY, co.recv(b, 10))
    return _verdict(seen, (await co.join(task), got) == (42, b"io"))


@test_bad_arguments_are_refused_clearly_and_the_loop_goes_on.blocking
def _(co):
    seen, sockets = {}, []

    def holder(handoff):  # runs on a loop of its own, in another thread
        task = co.spawn(co.sleep, SAFETY)
        handoff.put(task)
        co.sleep(0.3)
        co.cancel(task)

    foreign, thread = _task_of_another_loop(co, holder, blocking=True)
    try:
        for name, make in _blocking_cases(co, foreign, sockets).items():
            try:
                co.timeout_after(1.0, make)
            except TimeoutError:
                seen[name] = "accepted: it waited"
            except Exception as error:
                seen[name] = _kind(error)
            else:
                seen[name] = "accepted"
    finally:
        thread.join()  # even when a loop lets an error out: no thread outlives the case
    for sock in sockets:
        sock.close()
    for seconds in -1, -math.inf:  # a deadline already past: it expires at once (or is refused)
        try:
            co.timeout_after(seconds, co.sleep, SAFETY)
            seen[f"timeout_after({seconds}, sleep)"] = "accepted: it slept"
        except TimeoutError:
            seen[f"timeout_after({seconds}, sleep)"] = "refused"
        except Exception as error:
            seen[f"timeout_after({seconds}, sleep)"] = _kind(error)
    with contextlib.suppress(TimeoutError):  # an infinite sleep: a wait a timeout ends
        co.timeout_after(0.01, co.sleep, math.inf)

    def answer():
        co.sleep(0.001)
        return 42

    task = co.spawn(answer)
    a, b = nonblocking_pair()
    with a, b:
        co.sendall(a, b"io")
        got = co.timeout_after(SAFETY, co.recv, b, 10)
    return _verdict(seen, (co.join(task), got) == (42, b"io"))


def _task_of_another_loop(co, holder, *, blocking=False):
    """A task still pending on a loop that runs in another thread (for 0.3 s), and the thread."""
    handoff = queue.Queue()

    def run_quietly():
        # An error of the other loop stays in its thread: threading's excepthook would print
        # it while pytest renders this case's own failure, and on CPython 3.11 two threads
        # rendering tracebacks at once can break ast.parse ("AST constructor recursion depth
        # mismatch", CPython gh-106905), which stops the whole pytest session.
        with contextlib.suppress(BaseException):
            if blocking:
                co.run(holder, handoff)
            else:
                co.run(holder(handoff))

    thread = threading.Thread(target=run_quietly, daemon=True)
    thread.start()
    return handoff.get(timeout=SAFETY), thread


def _cases(co, other, foreign, sockets: list) -> dict:
    """name -> a function making the awaitable (or generator) that must be refused.

    One table for both styles: each entry calls the style's namespace, so the generators style
    gets generators and the coroutines style awaitables. Sockets made here go in `sockets`.
    """
    blocking = socket.socket()  # left blocking: the contract says ValueError
    closed = socket.socket()
    closed.close()
    a, b = nonblocking_pair()
    sockets += [blocking, a, b]
    return {
        "sleep(None)": lambda: co.sleep(None),
        "sleep('1')": lambda: co.sleep("1"),
        "sleep(nan)": lambda: co.sleep(math.nan),
        "timeout_after(nan, ...)": lambda: co.timeout_after(math.nan, co.sleep(0)),
        "timeout_after('1', ...)": lambda: co.timeout_after("1", co.sleep(0)),
        "spawn(None)": lambda: co.spawn(None),
        "spawn(42)": lambda: co.spawn(42),
        "spawn(an uncalled async function)": lambda: co.spawn(other),
        "join(None)": lambda: co.join(None),
        "join(42)": lambda: co.join(42),
        "join(a task of another loop)": lambda: co.join(foreign),
        "cancel(None)": lambda: co.cancel(None),
        "cancel(a task of another loop)": lambda: co.cancel(foreign),
        "recv(blocking socket)": lambda: co.recv(blocking, 10),
        "recv(closed socket)": lambda: co.recv(closed, 10),
        "recv(None, 10)": lambda: co.recv(None, 10),
        "recv(sock, 'ten')": lambda: co.recv(b, "ten"),
        "sendall(sock, 'text')": lambda: co.sendall(a, "text"),
        "sendall(sock, None)": lambda: co.sendall(a, None),
        "sendall(closed socket)": lambda: co.sendall(closed, b"x"),
        "accept(None)": lambda: co.accept(None),
        "accept(closed socket)": lambda: co.accept(closed),
        "connect(sock, 'nowhere')": lambda: co.connect(a, "nowhere"),
        "run_in_thread(None)": lambda: co.run_in_thread(None),
        "a foreign awaitable": Foreign,
    }


def _blocking_cases(co, foreign, sockets: list) -> dict:
    """The same table for the blocking style, where each entry makes the call itself.

    The blocking style takes a socket in either mode, so no entry passes a blocking socket;
    an async function is no task body there, and spawn must say so.
    """

    async def coroutine_function():
        return "never run"

    closed = socket.socket()
    closed.close()
    a, b = nonblocking_pair()
    sockets += [a, b]
    return {
        "sleep(None)": lambda: co.sleep(None),
        "sleep('1')": lambda: co.sleep("1"),
        "sleep(nan)": lambda: co.sleep(math.nan),
        "timeout_after(nan, ...)": lambda: co.timeout_after(math.nan, co.sleep, 0),
        "timeout_after('1', ...)": lambda: co.timeout_after("1", co.sleep, 0),
        "spawn(None)": lambda: co.spawn(None),
        "spawn(42)": lambda: co.spawn(42),
        "spawn(an async function)": lambda: co.spawn(coroutine_function),
        "join(None)": lambda: co.join(None),
        "join(42)": lambda: co.join(42),
        "join(a task of another loop)": lambda: co.join(foreign),
        "cancel(None)": lambda: co.cancel(None),
        "cancel(a task of another loop)": lambda: co.cancel(foreign),
        "recv(closed socket)": lambda: co.recv(closed, 10),
        "recv(None, 10)": lambda: co.recv(None, 10),
        "recv(sock, 'ten')": lambda: co.recv(b, "ten"),
        "sendall(sock, 'text')": lambda: co.sendall(a, "text"),
        "sendall(sock, None)": lambda: co.sendall(a, None),
        "sendall(closed socket)": lambda: co.sendall(closed, b"x"),
        "accept(None)": lambda: co.accept(None),
        "accept(closed socket)": lambda: co.accept(closed),
        "connect(sock, 'nowhere')": lambda: co.connect(a, "nowhere"),
        "run_in_thread(None)": lambda: co.run_in_thread(None),
    }
