"""Deadlines: waits of different kinds that expire together act in deadline order, and a
program that can never make progress ends with a clear error instead of hanging.

Where the cases come from (facts, not code):
- Deadline order across kinds of wait: asyncio keeps one heap for every timer, so a
  ``timeout()`` and a ``sleep()`` due in the same ``_run_once`` act in deadline order
  (``base_events._run_once`` pops them from one heap); trio's ``test_run.py`` checks that
  cancel-scope deadlines and sleeps share one deadline queue; curio's kernel puts sleeps and
  timeouts in one time queue. A loop that delivers a timeout through extra hops (a callback
  that cancels a future that wakes a task) can let a later sleeper run first.
- Deadlock: the lab's traps kernel stops with a RuntimeError when no task is ready, no timer
  is set and no I/O is watched, because nothing can ever wake a task again (trio notices the
  same situation only under a test clock with ``autojump_threshold``). asyncio, uvloop, trio
  and curio wait forever: their deviations. The three programs are the class the issue's
  example (a ``Queue.get()`` nobody satisfies) belongs to: a get, a join on a task stuck on a
  get, and ``Queue.join()`` with work nobody takes.
"""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time

from conformance.harness import prop
from conformance.support import nonblocking_pair

# Deadlines 2 ms apart (uvloop's clock counts whole milliseconds), scheduled in the reverse
# of their deadline order so that "first scheduled" and "first due" disagree. The loop is
# then kept busy past all of them, so they expire in one and the same poll.
FIRST = 0.1  # the earliest deadline, in seconds: far enough for a loaded machine to set up
GAP = 0.002
SETTLE = 0.03  # the main task sleeps this long so that every waiter has started waiting
BUSY = 0.2  # seconds the main task then blocks the loop, well past every deadline
# The plain sleep is due last: a loop whose timeouts take extra hops lets it act first.
KINDS = [
    "timeout around a sleep",
    "timeout around a get",
    "sleep",
    "timeout around a recv",
]
EXPECTED_ORDER = KINDS  # earliest deadline first


@prop("timeouts")
def test_waits_of_every_kind_that_expire_together_act_in_deadline_order(play):
    assert play() == EXPECTED_ORDER


@test_waits_of_every_kind_that_expire_together_act_in_deadline_order.generators
def _(co):
    acted = []
    a, b = nonblocking_pair()
    queue = co.Queue()

    start = co.now()

    def waits(rank):
        delay = start + FIRST + rank * GAP - co.now()  # one absolute deadline per rank
        kind = KINDS[rank]
        if kind == "sleep":
            yield from co.sleep(delay)
            acted.append(kind)
            return
        forever = {
            "timeout around a sleep": lambda: co.sleep(3600),
            "timeout around a recv": lambda: co.recv(b, 1),
            "timeout around a get": lambda: queue.get(),
        }[kind]
        try:
            yield from co.timeout_after(delay, forever())
        except TimeoutError:
            acted.append(kind)

    with a, b:
        tasks = []
        for rank in reversed(range(len(KINDS))):
            tasks.append((yield from co.spawn(waits(rank))))
        yield from co.sleep(SETTLE)  # each task is now waiting
        time.sleep(BUSY)  # every deadline passes before the loop looks at its timers
        for task in tasks:
            yield from co.join(task)
    return acted


@test_waits_of_every_kind_that_expire_together_act_in_deadline_order.coroutines
async def _(co):
    acted = []
    a, b = nonblocking_pair()
    queue = co.Queue()

    start = co.now()

    async def waits(rank):
        delay = start + FIRST + rank * GAP - co.now()  # one absolute deadline per rank
        kind = KINDS[rank]
        if kind == "sleep":
            await co.sleep(delay)
            acted.append(kind)
            return
        forever = {
            "timeout around a sleep": lambda: co.sleep(3600),
            "timeout around a recv": lambda: co.recv(b, 1),
            "timeout around a get": lambda: queue.get(),
        }[kind]
        try:
            await co.timeout_after(delay, forever())
        except TimeoutError:
            acted.append(kind)

    with a, b:
        tasks = [await co.spawn(waits(rank)) for rank in reversed(range(len(KINDS)))]
        await co.sleep(SETTLE)  # each task is now waiting
        time.sleep(BUSY)  # every deadline passes before the loop looks at its timers
        for task in tasks:
            await co.join(task)
    return acted


