"""Threads: blocking work offloaded to a worker thread while the loop keeps serving.

What the upstream tests check: asyncio's test_base_events (run_in_executor results and errors),
trio's test_threads.py (to_thread.run_sync results, errors, the loop running meanwhile),
curio's test_thread.py; the idea is the Python Cookbook's ThreadPoolHandler: a worker thread
finishes, a wake-up fd tells the blocked loop.
"""

import threading

from conformance.harness import prop
from conformance.support import SAFETY, frame_names


def _in_a_worker(value):
    return value, threading.get_ident() != MAIN_THREAD


MAIN_THREAD = threading.get_ident()


@prop("threads")
def test_run_in_thread_returns_the_result(play):
    assert play() == ("result", True)  # (the value, computed off the loop's thread)


@test_run_in_thread_returns_the_result.callbacks
def _(loop):
    results = []

    def done(future):
        results.append(future.result())
        loop.stop()

    loop.run_in_thread(_in_a_worker, "result", callback=done)
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    return results[0] if results else "no result"


@test_run_in_thread_returns_the_result.generators
def _(co):
    return (yield from co.run_in_thread(_in_a_worker, "result"))


@test_run_in_thread_returns_the_result.coroutines
async def _(co):
    return await co.run_in_thread(_in_a_worker, "result")


@test_run_in_thread_returns_the_result.blocking
def _(co):
    return co.run_in_thread(_in_a_worker, "result")


def failing_in_a_worker():
    raise LookupError("from the worker", 3)


@prop("threads")
def test_run_in_thread_reraises_the_workers_exception(play):
    assert play() == ("LookupError", ("from the worker", 3), True)  # with the worker's frame


def _described(error):
    return type(error).__name__, error.args, "failing_in_a_worker" in frame_names(error)


@test_run_in_thread_reraises_the_workers_exception.callbacks
def _(loop):
    errors = []

    def done(future):
        errors.append(future.exception())
        loop.stop()

    loop.run_in_thread(failing_in_a_worker, callback=done)
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    return _described(errors[0]) if errors else "no outcome"


@test_run_in_thread_reraises_the_workers_exception.generators
def _(co):
    try:
        yield from co.run_in_thread(failing_in_a_worker)
    except LookupError as error:
        return _described(error)
    return "returned"


@test_run_in_thread_reraises_the_workers_exception.coroutines
async def _(co):
    try:
        await co.run_in_thread(failing_in_a_worker)
    except LookupError as error:
        return _described(error)
    return "returned"


@test_run_in_thread_reraises_the_workers_exception.blocking
def _(co):
    try:
        co.run_in_thread(failing_in_a_worker)
    except LookupError as error:
        return _described(error)
    return "returned"


TICKS = 5


@prop("threads")
def test_the_loop_keeps_serving_timers_while_a_thread_works(play):
    # The worker waits for the loop's ticker; a loop blocked on the worker never ticks.
    assert play() == (True, TICKS)


def _wait_for(ticked):
    return ticked.wait(SAFETY)


@test_the_loop_keeps_serving_timers_while_a_thread_works.callbacks
def _(loop):
    ticked = threading.Event()
    ticks = []
    results = []

    def tick():
        ticks.append(loop.time())
        if len(ticks) == TICKS:
            ticked.set()
        else:
            loop.call_later(0.002, tick)

    def done(future):
        results.append(future.result())
        loop.stop()

    loop.call_later(0.002, tick)
    loop.run_in_thread(_wait_for, ticked, callback=done)
    guard = loop.call_later(SAFETY * 2, loop.stop)
    loop.run_forever()
    guard.cancel()
    return (results[0] if results else "no result"), len(ticks)


@test_the_loop_keeps_serving_timers_while_a_thread_works.generators
def _(co):
    ticked = threading.Event()
    ticks = []

    def ticker():
        for _ in range(TICKS):
            yield from co.sleep(0.002)
            ticks.append(co.now())
        ticked.set()

    task = yield from co.spawn(ticker())
    result = yield from co.run_in_thread(_wait_for, ticked)
    yield from co.join(task)
    return result, len(ticks)


@test_the_loop_keeps_serving_timers_while_a_thread_works.coroutines
async def _(co):
    ticked = threading.Event()
    ticks = []

    async def ticker():
        for _ in range(TICKS):
            await co.sleep(0.002)
            ticks.append(co.now())
        ticked.set()

    task = await co.spawn(ticker())
    result = await co.run_in_thread(_wait_for, ticked)
    await co.join(task)
    return result, len(ticks)


@test_the_loop_keeps_serving_timers_while_a_thread_works.blocking
def _(co):
    ticked = threading.Event()
    ticks = []

    def ticker():
        for _ in range(TICKS):
            co.sleep(0.002)
            ticks.append(co.now())
        ticked.set()

    task = co.spawn(ticker)
    result = co.run_in_thread(_wait_for, ticked)
    co.join(task)
    return result, len(ticks)
