"""The field's regressions of 2026, held as properties on every loop that offers asyncio's API.

Played through asyncio's own API (the ``asyncio`` style of ``conformance/harness.py``) on
asyncio, asyncio_eager, uvloop and the callbacks loop's drop-in. Each names the report where a
loop broke it: a cancelled ``create_connection(sock=...)`` whose socket later closed a descriptor
number the loop had already closed and a new socket had taken (uvloop #645 and #738), and
``TaskGroup.cancel()`` under eager tasks (CPython gh-155418, gh-155433; ``TaskGroup.cancel`` is
new in 3.15). What can depend on when a task first runs is played under both of asyncio's task
factories, lazy and eager (``asyncio.eager_task_factory``, 3.12+), as CPython's own TaskGroup
tests now do. ``call_soon_threadsafe`` from several threads keeping each thread's order (rsloop
reordered it under free threading) and waking a loop asleep on a long timer are the asyncio
scenarios of ``test_scheduling.py``'s threadsafe properties.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import ssl
import sys

import pytest

from conformance.harness import prop
from conformance.support import FACTORIES, SAFETY, use_factory

# -- a cancelled create_connection(sock=...) -------------------------------------------------


@prop("io")
def test_a_cancelled_tls_create_connection_never_closes_a_reused_descriptor(play):
    """``create_connection(sock=..., ssl=...)`` cancelled while its TLS handshake waits for
    the server: the loop releases the socket it was handed through the socket object, so when
    the caller then closes that socket (as the code in the uvloop reports did) no descriptor
    number a new socket has taken since is closed. uvloop #645 and #738: uvloop closed the
    number itself, the Python socket object still held it, and its later close() shut a new
    connection (responses misrouted in production)."""
    assert play() == {
        kind: ("cancelled", "the handshake had begun", "the new sockets work") for kind in FACTORIES
    }


@test_a_cancelled_tls_create_connection_never_closes_a_reused_descriptor.asyncio
async def _():
    return await _cancelled_handshakes()


async def _cancelled_handshakes():
    outcomes = {}
    for kind in FACTORIES:
        use_factory(kind)
        outcomes[kind] = await _cancelled_handshake()
    return outcomes


async def _cancelled_handshake():
    loop = asyncio.get_running_loop()
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    with socket.create_server(("127.0.0.1", 0)) as server:
        sock = socket.create_connection(server.getsockname())
        sock.setblocking(False)
        peer, _ = server.accept()  # a server that takes the connection and never answers
    with peer:
        peer.setblocking(False)
        connecting = asyncio.ensure_future(
            loop.create_connection(asyncio.Protocol, sock=sock, ssl=client, server_hostname="lab")
        )
        try:
            async with asyncio.timeout(SAFETY):
                hello = await loop.sock_recv(peer, 1)  # the ClientHello's first byte
        except TimeoutError:
            hello = b""
        connecting.cancel()
        try:
            await connecting
            ended = "connected"
        except asyncio.CancelledError:
            ended = "cancelled"
        except Exception as error:
            ended = type(error).__name__
        for _ in range(3):  # the loop's own turns after the cancel: its cleanup, if deferred
            await asyncio.sleep(0)
        a, b = socket.socketpair()  # most likely on the number the cancelled socket had
        try:
            sock.close()  # what the caller does with the socket it handed in
            del sock
            gc.collect()
            for _ in range(3):
                await asyncio.sleep(0)
            a.sendall(b"x")
            works = b.recv(1) == b"x"
        except OSError:
            works = False
        finally:
            for new in (a, b):
                with contextlib.suppress(OSError):  # EBADF: its number was closed under it
                    new.close()
    return (
        ended,
        "the handshake had begun" if hello == b"\x16" else f"the server got {hello!r}",
        "the new sockets work" if works else "a new socket was closed",
    )


# -- TaskGroup.cancel() under eager and lazy tasks ----------------------------------------------

needs_taskgroup_cancel = pytest.mark.skipif(
    not hasattr(asyncio.TaskGroup, "cancel"),
    reason=f"TaskGroup.cancel() is new in Python 3.15; this is {sys.version.split()[0]}",
)


@needs_taskgroup_cancel
@prop("core")
def test_taskgroup_cancel_ends_the_group_and_keeps_an_outside_cancel(play):
    """gh-155418: under eager tasks, a child that calls ``tg.cancel()`` before it first waits
    was never cancelled and the group hung. gh-155433: after ``tg.cancel()``, a cancel of the
    task around the group from outside was swallowed. Both, under each task factory."""
    assert play() == {
        kind: ("the group exited", "the outside cancel came through") for kind in FACTORIES
    }


@test_taskgroup_cancel_ends_the_group_and_keeps_an_outside_cancel.asyncio
async def _():
    outcomes = {}
    for kind in FACTORIES:
        use_factory(kind)
        outcomes[kind] = (await _child_cancels_its_group(), await _outside_cancel_after_cancel())
    return outcomes


async def _child_cancels_its_group():
    async def child(group, never):
        group.cancel()  # before its first wait: an eager task is still inside create_task
        await never.wait()

    try:
        async with asyncio.timeout(SAFETY), asyncio.TaskGroup() as group:
            group.create_task(child(group, asyncio.Event()))
    except TimeoutError:
        return "the group hung"
    return "the group exited"


async def _outside_cancel_after_cancel():
    in_exit, release = asyncio.Event(), asyncio.Event()

    async def child():
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            in_exit.set()  # the group's cancel reached it: the group now waits in its exit
            await release.wait()
            raise

    async def body():
        async with asyncio.TaskGroup() as group:
            group.create_task(child())
            await asyncio.sleep(0)
            group.cancel()

    task = asyncio.ensure_future(body())
    await in_exit.wait()
    task.cancel("from outside")
    release.set()
    try:
        async with asyncio.timeout(SAFETY):
            await task
    except asyncio.CancelledError:
        return "the outside cancel came through"
    except TimeoutError:
        return "the task hung"
    return "the outside cancel was lost"
