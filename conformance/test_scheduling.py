"""Scheduling: the order in which ready work runs, and what must never starve it.

What the upstream tests check: asyncio's test_base_events (call_soon order, cancelled handles,
_run_once running only the batch present at its start, stop()), uvloop's tests/test_base.py
(call_soon_threadsafe from many threads), trio's test_run.py (checkpoints let other tasks run).
"""

import asyncio
import threading
import time

from conformance.harness import prop
from conformance.support import SAFETY, nonblocking_pair

ROUNDS = 20  # enough rounds that a loop which reorders batches at random cannot pass by luck
WORKERS = 10


def by_round(trace):
    """[the order in which workers took their 1st step, ... their 2nd step, ...].

    Robust to a loop where spawning costs a tick (workers start staggered): FIFO means that in
    every round the workers go in the order they were scheduled.
    """
    steps, rounds = {}, []
    for worker in trace:
        steps[worker] = steps.get(worker, 0) + 1
        if steps[worker] > len(rounds):
            rounds.append([])
        rounds[steps[worker] - 1].append(worker)
    return rounds


@prop("core")
def test_call_soon_runs_in_fifo_order(play):
    assert by_round(play()) == [list(range(WORKERS))] * ROUNDS


@test_call_soon_runs_in_fifo_order.callbacks
def _(loop):
    order = []

    def worker(i, rounds_left):
        order.append(i)
        if rounds_left > 1:
            loop.call_soon(worker, i, rounds_left - 1)
        elif i == WORKERS - 1:
            loop.stop()

    for i in range(WORKERS):
        loop.call_soon(worker, i, ROUNDS)
    loop.run_forever()
    return order


@test_call_soon_runs_in_fifo_order.generators
def _(co):
    order = []

    def worker(i):
        for _ in range(ROUNDS):
            order.append(i)
            yield from co.sleep(0)

    tasks = []
    for i in range(WORKERS):
        tasks.append((yield from co.spawn(worker(i))))
    for task in tasks:
        yield from co.join(task)
    return order


@test_call_soon_runs_in_fifo_order.coroutines
async def _(co):
    order = []

    async def worker(i):
        for _ in range(ROUNDS):
            order.append(i)
            await co.sleep(0)

    tasks = [await co.spawn(worker(i)) for i in range(WORKERS)]
    for task in tasks:
        await co.join(task)
    return order


@test_call_soon_runs_in_fifo_order.blocking
def _(co):
    order = []

    def worker(i):
        for _ in range(ROUNDS):
            order.append(i)
            co.sleep(0)

    tasks = [co.spawn(worker, i) for i in range(WORKERS)]
    for task in tasks:
        co.join(task)
    return order


@prop("core")
def test_cancelled_callbacks_are_skipped(play):
    assert play() == [0, 2, 4, 6, 8]


@test_cancelled_callbacks_are_skipped.callbacks
def _(loop):
    ran = []
    handles = [loop.call_soon(ran.append, i) for i in range(10)]
    for handle in handles[1::2]:
        handle.cancel()
    handles[3].cancel()  # cancelling twice is harmless
    loop.call_soon(loop.stop)
    loop.run_forever()
    return ran


@prop("core")
def test_a_callback_scheduled_by_the_batch_waits_for_the_next_run(play):
    # asyncio's documented stop(): the current batch runs, then run_forever returns; what the
    # batch scheduled runs in a later iteration, on the next run. (That a self-scheduling
    # callback cannot starve timers or I/O is the fairness properties below.)
    assert play() == (["first", "second"], ["first", "second", "scheduled by first"])


@test_a_callback_scheduled_by_the_batch_waits_for_the_next_run.callbacks
def _(loop):
    ran = []

    def first():
        ran.append("first")
        loop.call_soon(ran.append, "scheduled by first")
        loop.stop()

    loop.call_soon(first)
    loop.call_soon(ran.append, "second")
    loop.run_forever()
    after_first_run = list(ran)
    loop.call_soon(loop.stop)
    loop.run_forever()
    return after_first_run, ran


