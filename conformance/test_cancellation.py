"""Nothing is lost when a wait on asyncio's API is cancelled: bytes, or connections.

Played through asyncio's own API (the ``asyncio`` style of ``conformance/harness.py``) on every
variant with an asyncio loop: asyncio, asyncio_eager, uvloop and the callbacks loop's drop-in.
A thread (``conformance/race.py``) writes 2-5 MB into a socket, or connects again and again,
while a task reads it with ``loop.sock_recv``, ``loop.sock_recv_into``, a ``StreamReader`` or
``loop.sock_accept``, each attempt under ``asyncio.timeout`` or cancelled by a sibling task
after a random delay of at most a millisecond, at least 500 times of each kind. Everything the
thread sent must arrive, the bytes in order (their sha256 compared), and nothing may reach the
loop's exception handler.

Where it comes from (CPython issue 78976 and gh-153761): asyncio's ``sock_recv`` and
``sock_accept`` read in the loop's reader callback into a future, and a cancellation arriving
in the same turn leaves what was read in a future nobody reads. ``conformance/README.md`` and
``reports/findings-cancellation.md`` tell the story and hold the figures per loop.

Each race is played twice, with lazy tasks and with eager ones (``asyncio.eager_task_factory``,
from 3.12), whatever the variant's loop defaults to: when the reader and its canceller first
run changes which turn their cancel lands in.
"""

from __future__ import annotations

from conformance.harness import prop
from conformance.race import INTACT, PLANS, race
from conformance.support import FACTORIES, use_factory

TIMEOUT = 120  # seconds per case, a guard against a hung loop; a case takes a few seconds


def _verdict(call: str):
    plan = PLANS["property-accept" if call == "sock_accept" else "property"]

    async def play_it():
        verdicts = {}
        for kind in FACTORIES:  # the reader and its canceller: lazy, then eager tasks
            use_factory(kind)
            verdicts[kind] = (await race(call, plan)).verdict(plan)
        return verdicts

    return play_it


@prop("io", timeout=TIMEOUT)
def test_sock_recv_cancelled_at_any_moment_loses_no_byte(play):
    """``loop.sock_recv`` under timeouts and sibling cancellations: every byte a thread sent
    arrives, in order."""
    assert play() == dict.fromkeys(FACTORIES, INTACT)


test_sock_recv_cancelled_at_any_moment_loses_no_byte.asyncio(_verdict("sock_recv"))


@prop("io", timeout=TIMEOUT)
def test_sock_recv_into_cancelled_at_any_moment_loses_no_byte(play):
    """``loop.sock_recv_into`` under timeouts and sibling cancellations: every byte a thread
    sent arrives, in order."""
    assert play() == dict.fromkeys(FACTORIES, INTACT)


test_sock_recv_into_cancelled_at_any_moment_loses_no_byte.asyncio(_verdict("sock_recv_into"))


@prop("io", timeout=TIMEOUT)
def test_a_stream_reader_cancelled_at_any_moment_loses_no_byte(play):
    """``StreamReader.read`` under timeouts and sibling cancellations (the transport paused
    and resumed by the reader's flow control meanwhile): every byte arrives, in order."""
    assert play() == dict.fromkeys(FACTORIES, INTACT)


test_a_stream_reader_cancelled_at_any_moment_loses_no_byte.asyncio(_verdict("stream"))


@prop("io", timeout=TIMEOUT)
def test_sock_accept_cancelled_at_any_moment_loses_no_connection(play):
    """``loop.sock_accept`` under timeouts and sibling cancellations: every connection a thread
    made is accepted, then or by a later call."""
    assert play() == dict.fromkeys(FACTORIES, INTACT)


test_sock_accept_cancelled_at_any_moment_loses_no_connection.asyncio(_verdict("sock_accept"))
