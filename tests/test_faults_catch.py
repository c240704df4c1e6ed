"""The fault suite catches what it claims to: its cases, played on peers and loops built
without the protection they check.

Each test plays the very check function a fault-suite case uses (from ``conformance/``) twice:
on the lab's protected server, crawler or loop (the control: the case holds) and on a copy
with exactly that protection taken out (``tests/unprotected.py`` for processes, a one-method
subclass for a loop, ``LOOP_CASES``), where the one observation the protection is about must
fail.
"""

from __future__ import annotations

import asyncio
import heapq
import sys
from types import SimpleNamespace

import pytest

import loops
from conformance import test_deadlines, test_faults_arguments, test_faults_fds, test_faults_loop
from conformance.harness import Case, check_property
from conformance.processes import ECHO_READY, echo_command, running
from conformance.test_faults_accept import RECOVERED, exhausted_server_pauses_and_recovers
from conformance.test_faults_crawler import (  # noqa: F401 (hostile_site is a fixture)
    SURVIVED,
    crawl_hostile_site,
    hostile_site,
)
from conformance.test_faults_echo import STALLED_ONLY_ITSELF, a_non_reader_stalls_only_itself
from loops._aio import coroutines_namespace
from loops.callbacks.reactor import Loop as CallbacksLoop
from loops.handlers.loop import Loop as HandlersLoop
from loops.handlers.loop import TimerHandle as HandlersTimer

ASYNCIO = loops.get("asyncio")
CONTROL = Case(ASYNCIO, "coroutines")


def unprotected(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.unprotected", *args]


def starter(command: list[str], tmp_path):
    return lambda **options: running(command, ECHO_READY, tmp_path, **options)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("protected", [True, False], ids=["lab-server", "no-backoff"])
def test_an_accept_loop_without_emfile_backoff_is_caught_spinning(protected, tmp_path):
    command = echo_command(CONTROL)
    if not protected:
        command = unprotected("no-backoff-echo", *command[3:])
    seen = exhausted_server_pauses_and_recovers(starter(command, tmp_path))
    if protected:
        assert seen == RECOVERED
    else:
        assert seen["does not spin"] is not True, seen


@pytest.mark.timeout(90)
@pytest.mark.parametrize("protected", [True, False], ids=["lab-server", "buffering"])
def test_a_server_that_buffers_without_bound_is_caught_growing(protected, tmp_path):
    command = echo_command(CONTROL) if protected else unprotected("buffering-echo")
    seen = a_non_reader_stalls_only_itself(starter(command, tmp_path))
    if protected:
        assert seen == STALLED_ONLY_ITSELF
    else:
        assert seen["server memory bounded"] is not True, seen


@pytest.mark.timeout(120)
@pytest.mark.parametrize("protected", [True, False], ids=["lab-crawler", "no-body-limit"])
def test_a_crawler_without_a_body_limit_is_caught(protected, hostile_site, tmp_path):  # noqa: F811
    extra = () if protected else ("--max-bytes", str(2**30))
    seen = crawl_hostile_site(CONTROL, hostile_site, tmp_path, *extra, patience=20)
    if protected:
        assert seen == SURVIVED
    else:  # it reads and parses the 50 MiB page: memory balloons (and it may not end in time)
        assert seen["memory bounded"] is not True, seen


class BlindHandlersLoop(HandlersLoop):
    """The handlers loop without its guard: a closed fd stays in every select() call."""

    def _forget_closed(self, error):
        return False


class GhostBlindCallbacksLoop(CallbacksLoop):
    """The callbacks reactor that skips readiness for an fd it no longer knows, as it once did,
    instead of moving its registrations to a fresh epoll."""

    def __init__(self) -> None:
        super().__init__()
        self._readiness.drop_ghosts = lambda: None


class TrustingHandlersLoop(HandlersLoop):
    """The handlers loop with the call_at it was built with: no check of the deadline."""

    def call_at(self, when, callback, *args):
        self._timer_seq += 1
        timer = HandlersTimer(when, self._timer_seq, callback, args, self)
        heapq.heappush(self._timers, timer)
        return timer


def _child_task_timeout_namespace() -> SimpleNamespace:
    """asyncio's coroutines style whose timeout_after runs the work as a child task and
    cancels it on expiry (roundrobin's first design): the TimeoutError comes hops late."""
    namespace = coroutines_namespace(asyncio.new_event_loop)

    async def timeout_after(seconds, coro):
        child = asyncio.ensure_future(coro)
        done, _ = await asyncio.wait({child}, timeout=seconds)
        if not done:
            child.cancel()
            await asyncio.wait({child})
            raise TimeoutError(f"timed out after {seconds} s")
        return child.result()

    return SimpleNamespace(**{**vars(namespace), "timeout_after": timeout_after})


def _variant(name: str, **entries) -> loops.Variant:
    return loops.Variant(
        name=name,
        summary=f"deliberately unprotected: {name}",
        lineage="a lab loop with one protection taken out, for tests/test_faults_catch.py",
        capabilities=frozenset(loops.CAPABILITIES),
        **entries,
    )


def _uninterruptible_cancel_namespace() -> SimpleNamespace:
    """asyncio's coroutines style whose cancel() waits for the task whatever happens: it
    swallows its own cancellation, so a timeout around it cannot end the wait."""
    namespace = coroutines_namespace(asyncio.new_event_loop)

    async def cancel(task):
        task.cancel()
        while not task.done():
            try:
                await asyncio.wait((task,))
            except asyncio.CancelledError:
                continue

    return SimpleNamespace(**{**vars(namespace), "cancel": cancel})


LOOP_CASES = {
    "select-keeps-a-closed-fd": (
        test_faults_loop.test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it,
        "callbacks",
        loops.get("handlers"),
        _variant("blind-handlers", callbacks=BlindHandlersLoop),
    ),
    "epoll-keeps-a-ghost": (
        test_faults_fds.test_a_socket_closed_behind_a_dup_neither_crashes_nor_spins_the_loop,
        "callbacks",
        loops.get("callbacks"),
        _variant("ghost-blind-callbacks", callbacks=GhostBlindCallbacksLoop),
    ),
    "epoll-keeps-a-ghost-under-a-reused-number": (
        test_faults_fds.test_a_socket_closed_behind_a_dup_then_its_number_reused_fools_nobody,
        "callbacks",
        loops.get("callbacks"),
        _variant("ghost-blind-callbacks", callbacks=GhostBlindCallbacksLoop),
    ),
    "call_at-trusts-its-deadline": (
        test_faults_arguments.test_bad_arguments_are_refused_clearly_and_the_loop_goes_on,
        "callbacks",
        loops.get("handlers"),
        _variant("trusting-handlers", callbacks=TrustingHandlersLoop),
    ),
    "timeout-through-a-child-task": (
        test_deadlines.test_waits_of_every_kind_that_expire_together_act_in_deadline_order,
        "coroutines",
        ASYNCIO,
        _variant("child-task-timeout", coroutines=_child_task_timeout_namespace()),
    ),
    "cancel-ignores-timeouts": (
        test_faults_loop.test_a_task_that_swallows_cancellation_cannot_keep_a_timeout_from_ending_the_run,
        "coroutines",
        ASYNCIO,
        _variant("shielded-cancel", coroutines=_uninterruptible_cancel_namespace()),
    ),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("fault", list(LOOP_CASES))
def test_a_loop_without_the_protection_fails_the_loop_case(fault):
    prop, style, control, broken = LOOP_CASES[fault]
    check_property(prop, control, style)  # the control: the case holds with the protection
    with pytest.raises(AssertionError):
        check_property(prop, broken, style)
