"""The scopes kernel's native API: nurseries, cancel scopes, deadlines and shields.

The contract's names are the conformance suite's; this file holds what the loop offers beside
them, with trio's names: a nursery waits for its children, a child's error cancels its siblings
and comes out once in an ExceptionGroup, a cancelled scope raises at every checkpoint until it
is left, a shield holds, fail_after raises the builtin TimeoutError, and a recv cancelled on a
real socket loses nothing.
"""

from __future__ import annotations

import socket
import time

import pytest

from loops.scopes import api as co
from loops.scopes.api import (
    CancelledError,
    CancelScope,
    fail_after,
    move_on_after,
    open_nursery,
)

pytestmark = pytest.mark.timeout(20)


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


# ---------------------------------------------------------------------- nurseries


def test_a_nursery_waits_for_every_child_before_its_block_ends():
    log = []

    async def child(name, delay):
        await co.sleep(delay)
        log.append(name)

    async def main():
        async with open_nursery() as nursery:
            nursery.start_soon(child, "slow", 0.05)
            nursery.start_soon(child, "fast", 0.01)
            log.append("body done")
        log.append("block left")

    co.run(main())
    assert log == ["body done", "fast", "slow", "block left"]


def test_a_childs_error_cancels_its_siblings_and_comes_out_once_in_a_group():
    log = []

    async def sibling():
        try:
            await co.sleep(10)
        except CancelledError:
            log.append("sibling cancelled")
            raise

    async def failing():
        await co.sleep(0.01)
        raise ValueError("boom")

    async def main():
        groups = []
        try:
            async with open_nursery() as nursery:
                nursery.start_soon(sibling)
                nursery.start_soon(failing)
                await co.sleep(10)  # the block is cancelled too
                log.append("body ran on")
        except* ValueError as group:
            groups.append(group)
        return groups

    started = time.monotonic()
    groups = co.run(main())
    assert time.monotonic() - started < 5  # nobody slept its 10 s
    assert len(groups) == 1
    (group,) = groups
    assert [repr(e) for e in group.exceptions] == ["ValueError('boom')"]
    assert log == ["sibling cancelled"]


def test_errors_of_several_children_and_of_the_block_come_out_in_one_group():
    async def failing(n):
        await co.sleep(0.01)
        raise KeyError(n)

    async def main():
        async with open_nursery() as nursery:
            nursery.start_soon(failing, 1)
            nursery.start_soon(failing, 2)
            await co.sleep(10)  # cancelled when the first child fails
            raise AssertionError("not reached")

    with pytest.raises(ExceptionGroup) as caught:
        co.run(main())
    assert sorted(e.args[0] for e in caught.value.exceptions) == [1, 2]
    assert all(type(e) is KeyError for e in caught.value.exceptions)


def test_the_blocks_own_error_cancels_the_children_and_joins_the_group():
    log = []

    async def child():
        try:
            await co.sleep(10)
        finally:
            log.append("child unwound")

    async def main():
        async with open_nursery() as nursery:
            nursery.start_soon(child)
            await co.sleep(0.01)
            raise ValueError("from the block")

    with pytest.raises(ExceptionGroup) as caught:
        co.run(main())
    assert [repr(e) for e in caught.value.exceptions] == ["ValueError('from the block')"]
    assert log == ["child unwound"]


def test_cancelling_a_nurserys_scope_cancels_its_children_and_ends_at_its_block():
    async def main():
        async with open_nursery() as nursery:
            nursery.start_soon(co.sleep, 10)
            nursery.start_soon(co.sleep, 10)
            await co.sleep(0.01)
            nursery.cancel_scope.cancel()
        return nursery.cancel_scope.cancelled_caught

    assert co.run(main()) is True  # the block's end is a checkpoint: the cancel ends there


def test_start_soon_on_a_closed_nursery_is_refused():
    async def main():
        async with open_nursery() as nursery:
            pass
        nursery.start_soon(co.sleep, 0)

    with pytest.raises(RuntimeError, match="closed"):
        co.run(main())


# ---------------------------------------------------------------------- level-triggered scopes


def test_a_cancelled_scope_raises_at_every_checkpoint_until_it_is_left():
    async def main():
        raised = 0
        with CancelScope() as scope:
            scope.cancel()
            for _ in range(5):
                try:
                    await co.sleep(0)
                except CancelledError:
                    raised += 1
        await co.sleep(0)  # outside the scope: no cancellation left
        return raised, scope.cancelled_caught

    assert co.run(main()) == (5, False)  # caught each time inside: none reached the exit


def test_a_task_that_catches_the_cancellation_cannot_forget_it():
    """Edge-triggered, this child would sleep on after swallowing its one CancelledError and the
    nursery would wait ten seconds; level-triggered, its next sleep raises again."""
    log = []

    async def stubborn():
        for attempt in range(3):
            try:
                await co.sleep(10)
            except CancelledError:
                log.append(attempt)  # swallowed: try again
        log.append("gave up")

    async def main():
        async with open_nursery() as nursery:
            nursery.start_soon(stubborn)
            await co.sleep(0.01)
            nursery.cancel_scope.cancel()

    started = time.monotonic()
    co.run(main())
    assert time.monotonic() - started < 5
    assert log == [0, 1, 2, "gave up"]


def test_a_scope_cancelled_before_it_is_entered_cancels_the_first_checkpoint():
    async def main():
        scope = CancelScope()
        scope.cancel()
        with scope:
            await co.sleep(10)
        return scope.cancelled_caught

    assert co.run(main()) is True


