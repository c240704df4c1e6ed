"""Structured concurrency: nurseries and cancel scopes, on every variant that offers them.

Played through trio's names (the ``nurseries`` style of ``conformance/harness.py``: a coroutines
namespace with ``open_nursery``, ``CancelScope`` and ``move_on_after``; today scopes and trio)
and, where asyncio's ``TaskGroup`` and ``timeout()`` (3.11) fit, through asyncio's own API on
every variant with an asyncio loop. A nursery waits for its children; a child's error cancels
its siblings and the block, and comes out once, in an ExceptionGroup; a cancelled scope raises
at every checkpoint until the code leaves it (level-triggered; asyncio's cancellation is
edge-triggered, one CancelledError per cancel, so a task that swallows it runs on: its
deviation, by design); a shield holds; a recv cancelled on a real socket loses nothing, whether
the cancel comes before or after the loop saw the bytes.
"""

from __future__ import annotations

import asyncio
import socket

from conformance.harness import prop

# -- a nursery waits for its children ----------------------------------------------------------


@prop("core")
def test_a_nursery_waits_for_every_child(play):
    assert play() == ["body done", "fast", "slow", "block left"]


@test_a_nursery_waits_for_every_child.nurseries
async def _(co):
    log = []

    async def child(name, delay):
        await co.sleep(delay)
        log.append(name)

    async with co.open_nursery() as nursery:
        nursery.start_soon(child, "slow", 0.05)
        nursery.start_soon(child, "fast", 0.01)
        log.append("body done")
    log.append("block left")
    return log


@test_a_nursery_waits_for_every_child.asyncio
async def _():
    log = []

    async def child(name, delay):
        await asyncio.sleep(delay)
        log.append(name)

    async with asyncio.TaskGroup() as group:
        group.create_task(child("slow", 0.05))
        group.create_task(child("fast", 0.01))
        log.append("body done")
    log.append("block left")
    return log


# -- a child's error cancels its siblings and surfaces once ------------------------------------

FAILED_ONCE = ("ExceptionGroup", ["ValueError('boom')"], ["block cancelled", "sibling cancelled"])


@prop("exceptions")
def test_an_error_cancels_the_siblings_and_surfaces_once(play):
    assert play() == (*FAILED_ONCE, "caught once")


@test_an_error_cancels_the_siblings_and_surfaces_once.nurseries
async def _(co):
    log, caught = [], []

    async def sibling():
        try:
            await co.sleep(10)
        except co.CancelledError:
            log.append("sibling cancelled")
            raise

    async def failing():
        await co.sleep(0.01)
        raise ValueError("boom")

    try:
        async with co.open_nursery() as nursery:
            nursery.start_soon(sibling)
            nursery.start_soon(failing)
            try:
                await co.sleep(10)
            except co.CancelledError:
                log.append("block cancelled")
                raise
    except BaseExceptionGroup as group:
        caught.append(group)
    await co.sleep(0.02)  # nothing else arrives
    return _failed(caught, log)


@test_an_error_cancels_the_siblings_and_surfaces_once.asyncio
async def _():
    log, caught = [], []

    async def sibling():
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            log.append("sibling cancelled")
            raise

    async def failing():
        await asyncio.sleep(0.01)
        raise ValueError("boom")

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(sibling())
            group.create_task(failing())
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                log.append("block cancelled")
                raise
    except BaseExceptionGroup as error:
        caught.append(error)
    await asyncio.sleep(0.02)
    return _failed(caught, log)


def _failed(caught: list[BaseExceptionGroup], log: list[str]) -> tuple:
    if len(caught) != 1:
        return "caught", len(caught)
    (group,) = caught
    outcome = (type(group).__name__, [repr(e) for e in group.exceptions], sorted(log))
    return (*outcome, "caught once")


# -- level-triggered: every checkpoint in a cancelled scope raises -----------------------------

CHECKPOINTS = 3
NAP = 0.3  # seconds each checkpoint would wait if the cancellation did not come back


@prop("timeouts")
def test_a_cancelled_scope_raises_at_every_checkpoint_until_it_is_left(play):
    """A task that catches the cancellation and waits again meets it again, at each checkpoint,
    until it leaves the cancelled block; after the block nothing is left of it."""
    assert play() == (CHECKPOINTS, "left the block", "no cancellation after it")


@test_a_cancelled_scope_raises_at_every_checkpoint_until_it_is_left.nurseries
async def _(co):
    raised = 0
    with co.move_on_after(0.01):
        for _ in range(CHECKPOINTS):
            try:
                await co.sleep(NAP)
            except co.CancelledError:  # swallowed, on purpose
                raised += 1
    try:
        await co.sleep(0)
    except co.CancelledError:
        return raised, "left the block", "cancelled after it"
    return raised, "left the block", "no cancellation after it"


@test_a_cancelled_scope_raises_at_every_checkpoint_until_it_is_left.asyncio
async def _():
    raised = 0
    async with asyncio.timeout(0.01):
        for _ in range(CHECKPOINTS):
            try:
                await asyncio.sleep(NAP)
            except asyncio.CancelledError:  # swallowed, on purpose
                raised += 1
    try:
        await asyncio.sleep(0)
    except asyncio.CancelledError:
        return raised, "left the block", "cancelled after it"
    return raised, "left the block", "no cancellation after it"


# -- a shield holds --------------------------------------------------------------------------


@prop("timeouts")
def test_a_shield_holds_while_the_scope_around_it_is_cancelled(play):
    assert play() == (["shielded sleep finished", "left the shield"], True)


@test_a_shield_holds_while_the_scope_around_it_is_cancelled.nurseries
async def _(co):
    log = []
    with co.move_on_after(0.01) as outer:
        with co.CancelScope(shield=True):
            await co.sleep(0.05)  # past the deadline around it
            log.append("shielded sleep finished")
        log.append("left the shield")
        await co.sleep(10)  # the deadline reaches this one
        log.append("not reached")
    return log, outer.cancelled_caught


# -- a cancelled socket call loses nothing ---------------------------------------------------


@prop("io")
def test_a_cancelled_recv_loses_nothing(play):
    """A reader waits in recv inside a scope; the bytes arrive and the scope is cancelled in the
    same slice (the loop has not seen them), then with a checkpoint between (it may have): what
    the reader got plus what is left in the socket is what was sent, each time."""
    assert play() == [b"ping", b"ping"]


@test_a_cancelled_recv_loses_nothing.nurseries
async def _(co):
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    arrived = []
    with a, b:
        for checkpoint_between in (False, True):
            got = []

            async def reader(got=got):
                got.append(await co.recv(a, 100))

            with co.CancelScope() as scope:
                async with co.open_nursery() as nursery:
                    nursery.start_soon(reader)
                    await co.sleep(0.01)  # the reader waits in recv
                    b.send(b"ping")
                    if checkpoint_between:
                        await co.sleep(0)
                    scope.cancel()
            try:
                left = a.recv(100)
            except BlockingIOError:
                left = b""
            arrived.append(b"".join(got) + left)
    return arrived