@test_waits_of_every_kind_that_expire_together_act_in_deadline_order.blocking
def _(co):
    acted = []
    a, b = nonblocking_pair()
    queue = co.Queue()

    start = co.now()

    def waits(rank):
        delay = start + FIRST + rank * GAP - co.now()  # one absolute deadline per rank
        kind = KINDS[rank]
        if kind == "sleep":
            co.sleep(delay)
            acted.append(kind)
            return
        forever = {
            "timeout around a sleep": lambda: co.sleep(3600),
            "timeout around a recv": lambda: co.recv(b, 1),
            "timeout around a get": lambda: queue.get(),
        }[kind]
        try:
            co.timeout_after(delay, forever)
        except TimeoutError:
            acted.append(kind)

    with a, b:
        tasks = [co.spawn(waits, rank) for rank in reversed(range(len(KINDS)))]
        co.sleep(SETTLE)  # each task is now waiting
        time.sleep(BUSY)  # every deadline passes before the loop looks at its timers
        for task in tasks:
            co.join(task)
    return acted


# --- a timeout and the wake-up it guards, in one poll ------------------------------------------

# The work inside each timeout is woken GAP before or GAP after the timeout's deadline; the
# loop is kept busy past both, so the wake-up and the deadline are seen in one and the same
# poll, the case a loaded machine makes at random. A sleep, a join and a get are woken by a
# task on the loop. A recv's byte is sent by a thread while the loop is busy, so it is already
# in the socket when the loop polls and sees the deadline pass (as a byte from the network
# would be); a task could not do that: its byte would be sent in the poll's run stage and
# become readable only at the next poll, after the deadline has acted, missing the race. A
# loop that reads the byte into the timed-out wait loses it.
WAKE_UPS = ["a sleep", "a join", "a get", "a recv"]
ALLOWED = {
    "before": {"the result", "TimeoutError"},  # woken first; asyncio and trio still time out
    "after": {"TimeoutError"},  # the deadline came first
}
SENT_BY_A_THREAD = {"a recv"}
# A thread's byte, only "before": it and the loop's deadline share no clock, and either way the
# loop finds both at once in the same poll.
WOKEN = {kind: ["before"] if kind in SENT_BY_A_THREAD else list(ALLOWED) for kind in WAKE_UPS}


def send_from_a_thread(sock, delay: float) -> threading.Thread:
    """Send one byte on `sock` from a thread `delay` seconds from now (the loop is busy then)."""
    thread = threading.Thread(target=lambda: (time.sleep(max(delay, 0)), sock.send(b"x")))
    thread.start()
    return thread


@prop("timeouts")
def test_a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way(play):
    """A timeout whose deadline passes in the same poll as the wake-up of the work it guards
    (a sleep, a join, a get or a recv) ends in exactly one outcome: the work's result, or
    TimeoutError, and TimeoutError if the deadline came first. Never a stray CancelledError,
    no cancellation that strikes at a later wait, and nothing the work was handed (a queue's
    item, a socket's bytes) lost when the timeout wins, including a byte that was already in
    the socket, sent by a thread, when the loop saw the deadline pass.

    Where it comes from: a flaky run of ``test_a_timeout_that_did_not_expire_leaves_no_trace``
    on a loaded machine, where the 1 ms sleep and the timeout's deadline passed in one poll;
    asyncio's ``Task.cancel`` sets ``_must_cancel`` when the awaited future is already done
    (the wake-up is queued), which is the same situation made on purpose. The byte sent
    by a thread: asyncio's ``loop.sock_recv`` reads the byte inside the loop's reader callback into
    a future, and the timeout's cancel, run in the same batch, throws into the task before it
    resumes, so the byte is gone (uvloop the same); a readiness loop made here wakes the task
    and lets it read, so an interrupted wait has read nothing, and completions, where Linux may
    have read already, keeps a cancelled receive's bytes for the next call
    (``loops/completions/leftovers.py``).
    """
    seen = play()
    assert {
        case: outcome for case, outcome in seen.items() if outcome not in ALLOWED[case[1]]
    } == {}