@prop("core")
def test_stop_lets_the_current_batch_finish(play):
    assert play() == ["calls stop", "same batch", "run_forever returned"]


@test_stop_lets_the_current_batch_finish.callbacks
def _(loop):
    ran = []

    def stopper():
        ran.append("calls stop")
        loop.stop()

    loop.call_soon(stopper)
    loop.call_soon(ran.append, "same batch")
    guard = loop.call_later(SAFETY, loop.stop)
    loop.run_forever()
    guard.cancel()
    ran.append("run_forever returned")
    return ran


@prop("threads")
def test_call_soon_threadsafe_wakes_a_blocked_loop(play):
    assert play() == "the loop ran the call while blocked"


@test_call_soon_threadsafe_wakes_a_blocked_loop.callbacks
def _(loop):
    ran = threading.Event()
    verdict = []

    def from_thread():
        ran.set()

    def caller():
        time.sleep(0.05)  # gives the loop time to block in its selector: the state under test
        loop.call_soon_threadsafe(from_thread)
        # A loop that slept through the call runs it only at its guard timer, after this gives up.
        woke = ran.wait(SAFETY / 2)
        verdict.append("the loop ran the call while blocked" if woke else "the loop slept on")
        loop.call_soon_threadsafe(loop.stop)

    thread = threading.Thread(target=caller)
    loop.call_soon(thread.start)
    guard = loop.call_later(SAFETY, loop.stop)  # the only timer: nothing else wakes the loop
    loop.run_forever()
    guard.cancel()
    thread.join()
    return verdict[0]


# System calls a loop sleeps in (x86-64 numbers, as /proc/PID/task/TID/syscall names them):
# epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect6, io_uring_enter.
SLEEPING_SYSCALLS = {"232", "281", "441", "7", "271", "23", "270", "426"}


@test_call_soon_threadsafe_wakes_a_blocked_loop.asyncio
async def _():
    # No guard timer: the only one is hours away, so a loop that sleeps through the call hangs
    # until the case's timeout fails it. The thread calls once it sees the loop's thread
    # inside its poll, so the wake-up is what is tested, not a call that came first.
    loop = asyncio.get_running_loop()
    far = loop.call_later(6 * 3600, lambda: None)
    woken = loop.create_future()
    loop_thread = threading.get_native_id()

    def caller():
        with open(f"/proc/self/task/{loop_thread}/syscall") as status:
            for _ in range(1_000_000):  # polled, not slept on: until the loop is seen asleep
                status.seek(0)
                if status.read().split(" ", 1)[0] in SLEEPING_SYSCALLS:
                    break
        loop.call_soon_threadsafe(woken.set_result, "the loop ran the call while blocked")

    thread = threading.Thread(target=caller)
    thread.start()
    verdict = await woken
    thread.join()
    far.cancel()
    return verdict


THREADS, CALLS = 4, 2500


@prop("threads", timeout=30)
def test_call_soon_threadsafe_loses_no_call_under_load(play):
    # Exact count, and each thread's calls in the order it made them.
    assert play() == {t: list(range(CALLS)) for t in range(THREADS)}


def _hammer(loop, when_all_in):
    """THREADS threads call loop.call_soon_threadsafe CALLS times each, all at once; the last
    call to arrive calls when_all_in(). What arrived, by thread, and the threads."""
    received = {t: [] for t in range(THREADS)}
    count = 0
    start = threading.Barrier(THREADS)

    def record(t, i):
        nonlocal count
        received[t].append(i)
        count += 1
        if count == THREADS * CALLS:
            when_all_in()

    def hammer(t):
        start.wait()
        for i in range(CALLS):
            loop.call_soon_threadsafe(record, t, i)

    threads = [threading.Thread(target=hammer, args=(t,)) for t in range(THREADS)]
    for thread in threads:
        thread.start()
    return received, threads


