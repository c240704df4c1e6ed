"""The fault suite catches what it claims to: its cases, played on peers and loops built
without the protection they check.

Each test plays the very check function a fault-suite case uses (from ``conformance/``) twice:
on the lab's protected server, crawler or loop (the control: the case holds) and on a copy
with exactly that protection taken out (``tests/unprotected.py`` for processes, a one-method
subclass for a loop), where the one observation the protection is about must fail:

- an accept loop without EMFILE back-off spins when out of descriptors;
- an echo server that buffers without bound (asyncio's textbook protocol, no flow control)
  grows by tens of MiB for a peer that never reads;
- a crawler without a body limit (``--max-bytes`` above the 50 MiB page) reads and parses the
  hostile site's 50 MiB page: its memory balloons (and it may not end in time);
- a select() loop that does not drop an fd closed behind its back fails on every iteration;
- a ``cancel()`` that a timeout cannot interrupt waits for a task that swallows its
  cancellation, so the run ends without the timeout's error.
"""

from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

import pytest

import loops
from conformance import test_faults_loop
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
from loops.handlers.loop import Loop as HandlersLoop

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