@test_a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way.generators
def _(co):
    start = co.now()
    outside = []  # the threads that send from outside the loop

    def guarded(kind, woken):
        deadline = start + FIRST - co.now()
        wake = deadline + (GAP if woken == "after" else -GAP)
        queue = co.Queue()
        a, b = nonblocking_pair()

        def waker():
            if kind in SENT_BY_A_THREAD:  # sent while the loop is busy
                outside.append(send_from_a_thread(a, wake))
                return
            yield from co.sleep(wake)
            if kind == "a get":
                yield from queue.put("item")

        def work():
            if kind == "a sleep":
                yield from co.sleep(wake)
            elif kind == "a join":
                yield from co.join(task)
            elif kind == "a get":
                yield from queue.get()
            else:
                yield from co.recv(b, 1)
            return "the result"

        def attempt():
            try:
                outcome = yield from co.timeout_after(deadline, work())
            except TimeoutError:
                outcome = "TimeoutError"
            except BaseException as error:
                return f"raised {type(error).__name__}"
            try:
                yield from co.sleep(GAP)  # past every deadline: a stray cancellation hits here
                if outcome == "TimeoutError" and kind == "a get":
                    yield from co.timeout_after(1, queue.get())  # the item is still there
                elif outcome == "TimeoutError" and kind == "a recv":
                    yield from co.timeout_after(1, co.recv(b, 1))  # and so are the bytes
            except BaseException as error:
                return f"{outcome}, then {type(error).__name__}"
            return outcome

        with a, b:
            task = yield from co.spawn(waker())
            outcome = yield from attempt()
            yield from co.cancel(task)  # it has ended by now, unless the attempt failed early
            return outcome

    tasks = {}
    for kind in WAKE_UPS:
        for woken in WOKEN[kind]:
            tasks[kind, woken] = yield from co.spawn(guarded(kind, woken))
    yield from co.sleep(SETTLE)  # each is now waiting
    time.sleep(BUSY)  # every deadline and every wake-up pass before the loop looks
    for thread in outside:
        thread.join()  # however late the machine let it run, its byte is in before the next poll
    outcomes = {}
    for case, task in tasks.items():
        outcomes[case] = yield from co.join(task)
    return outcomes


@test_a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way.coroutines
async def _(co):
    start = co.now()
    outside = []  # the threads that send from outside the loop

    async def guarded(kind, woken):
        deadline = start + FIRST - co.now()
        wake = deadline + (GAP if woken == "after" else -GAP)
        queue = co.Queue()
        a, b = nonblocking_pair()

        async def waker():
            if kind in SENT_BY_A_THREAD:  # sent while the loop is busy
                outside.append(send_from_a_thread(a, wake))
                return
            await co.sleep(wake)
            if kind == "a get":
                await queue.put("item")

        async def work():
            if kind == "a sleep":
                await co.sleep(wake)
            elif kind == "a join":
                await co.join(task)
            elif kind == "a get":
                await queue.get()
            else:
                await co.recv(b, 1)
            return "the result"

        async def attempt():
            try:
                outcome = await co.timeout_after(deadline, work())
            except TimeoutError:
                outcome = "TimeoutError"
            except BaseException as error:
                return f"raised {type(error).__name__}"
            try:
                await co.sleep(GAP)  # past every deadline: a stray cancellation hits here
                if outcome == "TimeoutError" and kind == "a get":
                    await co.timeout_after(1, queue.get())  # the item is still there
                elif outcome == "TimeoutError" and kind == "a recv":
                    await co.timeout_after(1, co.recv(b, 1))  # and so are the bytes
            except BaseException as error:
                return f"{outcome}, then {type(error).__name__}"
            return outcome

        with a, b:
            task = await co.spawn(waker())
            outcome = await attempt()
            await co.cancel(task)  # it has ended by now, unless the attempt failed early
            return outcome

    tasks = {}
    for kind in WAKE_UPS:
        for woken in WOKEN[kind]:
            tasks[kind, woken] = await co.spawn(guarded(kind, woken))
    await co.sleep(SETTLE)  # each is now waiting
    time.sleep(BUSY)  # every deadline and every wake-up pass before the loop looks
    for thread in outside:
        thread.join()  # however late the machine let it run, its byte is in before the next poll
    outcomes = {}
    for case, task in tasks.items():
        outcomes[case] = await co.join(task)
    return outcomes