@test_call_soon_threadsafe_loses_no_call_under_load.callbacks
def _(loop):
    received, threads = _hammer(loop, loop.stop)
    guard = loop.call_later(SAFETY * 2, loop.stop)
    loop.run_forever()
    guard.cancel()
    for thread in threads:
        thread.join()
    return received


@test_call_soon_threadsafe_loses_no_call_under_load.asyncio
async def _():
    # rsloop's call_soon_threadsafe reordered one thread's calls under free threading.
    loop = asyncio.get_running_loop()
    all_in = loop.create_future()
    received, threads = _hammer(loop, lambda: all_in.set_result(None))
    try:
        async with asyncio.timeout(SAFETY * 2):
            await all_in
    except TimeoutError:
        pass  # the outcome shows what was lost
    for thread in threads:
        thread.join()
    return received


SPIN_LIMIT = 200_000  # a fair loop serves the timer or fd long before a spinner gets this far


@prop("fairness")
def test_a_spinning_task_cannot_starve_a_timer(play):
    assert play() == "the timer fired while the spinner spun"


@test_a_spinning_task_cannot_starve_a_timer.callbacks
def _(loop):
    fired = []
    spins = 0

    def spin():
        nonlocal spins
        spins += 1
        if fired or spins >= SPIN_LIMIT:
            loop.stop()
        else:
            loop.call_soon(spin)

    loop.call_later(0.01, fired.append, True)
    loop.call_soon(spin)
    loop.run_forever()
    return "the timer fired while the spinner spun" if fired else "the spinner starved the timer"


@test_a_spinning_task_cannot_starve_a_timer.generators
def _(co):
    fired = []

    def timer():
        yield from co.sleep(0.01)
        fired.append(True)

    task = yield from co.spawn(timer())
    spins = 0
    while not fired and spins < SPIN_LIMIT:
        spins += 1
        yield from co.sleep(0)
    if not fired:
        yield from co.cancel(task)
        return "the spinner starved the timer"
    yield from co.join(task)
    return "the timer fired while the spinner spun"


@test_a_spinning_task_cannot_starve_a_timer.coroutines
async def _(co):
    fired = []

    async def timer():
        await co.sleep(0.01)
        fired.append(True)

    task = await co.spawn(timer())
    spins = 0
    while not fired and spins < SPIN_LIMIT:
        spins += 1
        await co.sleep(0)
    if not fired:
        await co.cancel(task)
        return "the spinner starved the timer"
    await co.join(task)
    return "the timer fired while the spinner spun"


@test_a_spinning_task_cannot_starve_a_timer.blocking
def _(co):
    fired = []

    def timer():
        co.sleep(0.01)
        fired.append(True)

    task = co.spawn(timer)
    spins = 0
    while not fired and spins < SPIN_LIMIT:
        spins += 1
        co.sleep(0)
    if not fired:
        co.cancel(task)
        return "the spinner starved the timer"
    co.join(task)
    return "the timer fired while the spinner spun"


@prop("fairness")
def test_a_spinning_task_cannot_starve_io(play):
    assert play() == b"x"


@test_a_spinning_task_cannot_starve_io.callbacks
def _(loop):
    a, b = nonblocking_pair()
    received = []
    spins = 0

    def on_readable():
        received.append(a.recv(1))
        loop.remove_reader(a)

    def spin():
        nonlocal spins
        spins += 1
        if spins == 1:
            b.send(b"x")  # the data arrives while the spinner keeps the ready queue busy
        if received or spins >= SPIN_LIMIT:
            loop.stop()
        else:
            loop.call_soon(spin)

    loop.add_reader(a, on_readable)
    loop.call_soon(spin)
    loop.run_forever()
    loop.remove_reader(a)
    a.close()
    b.close()
    return received[0] if received else b"starved"


