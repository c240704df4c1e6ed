"""Timers: when scheduled work fires, what cancelling costs, and what waiting costs.

What the upstream tests check: asyncio's test_base_events (call_later/call_at order, negative
delays, the heap compaction of cancelled timers, _run_once's timeout), uvloop's
tests/test_base.py (call_later rounding to its millisecond clock), trio's test_run.py
(deadlines, the pruned deadline heap), curio's test_kernel.py (sleep never returns early).
"Never early" compares the loop's own clock; lateness is the sleep benchmark's business, not a
test's.
"""

import math
import socket
import threading
import time

from conformance.harness import prop
from conformance.support import (
    CLOCK_RESOLUTION,
    SAFETY,
    heap_growth,
    nonblocking_pair,
    outcome,
)

DELAYS = [0.03, 0.01, 0.02, 0.0, 0.025, 0.005]


@prop("core")
def test_timers_fire_in_deadline_order(play):
    assert play() == sorted(DELAYS)


@test_timers_fire_in_deadline_order.callbacks
def _(loop):
    fired = []
    for delay in DELAYS:
        loop.call_later(delay, fired.append, delay)
    loop.call_later(max(DELAYS) + 0.01, loop.stop)
    loop.run_forever()
    return fired


@test_timers_fire_in_deadline_order.generators
def _(co):
    fired = []

    def sleeper(delay):
        yield from co.sleep(delay)
        fired.append(delay)

    tasks = []
    for delay in DELAYS:
        tasks.append((yield from co.spawn(sleeper(delay))))
    for task in tasks:
        yield from co.join(task)
    return fired


@test_timers_fire_in_deadline_order.coroutines
async def _(co):
    fired = []

    async def sleeper(delay):
        await co.sleep(delay)
        fired.append(delay)

    tasks = [await co.spawn(sleeper(delay)) for delay in DELAYS]
    for task in tasks:
        await co.join(task)
    return fired


@test_timers_fire_in_deadline_order.blocking
def _(co):
    fired = []

    def sleeper(delay):
        co.sleep(delay)
        fired.append(delay)

    tasks = [co.spawn(sleeper, delay) for delay in DELAYS]
    for task in tasks:
        co.join(task)
    return fired


EARLY_DELAYS = [0.001, 0.002, 0.003, 0.005, 0.008, 0.013, 0.021, 0.034, 0.05]


@prop("core")
def test_timers_never_fire_early(play):
    slept = play()
    # Every wake-up, on the loop's own clock, at least its delay (within clock resolution).
    assert [d for d in EARLY_DELAYS if slept[d] < d - CLOCK_RESOLUTION] == []


@test_timers_never_fire_early.callbacks
def _(loop):
    slept = {}

    def wake(delay, start):
        slept[delay] = loop.time() - start
        if len(slept) == len(EARLY_DELAYS):
            loop.stop()

    for delay in EARLY_DELAYS:
        loop.call_later(delay, wake, delay, loop.time())
    loop.run_forever()
    return slept


@test_timers_never_fire_early.generators
def _(co):
    slept = {}

    def sleeper(delay):
        start = co.now()
        yield from co.sleep(delay)
        slept[delay] = co.now() - start

    tasks = []
    for delay in EARLY_DELAYS:
        tasks.append((yield from co.spawn(sleeper(delay))))
    for task in tasks:
        yield from co.join(task)
    return slept


@test_timers_never_fire_early.coroutines
async def _(co):
    slept = {}

    async def sleeper(delay):
        start = co.now()
        await co.sleep(delay)
        slept[delay] = co.now() - start

    tasks = [await co.spawn(sleeper(delay)) for delay in EARLY_DELAYS]
    for task in tasks:
        await co.join(task)
    return slept


@test_timers_never_fire_early.blocking
def _(co):
    slept = {}

    def sleeper(delay):
        start = co.now()
        co.sleep(delay)
        slept[delay] = co.now() - start

    tasks = [co.spawn(sleeper, delay) for delay in EARLY_DELAYS]
    for task in tasks:
        co.join(task)
    return slept


@prop("timer-fifo")
def test_equal_deadlines_fire_in_scheduling_order(play):
    assert play() == list(range(10))


@test_equal_deadlines_fire_in_scheduling_order.callbacks
def _(loop):
    fired = []
    when = loop.time() + 0.01
    for i in range(10):
        loop.call_at(when, fired.append, i)
    loop.call_at(when, loop.stop)
    loop.run_forever()
    return fired


@prop("core")
def test_a_negative_delay_runs_at_once(play):
    # Not treated as "never", not as a huge unsigned wait: before a timer due in SAFETY seconds.
    assert play() == ["negative delay ran"]