@test_a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way.blocking
def _(co):
    start = co.now()
    outside = []  # the threads that send from outside the loop

    def guarded(kind, woken):
        deadline = start + FIRST - co.now()
        wake = deadline + (GAP if woken == "after" else -GAP)
        queue = co.Queue()
        a, b = nonblocking_pair()

        def waker():
            if kind in SENT_BY_A_THREAD:  # sent while the loop is busy
                outside.append(send_from_a_thread(a, wake))
                return
            co.sleep(wake)
            if kind == "a get":
                queue.put("item")

        def work():
            if kind == "a sleep":
                co.sleep(wake)
            elif kind == "a join":
                co.join(task)
            elif kind == "a get":
                queue.get()
            else:
                co.recv(b, 1)
            return "the result"

        def attempt():
            try:
                outcome = co.timeout_after(deadline, work)
            except TimeoutError:
                outcome = "TimeoutError"
            except BaseException as error:
                return f"raised {type(error).__name__}"
            try:
                co.sleep(GAP)  # past every deadline: a stray cancellation hits here
                if outcome == "TimeoutError" and kind == "a get":
                    co.timeout_after(1, queue.get)  # the item is still there
                elif outcome == "TimeoutError" and kind == "a recv":
                    co.timeout_after(1, co.recv, b, 1)  # and so are the bytes
            except BaseException as error:
                return f"{outcome}, then {type(error).__name__}"
            return outcome

        with a, b:
            task = co.spawn(waker)
            outcome = attempt()
            co.cancel(task)  # it has ended by now, unless the attempt failed early
            return outcome

    tasks = {}
    for kind in WAKE_UPS:
        for woken in WOKEN[kind]:
            tasks[kind, woken] = co.spawn(guarded, kind, woken)
    co.sleep(SETTLE)  # each is now waiting
    time.sleep(BUSY)  # every deadline and every wake-up pass before the loop looks
    for thread in outside:
        thread.join()  # however late the machine let it run, its byte is in before the next poll
    outcomes = {}
    for case, task in tasks.items():
        outcomes[case] = co.join(task)
    return outcomes


@prop("io")
def test_a_timer_and_the_reader_it_guards_in_one_poll_end_one_way(play):
    """The callbacks style's form of the property above: a reader guarded by a timer (the
    timer removes the reader, the reader cancels the timer), with a byte a thread sent while
    the loop was busy, so readiness and the deadline are seen in one poll. Exactly one of the
    two runs, whichever the loop takes first, and the byte is read or still in the socket:
    a loop must skip a reader removed, or a timer cancelled, by a callback of the same batch.
    Here the program reads the byte itself, so no loop can lose it behind its back.
    """
    assert play() in {"the reader ran and read the byte", "the timer ran, the byte still there"}


