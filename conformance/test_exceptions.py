"""Exceptions: where errors go, and that the loop survives them.

What the upstream tests check: asyncio's test_base_events (default and custom exception handlers, a
handler that raises, KeyboardInterrupt/SystemExit propagating out of run_forever and the loop
running again afterwards, run_until_complete inside a running loop), trio's test_run.py
(test_initial_task_error, test_run_nesting), curio's test_kernel.py (errors reach the joiner).
"""

import logging

import pytest

from conformance.harness import prop
from conformance.support import frame_names, outcome


@prop("exceptions")
def test_an_exception_in_a_callback_reaches_the_handler_and_the_loop_goes_on(play):
    assert play() == {
        "message": True,
        "exception": True,
        "handle": True,
        "next callback ran": True,
    }


@test_an_exception_in_a_callback_reaches_the_handler_and_the_loop_goes_on.callbacks
def _(loop):
    error = ValueError("from a callback")
    contexts = []
    ran = []

    def failing():
        raise error

    loop.set_exception_handler(lambda loop, context: contexts.append(context))
    handle = loop.call_soon(failing)
    loop.call_soon(ran.append, "next")
    loop.call_soon(loop.stop)
    loop.run_forever()
    context = contexts[0] if contexts else {}
    return {
        "message": isinstance(context.get("message"), str) and bool(context["message"]),
        "exception": context.get("exception") is error,
        "handle": context.get("handle") is handle,
        "next callback ran": ran == ["next"],
    }


@prop("exceptions")
def test_a_broken_exception_handler_does_not_kill_the_loop(play):
    assert play() == ["handler called", "next callback ran"]


@test_a_broken_exception_handler_does_not_kill_the_loop.callbacks
def _(loop):
    ran = []

    def broken_handler(loop, context):
        ran.append("handler called")
        raise RuntimeError("the handler itself is broken")

    def failing():
        raise ValueError("from a callback")

    loop.set_exception_handler(broken_handler)
    loop.call_soon(failing)
    loop.call_soon(ran.append, "next callback ran")
    loop.call_soon(loop.stop)
    # The loop may log the handler's failure; that is its right, and not this test's noise.
    logging.disable(logging.CRITICAL)
    try:
        loop.run_forever()
    finally:
        logging.disable(logging.NOTSET)
    return ran


ESCAPES = (KeyboardInterrupt, SystemExit)


@prop("interrupts")
def test_keyboard_interrupt_and_system_exit_escape_run_and_the_loop_runs_again(play):
    results = [outcome(play, kind) for kind in (*ESCAPES, None)]
    assert [(how, type(value) if how == "raised" else value) for how, value in results] == [
        ("raised", KeyboardInterrupt),
        ("raised", SystemExit),
        ("returned", "usable"),
    ]


@test_keyboard_interrupt_and_system_exit_escape_run_and_the_loop_runs_again.callbacks
def _(loop, kind):
    def interrupt():
        raise kind()

    ran = []
    if kind is not None:
        loop.call_soon(interrupt)
        loop.call_soon(ran.append, "same batch")  # may or may not run: not the point
        try:
            loop.run_forever()
        except kind as escaped:
            # The same loop object must run again; only then does the interrupt go on up.
            ran.clear()
            loop.call_soon(ran.append, "usable")
            loop.call_soon(loop.stop)
            loop.run_forever()
            if "usable" in ran:
                raise escaped
            return "the loop did not run again"
        return "run_forever swallowed it"
    loop.call_soon(ran.append, "usable")
    loop.call_soon(loop.stop)
    loop.run_forever()
    return ran[0]


@test_keyboard_interrupt_and_system_exit_escape_run_and_the_loop_runs_again.generators
def _(co, kind):
    yield from co.sleep(0.001)
    if kind is not None:
        raise kind()
    return "usable"


@test_keyboard_interrupt_and_system_exit_escape_run_and_the_loop_runs_again.coroutines
async def _(co, kind):
    await co.sleep(0.001)
    if kind is not None:
        raise kind()
    return "usable"


@test_keyboard_interrupt_and_system_exit_escape_run_and_the_loop_runs_again.blocking
def _(co, kind):
    co.sleep(0.001)
    if kind is not None:
        raise kind()
    return "usable"


class MainError(Exception):
    """What the main task raises."""


@prop("exceptions")
def test_the_main_tasks_exception_comes_out_of_run_unchanged(play):
    raised = []
    how, error = outcome(play, raised)
    # The very object the main task raised, traceback reaching into the main task's frame.
    assert (how, error is raised[0], "main_task_body" in frame_names(error)) == (
        "raised",
        True,
        True,
    )


@test_the_main_tasks_exception_comes_out_of_run_unchanged.generators
def main_task_body(co, raised):
    yield from co.sleep(0.001)
    raised.append(MainError("from the main task", 7))
    raise raised[0]


@test_the_main_tasks_exception_comes_out_of_run_unchanged.coroutines
async def main_task_body(co, raised):  # the same name in both styles, for the traceback
    await co.sleep(0.001)
    raised.append(MainError("from the main task", 7))
    raise raised[0]


@test_the_main_tasks_exception_comes_out_of_run_unchanged.blocking
def main_task_body(co, raised):  # the same name in both styles, for the traceback
    co.sleep(0.001)
    raised.append(MainError("from the main task", 7))
    raise raised[0]


@prop("core")
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the refused coroutine is closed unrun
def test_running_a_loop_inside_a_running_loop_is_a_runtime_error(play):
    assert play() == ("RuntimeError", "the outer loop went on")


@test_running_a_loop_inside_a_running_loop_is_a_runtime_error.callbacks
def _(loop):
    seen = []

    def nested():
        try:
            loop.run_forever()
        except RuntimeError:
            seen.append("RuntimeError")
        else:
            seen.append("ran nested")
        loop.call_soon(seen.append, "the outer loop went on")
        loop.call_soon(loop.stop)

    loop.call_soon(nested)
    loop.run_forever()
    return tuple(seen)


@test_running_a_loop_inside_a_running_loop_is_a_runtime_error.generators
def _(co):
    def inner():
        yield from co.sleep(0)
        return "ran nested"

    body = inner()
    try:
        seen = co.run(body)
    except RuntimeError:
        seen = "RuntimeError"
    finally:
        body.close()
    yield from co.sleep(0.001)
    return seen, "the outer loop went on"


@test_running_a_loop_inside_a_running_loop_is_a_runtime_error.coroutines
async def _(co):
    async def inner():
        await co.sleep(0)
        return "ran nested"

    body = inner()
    try:
        seen = co.run(body)
    except RuntimeError:
        seen = "RuntimeError"
    finally:
        body.close()
    await co.sleep(0.001)
    return seen, "the outer loop went on"


@test_running_a_loop_inside_a_running_loop_is_a_runtime_error.blocking
def _(co):
    def inner():
        co.sleep(0)
        return "ran nested"

    try:
        seen = co.run(inner)
    except RuntimeError:
        seen = "RuntimeError"
    co.sleep(0.001)
    return seen, "the outer loop went on"