@test_a_negative_delay_runs_at_once.callbacks
def _(loop):
    ran = []

    def finish(what):
        ran.append(what)
        loop.stop()

    guard = loop.call_later(SAFETY, finish, "the later timer came first")
    loop.call_later(-1, finish, "negative delay ran")
    loop.run_forever()
    guard.cancel()
    return ran


@test_a_negative_delay_runs_at_once.generators
def _(co):
    ran = []

    def later():
        yield from co.sleep(SAFETY)
        ran.append("the later timer came first")

    task = yield from co.spawn(later())
    yield from co.sleep(-1)
    ran.append("negative delay ran")
    yield from co.cancel(task)
    return ran


@test_a_negative_delay_runs_at_once.coroutines
async def _(co):
    ran = []

    async def later():
        await co.sleep(SAFETY)
        ran.append("the later timer came first")

    task = await co.spawn(later())
    await co.sleep(-1)
    ran.append("negative delay ran")
    await co.cancel(task)
    return ran


@test_a_negative_delay_runs_at_once.blocking
def _(co):
    ran = []

    def later():
        co.sleep(SAFETY)
        ran.append("the later timer came first")

    task = co.spawn(later)
    co.sleep(-1)
    ran.append("negative delay ran")
    co.cancel(task)
    return ran


def _cancel_delay(i):
    # A 50 ms head start: the cancels, issued one after another, all land well before any
    # deadline even on a loaded machine (a timer that fired before its cancel is a race, not
    # a fault).
    return 0.05 + 0.002 * i


@prop("core")
def test_cancelled_timers_never_fire(play):
    # Sorted: timers expiring in one iteration may run in any order; which ran is the point.
    assert sorted(play()) == [0, 2, 4, 6, 8]


@test_cancelled_timers_never_fire.callbacks
def _(loop):
    fired = []
    handles = [loop.call_later(_cancel_delay(i), fired.append, i) for i in range(10)]
    for handle in handles[1::2]:
        handle.cancel()
    loop.call_later(_cancel_delay(10), loop.stop)
    loop.run_forever()
    return fired


@test_cancelled_timers_never_fire.generators
def _(co):
    fired = []

    def sleeper(i):
        yield from co.sleep(_cancel_delay(i))
        fired.append(i)

    tasks = []
    for i in range(10):
        tasks.append((yield from co.spawn(sleeper(i))))
    for task in tasks[1::2]:
        yield from co.cancel(task)
    yield from co.sleep(_cancel_delay(10))
    return fired


@test_cancelled_timers_never_fire.coroutines
async def _(co):
    fired = []

    async def sleeper(i):
        await co.sleep(_cancel_delay(i))
        fired.append(i)

    tasks = [await co.spawn(sleeper(i)) for i in range(10)]
    for task in tasks[1::2]:
        await co.cancel(task)
    await co.sleep(_cancel_delay(10))
    return fired


@test_cancelled_timers_never_fire.blocking
def _(co):
    fired = []

    def sleeper(i):
        co.sleep(_cancel_delay(i))
        fired.append(i)

    tasks = [co.spawn(sleeper, i) for i in range(10)]
    for task in tasks[1::2]:
        co.cancel(task)
    co.sleep(_cancel_delay(10))
    return fired


CANCELLED_TIMERS = 10_000
WARM_UP = 2_000  # cancels before measuring, so free lists and caches are already grown
# Keeping 10 000 cancelled timer entries costs well over a megabyte (an asyncio TimerHandle
# holds its callback, arguments and context). A loop that prunes lazily stays bounded but not
# at zero: trio prunes its deadline heap only once it holds more than twice its live deadlines
# plus DEADLINE_HEAP_MIN_PRUNE_THRESHOLD (trio/_core/_run.py), stale entries held until then.
LEAK_BOUND = 600_000


@prop("timer-compaction", timeout=60)
def test_cancelled_timers_leak_nothing(play):
    growth = play()
    print(f"heap growth over {CANCELLED_TIMERS} cancelled timers: {growth} bytes")
    assert growth < LEAK_BOUND  # bytes of Python heap still held after the loop moved on