@test_a_timer_and_the_reader_it_guards_in_one_poll_end_one_way.callbacks
def _(loop):
    a, b = nonblocking_pair()
    ran, outcome, start = [], [], loop.time()

    def on_readable():
        ran.append(("reader", b.recv(1)))
        loop.remove_reader(b)
        guard.cancel()

    def on_timeout():
        ran.append(("timer", None))
        loop.remove_reader(b)

    def busy():
        time.sleep(BUSY)  # the deadline passes and the byte arrives before the loop looks
        thread.join()  # however late the machine let it run

    def check():
        loop.stop()
        if [who for who, _ in ran] == ["reader"]:
            outcome.append(f"the reader ran and read the byte{'' if ran[0][1] else ': none'}")
        elif [who for who, _ in ran] == ["timer"]:
            try:
                outcome.append(f"the timer ran, the byte still there{'' if b.recv(1) else ': EOF'}")
            except BlockingIOError:
                outcome.append("the timer ran and the byte is gone")
        else:
            outcome.append(f"{' and '.join(who for who, _ in ran) or 'neither'} ran")

    with a, b:
        loop.add_reader(b, on_readable)
        guard = loop.call_at(start + FIRST, on_timeout)
        loop.call_later(SETTLE, busy)
        thread = send_from_a_thread(a, FIRST - GAP - (loop.time() - start))
        loop.call_at(start + FIRST + BUSY, check)
        loop.run_forever()
    return outcome[0] if outcome else "the loop stopped before the check"


# --- deadlock --------------------------------------------------------------------------------

HANG_GUARD = 3.0  # seconds a deadlocked program may take to say so before it counts as hung
DEADLOCKS = ["a get nobody will put", "a join on a task that waits for nothing", "a queue join"]


def played_apart(play, guard: float = HANG_GUARD) -> str:
    """Play the scenario in a forked child: "returned ...", "raised Error", or "hung".

    A loop that waits forever must not hang the suite, and a hung loop cannot be stopped from
    inside its own process (uvloop blocks in C with no Python signal handler run); a child
    can be killed.
    """
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: play, send the outcome, and leave without cleanup handlers
        os.close(reader)
        try:
            result = f"returned {play()!r}"
        except BaseException as error:
            result = f"raised {type(error).__name__}"
        os.write(writer, pickle.dumps(result))
        os._exit(0)
    os.close(writer)
    deadline = time.monotonic() + guard
    try:
        while time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.02)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        with os.fdopen(reader, "rb") as pipe:
            reader = None
            return pickle.loads(pipe.read())
    finally:
        if reader is not None:
            os.close(reader)


@prop("queue", timeout=len(DEADLOCKS) * HANG_GUARD + 20)
def test_a_program_that_can_never_progress_is_a_clear_error_not_a_hang(play):
    seen = {program: played_apart(lambda program=program: play(program)) for program in DEADLOCKS}
    assert seen == dict.fromkeys(DEADLOCKS, "raised RuntimeError")


@test_a_program_that_can_never_progress_is_a_clear_error_not_a_hang.generators
def _(co, program):
    queue = co.Queue()

    def waits_for_nothing():
        yield from queue.get()

    if program == "a get nobody will put":
        yield from queue.get()
    elif program == "a join on a task that waits for nothing":
        task = yield from co.spawn(waits_for_nothing())
        yield from co.join(task)
    else:  # a queue join: an item nobody will take, so task_done never comes
        yield from queue.put("work nobody takes")
        yield from queue.join()


@test_a_program_that_can_never_progress_is_a_clear_error_not_a_hang.coroutines
async def _(co, program):
    queue = co.Queue()

    async def waits_for_nothing():
        await queue.get()

    if program == "a get nobody will put":
        await queue.get()
    elif program == "a join on a task that waits for nothing":
        task = await co.spawn(waits_for_nothing())
        await co.join(task)
    else:  # a queue join: an item nobody will take, so task_done never comes
        await queue.put("work nobody takes")
        await queue.join()


@test_a_program_that_can_never_progress_is_a_clear_error_not_a_hang.blocking
def _(co, program):
    queue = co.Queue()

    def waits_for_nothing():
        queue.get()

    if program == "a get nobody will put":
        queue.get()
    elif program == "a join on a task that waits for nothing":
        task = co.spawn(waits_for_nothing)
        co.join(task)
    else:  # a queue join: an item nobody will take, so task_done never comes
        queue.put("work nobody takes")
        queue.join()