@test_a_spinning_task_cannot_starve_io.generators
def _(co):
    a, b = nonblocking_pair()
    received = []

    def reader():
        received.append((yield from co.recv(a, 1)))

    with a, b:
        task = yield from co.spawn(reader())
        yield from co.sleep(0)  # the reader starts and blocks: no data yet
        spins = 0
        while not received and spins < SPIN_LIMIT:
            spins += 1
            if spins == 1:
                b.send(b"x")
            yield from co.sleep(0)
        if not received:
            yield from co.cancel(task)
            return b"starved"
        yield from co.join(task)
    return received[0]


@test_a_spinning_task_cannot_starve_io.coroutines
async def _(co):
    a, b = nonblocking_pair()
    received = []

    async def reader():
        received.append(await co.recv(a, 1))

    with a, b:
        task = await co.spawn(reader())
        await co.sleep(0)  # the reader starts and blocks: no data yet
        spins = 0
        while not received and spins < SPIN_LIMIT:
            spins += 1
            if spins == 1:
                b.send(b"x")
            await co.sleep(0)
        if not received:
            await co.cancel(task)
            return b"starved"
        await co.join(task)
    return received[0]


@test_a_spinning_task_cannot_starve_io.blocking
def _(co):
    a, b = nonblocking_pair()
    received = []

    def reader():
        received.append(co.recv(a, 1))

    with a, b:
        task = co.spawn(reader)
        co.sleep(0)  # the reader starts and blocks: no data yet
        spins = 0
        while not received and spins < SPIN_LIMIT:
            spins += 1
            if spins == 1:
                b.send(b"x")
            co.sleep(0)
        if not received:
            co.cancel(task)
            return b"starved"
        co.join(task)
    return received[0]


TURNS = 20
NAMES = ["a", "b", "c"]


def widest_lead(trace):
    """The most steps any task got ahead of another while all of them were running.

    Counted from the step on which the last task started (a loop may start tasks a tick
    apart), until the first one finished; within a fair round the lead is at most 1.
    """
    if set(trace) != set(NAMES):
        return len(trace)  # a task never ran: starved outright
    start = max(trace.index(name) for name in NAMES) + 1
    end = min(len(trace) - trace[::-1].index(name) - 1 for name in NAMES)
    counts = dict.fromkeys(NAMES, 0)
    lead = 0
    for name in trace[start:end]:
        counts[name] += 1
        lead = max(lead, max(counts.values()) - min(counts.values()))
    return lead


@prop("fairness")
def test_tasks_that_yield_take_turns(play):
    # Each round every runnable task runs once, in whatever order: nobody runs twice first.
    assert widest_lead(play()) == 1


@test_tasks_that_yield_take_turns.callbacks
def _(loop):
    trace = []

    def step(name, left):
        trace.append(name)
        if left > 1:
            loop.call_soon(step, name, left - 1)
        elif name == NAMES[-1]:
            loop.stop()

    for name in NAMES:
        loop.call_soon(step, name, TURNS)
    loop.run_forever()
    return trace


@test_tasks_that_yield_take_turns.generators
def _(co):
    trace = []

    def worker(name):
        for _ in range(TURNS):
            trace.append(name)
            yield from co.sleep(0)

    tasks = []
    for name in NAMES:
        tasks.append((yield from co.spawn(worker(name))))
    for task in tasks:
        yield from co.join(task)
    return trace


@test_tasks_that_yield_take_turns.coroutines
async def _(co):
    trace = []

    async def worker(name):
        for _ in range(TURNS):
            trace.append(name)
            await co.sleep(0)

    tasks = [await co.spawn(worker(name)) for name in NAMES]
    for task in tasks:
        await co.join(task)
    return trace


@test_tasks_that_yield_take_turns.blocking
def _(co):
    trace = []

    def worker(name):
        for _ in range(TURNS):
            trace.append(name)
            co.sleep(0)

    tasks = [co.spawn(worker, name) for name in NAMES]
    for task in tasks:
        co.join(task)
    return trace
