"""Each property can fail: the real property functions, played on deliberately broken loops.

Every broken loop here is asyncio's selector loop with one fault put in (a tiny subclass or a
swapped coroutines function), so the only difference from the passing control is the fault.
Each case first plays the property on plain asyncio (it must pass), then on the broken loop
(it must fail with an AssertionError, not hang or crash), which shows the property catching
exactly that fault.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import selectors
import socket
from types import SimpleNamespace

import pytest

import loops
from conformance import (
    test_regressions,
    test_scheduling,
    test_tasks,
    test_threads,
    test_timers,
)
from conformance.harness import check_property
from loops._aio import callbacks_factory, coroutines_namespace

BaseLoop = callbacks_factory(asyncio.SelectorEventLoop)


class LifoLoop(BaseLoop):
    """call_soon pushes to the front of the ready queue: last scheduled runs first."""

    def _call_soon(self, callback, args, context):
        handle = super()._call_soon(callback, args, context)
        self._ready.pop()
        self._ready.appendleft(handle)
        return handle


class SpinningSelector(selectors.DefaultSelector):
    """Never blocks: polls with a zero timeout whatever the loop asked for."""

    def select(self, timeout=None):
        return super().select(0)


def busy_waiting_loop():
    """A loop that spins instead of sleeping in the selector."""
    return BaseLoop(selector=SpinningSelector())


class EarlyTimersLoop(BaseLoop):
    """Every timer is due 5 ms before its deadline."""

    def call_at(self, when, callback, *args, context=None):
        return super().call_at(when - 0.005, callback, *args, context=context)


class LeakyTimersLoop(BaseLoop):
    """Forgets to count cancelled timers, so the heap is never compacted."""

    def _timer_handle_cancelled(self, handle):
        pass


class MailboxLoop(BaseLoop):
    """call_soon_threadsafe through a one-slot mailbox: a call arriving before the loop
    emptied the slot overwrites the previous one (lost under load)."""

    _slot = None

    def call_soon_threadsafe(self, callback, *args, context=None):
        self._check_closed()
        self._slot = (callback, args)
        self._write_to_self()

    def _run_once(self):
        slot, self._slot = self._slot, None
        if slot is not None:
            self.call_soon(slot[0], *slot[1])
        super()._run_once()


class SleepyLoop(BaseLoop):
    """call_soon_threadsafe queues the call but forgets to wake the selector."""

    def call_soon_threadsafe(self, callback, *args, context=None):
        self._check_closed()
        return self._call_soon(callback, args, context)


class InlineThreadsLoop(BaseLoop):
    """run_in_thread runs the function right there, on the loop's thread, blocking it."""

    def run_in_thread(self, fn, *args, callback):
        future = concurrent.futures.Future()
        try:
            future.set_result(fn(*args))
        except Exception as error:
            future.set_exception(error)
        self.call_soon(callback, future)


class DescriptorStealingLoop(BaseLoop):
    """create_connection(sock=...) works on a second socket object over the same descriptor
    number, as uvloop's libuv handle did (uvloop #645, #738): a cancel closes that number while
    the caller's socket object still holds it, and its close() later hits whoever reused it."""

    async def create_connection(self, *args, sock=None, **kwargs):
        if sock is not None:
            sock = socket.socket(fileno=sock.fileno())  # no dup: one number, two owners
        return await super().create_connection(*args, sock=sock, **kwargs)


def _tracebackless_join_namespace():
    """asyncio's coroutines style whose join re-raises a copy: the child's traceback is lost."""
    namespace = coroutines_namespace(BaseLoop)

    async def join(task):
        try:
            return await task
        except Exception as error:
            raise type(error)(*error.args) from None

    return SimpleNamespace(**{**vars(namespace), "join": join})


CONTROL = loops.get("asyncio")

# A fault in the callbacks style: fault id -> (the property that must catch it, the broken
# loop factory).
FAULTS = {
    "lifo-ready-queue": (test_scheduling.test_call_soon_runs_in_fifo_order, LifoLoop),
    "lifo-starves-turns": (test_scheduling.test_tasks_that_yield_take_turns, LifoLoop),
    "busy-wait": (test_timers.test_an_idle_loop_does_not_busy_wait, busy_waiting_loop),
    "early-timers": (test_timers.test_timers_never_fire_early, EarlyTimersLoop),
    "leaky-cancelled-timers": (test_timers.test_cancelled_timers_leak_nothing, LeakyTimersLoop),
    "threadsafe-drops-calls": (
        test_scheduling.test_call_soon_threadsafe_loses_no_call_under_load,
        MailboxLoop,
    ),
    "threadsafe-no-wakeup": (
        test_scheduling.test_call_soon_threadsafe_wakes_a_blocked_loop,
        SleepyLoop,
    ),
    "thread-blocks-loop": (
        test_threads.test_the_loop_keeps_serving_timers_while_a_thread_works,
        InlineThreadsLoop,
    ),
}
# A fault on asyncio's own API: the broken entry is an asyncio loop factory.
ASYNCIO_FAULTS = {
    "threadsafe-drops-calls-asyncio": (
        test_scheduling.test_call_soon_threadsafe_loses_no_call_under_load,
        MailboxLoop,
    ),
    "cancelled-connect-closes-a-reused-fd": (
        test_regressions.test_a_cancelled_tls_create_connection_never_closes_a_reused_descriptor,
        DescriptorStealingLoop,
    ),
}
# A fault in the coroutines style: the broken entry is a coroutines namespace.
COROUTINE_FAULTS = {
    "join-loses-traceback": (
        test_tasks.test_join_reraises_the_childs_exception_with_its_traceback,
        _tracebackless_join_namespace(),
    ),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("fault", "style"),
    [(f, "callbacks") for f in FAULTS]
    + [(f, "coroutines") for f in COROUTINE_FAULTS]
    + [(f, "asyncio") for f in ASYNCIO_FAULTS],
)
def test_the_property_passes_on_asyncio_and_catches_the_fault(fault, style):
    prop, broken_entry = {**FAULTS, **COROUTINE_FAULTS, **ASYNCIO_FAULTS}[fault]
    broken = loops.Variant(
        name=fault,
        summary=f"deliberately broken: {fault}",
        lineage="asyncio with one fault put in, for tests/test_conformance_catches_faults.py",
        capabilities=frozenset(loops.CAPABILITIES),
        **{"asyncio_loop" if style == "asyncio" else style: broken_entry},
    )
    check_property(prop, CONTROL, style)  # the control: the property holds without the fault
    with pytest.raises(AssertionError):
        check_property(prop, broken, style)