def test_the_contracts_cancel_is_level_triggered_too():
    log = []

    async def stubborn():
        while True:
            try:
                await co.sleep(10)
            except CancelledError:
                log.append("caught")
                if len(log) == 3:
                    raise

    async def main():
        task = await co.spawn(stubborn())
        await co.sleep(0.01)
        await co.cancel(task)
        return task.cancelled

    assert co.run(main()) is True
    assert log == ["caught"] * 3


def test_a_task_in_a_cancelled_scope_still_cancels_the_task_it_cancels():
    """cancel(task) from inside a cancelled scope (a cleanup, say) cancels its target first; only
    then does its wait, a checkpoint, raise."""

    async def main():
        victim = await co.spawn(co.sleep(10))
        with CancelScope() as scope:
            scope.cancel()
            await co.cancel(victim)  # raises CancelledError: the scope is cancelled
            raise AssertionError("not reached")
        await co.sleep(0.01)
        return scope.cancelled_caught, victim.cancelled

    assert co.run(main()) == (True, True)


# ---------------------------------------------------------------------- deadlines and shields


def test_fail_after_raises_the_builtin_timeout_error():
    async def main():
        with fail_after(0.01):
            await co.sleep(10)

    with pytest.raises(TimeoutError):
        co.run(main())


def test_move_on_after_leaves_the_block_and_says_so():
    async def main():
        with move_on_after(0.01) as late:
            await co.sleep(10)
        with move_on_after(10) as early:
            await co.sleep(0)
        return late.cancelled_caught, early.cancelled_caught

    assert co.run(main()) == (True, False)


def test_the_cancellation_ends_at_the_outermost_cancelled_scope():
    async def main():
        with move_on_after(0.01) as outer, move_on_after(0.02) as inner:
            await co.sleep(10)
        return outer.cancelled_caught, inner.cancelled_caught

    assert co.run(main()) == (True, False)


def test_a_deadline_already_past_cancels_the_first_checkpoint():
    async def main():
        with move_on_after(0) as scope:
            await co.sleep(0)
            raise AssertionError("not reached")
        return scope.cancelled_caught

    assert co.run(main()) is True


def test_a_deadline_moved_while_the_scope_is_open_takes_effect():
    async def main():
        with CancelScope() as scope:
            scope.deadline = time.monotonic() + 0.01
            await co.sleep(10)
        return scope.cancelled_caught

    assert co.run(main()) is True


def test_a_shield_holds_while_the_scope_around_it_is_cancelled():
    log = []

    async def main():
        with move_on_after(0.01) as outer:
            with CancelScope(shield=True) as shield:
                await co.sleep(0.05)  # past the outer deadline
                log.append("shielded sleep finished")
            log.append("left the shield")
            await co.sleep(0)  # the outer cancellation arrives here
            log.append("not reached")
        return outer.cancelled_caught, shield.cancelled_caught

    assert co.run(main()) == (True, False)
    assert log == ["shielded sleep finished", "left the shield"]


def test_lowering_a_shield_delivers_what_it_held_off():
    async def main():
        with CancelScope() as outer, CancelScope(shield=True) as shield:
            outer.cancel()
            await co.sleep(0)  # shielded: no cancellation
            shield.shield = False
            await co.sleep(10)  # now it arrives
        return outer.cancelled_caught

    assert co.run(main()) is True


def test_a_shield_keeps_a_nurserys_children_running_through_an_outer_cancel():
    log = []

    async def careful():
        with CancelScope(shield=True):
            await co.sleep(0.05)
            log.append("cleanup done")

    async def main():
        with move_on_after(0.01):
            async with open_nursery() as nursery:
                nursery.start_soon(careful)

    co.run(main())
    assert log == ["cleanup done"]


# ---------------------------------------------------------------------- nothing lost


def test_a_recv_cancelled_while_it_waits_leaves_the_bytes_in_the_socket():
    a, b = _pair()

    async def main():
        with CancelScope() as scope:

            async def canceller():
                await co.sleep(0.01)
                b.send(b"ping")  # arrives while the reader still waits...
                scope.cancel()  # ...and the cancel comes in the same slice

            async with open_nursery() as nursery:
                nursery.start_soon(canceller)
                await co.recv(a, 100)  # interrupted: it read nothing
                raise AssertionError("not reached")
        return scope.cancelled_caught, await co.recv(a, 100)

    try:
        assert co.run(main()) == (True, b"ping")
    finally:
        a.close()
        b.close()


def test_a_recv_woken_before_the_cancel_keeps_its_bytes_and_raises_at_the_next_checkpoint():
    a, b = _pair()
    got = []

    async def main():
        with CancelScope() as scope:

            async def reader():
                got.append(await co.recv(a, 100))  # woken by readiness, then cancelled
                await co.sleep(0)  # the cancellation lands here
                got.append("not reached")

            async def canceller():
                await co.sleep(0.01)
                b.send(b"pong")
                await co.sleep(0)  # the next poll makes the reader ready...
                scope.cancel()  # ...before it runs

            async with open_nursery() as nursery:
                nursery.start_soon(reader)
                nursery.start_soon(canceller)
        return scope.cancelled_caught

    try:
        assert co.run(main()) is True
        assert got == [b"pong"]
    finally:
        a.close()
        b.close()