@test_cancelled_timers_leak_nothing.callbacks
def _(loop):
    def noop():
        pass

    def cancel_timers(count):
        for _ in range(count):
            loop.call_later(3600, noop).cancel()
        loop.call_soon(loop.stop)  # one more iteration after the cancels

    def run(count):
        loop.call_soon(cancel_timers, count)
        loop.run_forever()

    first_due = loop.call_later(1800, noop)  # a live timer due first: cancelled ones queue behind
    run(WARM_UP)
    with heap_growth() as growth:
        for _ in range(CANCELLED_TIMERS // 100):
            run(100)
    first_due.cancel()
    return growth[0]


@test_cancelled_timers_leak_nothing.generators
def _(co):
    def sleeper():
        yield from co.sleep(3600)

    def cancel_sleepers(count):
        tasks = []
        for _ in range(count):
            tasks.append((yield from co.spawn(sleeper())))
        yield from co.sleep(0)  # every sleeper is now waiting on its timer
        for task in tasks:
            yield from co.cancel(task)

    first_due = yield from co.spawn(co.sleep(1800))  # due first: cancelled timers queue behind it
    yield from cancel_sleepers(WARM_UP)
    with heap_growth() as growth:
        for _ in range(CANCELLED_TIMERS // 500):
            yield from cancel_sleepers(500)
        yield from co.sleep(0.001)
    yield from co.cancel(first_due)
    return growth[0]


@test_cancelled_timers_leak_nothing.coroutines
async def _(co):
    async def sleeper():
        await co.sleep(3600)

    async def cancel_sleepers(count):
        tasks = [await co.spawn(sleeper()) for _ in range(count)]
        await co.sleep(0)  # every sleeper is now waiting on its timer
        for task in tasks:
            await co.cancel(task)

    first_due = await co.spawn(co.sleep(1800))  # due first: cancelled timers queue behind it
    await cancel_sleepers(WARM_UP)
    with heap_growth() as growth:
        for _ in range(CANCELLED_TIMERS // 500):
            await cancel_sleepers(500)
        await co.sleep(0.001)
    await co.cancel(first_due)
    return growth[0]


@test_cancelled_timers_leak_nothing.blocking
def _(co):
    def sleeper():
        co.sleep(3600)

    def cancel_sleepers(count):
        tasks = [co.spawn(sleeper) for _ in range(count)]
        co.sleep(0)  # every sleeper is now waiting on its timer
        for task in tasks:
            co.cancel(task)

    first_due = co.spawn(co.sleep, 1800)  # due first: cancelled timers queue behind it
    cancel_sleepers(WARM_UP)
    with heap_growth() as growth:
        for _ in range(CANCELLED_TIMERS // 500):
            cancel_sleepers(500)
        co.sleep(0.001)
    co.cancel(first_due)
    return growth[0]


BLOCK = 0.05


@prop("core")
def test_time_keeps_advancing_while_a_callback_blocks(play):
    assert play() >= BLOCK - CLOCK_RESOLUTION


@test_time_keeps_advancing_while_a_callback_blocks.callbacks
def _(loop):
    seen = []

    def blocker():
        seen.append(loop.time())
        time.sleep(BLOCK)  # a blocking call in a callback: the situation under test

    loop.call_soon(blocker)
    loop.call_soon(lambda: (seen.append(loop.time()), loop.stop()))
    loop.run_forever()
    return seen[1] - seen[0]


@test_time_keeps_advancing_while_a_callback_blocks.generators
def _(co):
    yield from co.sleep(0)
    start = co.now()
    time.sleep(BLOCK)  # a blocking call in a task: the situation under test
    return co.now() - start


@test_time_keeps_advancing_while_a_callback_blocks.coroutines
async def _(co):
    await co.sleep(0)
    start = co.now()
    time.sleep(BLOCK)  # a blocking call in a task: the situation under test
    return co.now() - start


@test_time_keeps_advancing_while_a_callback_blocks.blocking
def _(co):
    co.sleep(0)
    start = co.now()
    time.sleep(BLOCK)  # a blocking call in a task: the situation under test
    return co.now() - start


PASSED_DEADLINES = [0.01, 0.02, 0.03, 0.04]


@prop("core")
def test_expired_timers_all_fire_after_the_loop_was_blocked(play):
    assert play() == PASSED_DEADLINES


@test_expired_timers_all_fire_after_the_loop_was_blocked.callbacks
def _(loop):
    fired = []

    def wake(delay):
        fired.append(delay)
        if len(fired) == len(PASSED_DEADLINES):
            loop.stop()

    for delay in PASSED_DEADLINES:
        loop.call_later(delay, wake, delay)
    loop.call_soon(time.sleep, max(PASSED_DEADLINES) + 0.02)  # blocks past every deadline
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    return fired


@test_expired_timers_all_fire_after_the_loop_was_blocked.generators
def _(co):
    fired = []

    def sleeper(delay):
        yield from co.sleep(delay)
        fired.append(delay)

    tasks = []
    for delay in PASSED_DEADLINES:
        tasks.append((yield from co.spawn(sleeper(delay))))
    yield from co.sleep(0)  # every sleeper is waiting on its timer
    time.sleep(max(PASSED_DEADLINES) + 0.02)  # blocks past every deadline
    for task in tasks:
        yield from co.join(task)
    # Tasks woken in one iteration may resume in any order (trio shuffles): all fired is the point.
    return sorted(fired)


@test_expired_timers_all_fire_after_the_loop_was_blocked.coroutines
async def _(co):
    fired = []

    async def sleeper(delay):
        await co.sleep(delay)
        fired.append(delay)

    tasks = [await co.spawn(sleeper(delay)) for delay in PASSED_DEADLINES]
    await co.sleep(0)  # every sleeper is waiting on its timer
    time.sleep(max(PASSED_DEADLINES) + 0.02)  # blocks past every deadline
    for task in tasks:
        await co.join(task)
    # Tasks woken in one iteration may resume in any order (trio shuffles): all fired is the point.
    return sorted(fired)


@test_expired_timers_all_fire_after_the_loop_was_blocked.blocking
def _(co):
    fired = []

    def sleeper(delay):
        co.sleep(delay)
        fired.append(delay)

    tasks = [co.spawn(sleeper, delay) for delay in PASSED_DEADLINES]
    co.sleep(0)  # every sleeper is waiting on its timer
    time.sleep(max(PASSED_DEADLINES) + 0.02)  # blocks past every deadline
    for task in tasks:
        co.join(task)
    # Tasks woken in one iteration may resume in any order (trio shuffles): all fired is the point.
    return sorted(fired)


IDLE = 0.2


@prop("core")
def test_an_idle_loop_does_not_busy_wait(play):
    cpu, wall = play()
    assert cpu < 0.10 * wall  # process CPU time over a sleep with nothing else to do


@test_an_idle_loop_does_not_busy_wait.callbacks
def _(loop):
    measured = []

    def start():
        begin = (time.process_time(), time.monotonic())
        loop.call_later(IDLE, finish, begin)

    def finish(begin):
        measured.extend([time.process_time() - begin[0], time.monotonic() - begin[1]])
        loop.stop()

    loop.call_soon(start)
    loop.run_forever()
    return measured


@test_an_idle_loop_does_not_busy_wait.generators
def _(co):
    cpu, wall = time.process_time(), time.monotonic()
    yield from co.sleep(IDLE)
    return [time.process_time() - cpu, time.monotonic() - wall]


@test_an_idle_loop_does_not_busy_wait.coroutines
async def _(co):
    cpu, wall = time.process_time(), time.monotonic()
    await co.sleep(IDLE)
    return [time.process_time() - cpu, time.monotonic() - wall]


@test_an_idle_loop_does_not_busy_wait.blocking
def _(co):
    cpu, wall = time.process_time(), time.monotonic()
    co.sleep(IDLE)
    return [time.process_time() - cpu, time.monotonic() - wall]


# The next timer bounds the poll's wait, so a timer far off (infinity, or past what epoll's
# millisecond timeout or select()'s time_t can hold) must be capped, not handed to the poll:
# asyncio waits at most a day. Here the far timers are the only ones while the loop waits for
# a byte that a plain thread (not the loop's) writes later.
FAR = (math.inf, 1e12)
LATER = 0.05


def _write_later(sock: socket.socket) -> threading.Thread:
    writer = threading.Timer(LATER, sock.send, (b"!",))
    writer.start()
    return writer


@prop("io")
def test_a_timer_far_off_does_not_break_the_wait_it_bounds(play):
    a, b = nonblocking_pair()
    with a, b:
        writer = _write_later(b)
        try:
            assert play(a) == ("returned", b"!")
        finally:
            writer.join()


@test_a_timer_far_off_does_not_break_the_wait_it_bounds.callbacks
def _(loop, sock):
    far = [loop.call_later(delay, loop.stop) for delay in FAR]
    got = []

    def readable():
        got.append(sock.recv(1))
        loop.remove_reader(sock)
        for timer in far:
            timer.cancel()
        loop.stop()

    loop.add_reader(sock, readable)
    return outcome(lambda: (loop.run_forever(), got[0])[1])


@test_a_timer_far_off_does_not_break_the_wait_it_bounds.generators
def _(co, sock):
    sleepers = []
    for delay in FAR:
        sleepers.append((yield from co.spawn(co.sleep(delay))))
    received = yield from co.recv(sock, 1)
    for sleeper in sleepers:
        yield from co.cancel(sleeper)
    return ("returned", received)


@test_a_timer_far_off_does_not_break_the_wait_it_bounds.coroutines
async def _(co, sock):
    sleepers = [await co.spawn(co.sleep(delay)) for delay in FAR]
    received = await co.recv(sock, 1)
    for sleeper in sleepers:
        await co.cancel(sleeper)
    return ("returned", received)


@test_a_timer_far_off_does_not_break_the_wait_it_bounds.blocking
def _(co, sock):
    sleepers = [co.spawn(co.sleep, delay) for delay in FAR]
    received = co.recv(sock, 1)
    for sleeper in sleepers:
        co.cancel(sleeper)
    return ("returned", received)
