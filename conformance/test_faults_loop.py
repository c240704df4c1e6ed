"""Faults inside the loop: code that raises, a task that will not be cancelled, a watched fd
closed behind the loop's back, and Ctrl-C during a workload.

The first three are ordinary properties (one scenario per style, played in-process). Ctrl-C
drives the real workload processes: it is a process-level fault by nature (a signal arriving
while the loop sits in its selector), judged by what a user sees: how the command ends, what
it says, and that every socket was closed. A signal lands between any two lines, so Ctrl-C
is sent twice over: once in a wait (the loop asleep in its selector) and, at several moments,
while thousands of sleepers start and wake, where it lands in the loop's own bookkeeping too.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from conformance.ctrl_c_sweep import CLEAN, NOT_REACHED, Sweep, back_edge_in
from conformance.harness import prop
from conformance.processes import (
    ECHO_READY,
    PATIENCE,
    ROOT,
    case_prop,
    connect,
    echo_command,
    loop_args,
    module_command,
    running,
    settled_in_selector,
    spawn,
    until,
    waiting_in_selector,
)
from conformance.support import SAFETY, new_sockets_work, nonblocking_pair, outcome

RAISERS = 20
MESSAGES = [b"message %02d;" % n for n in range(20)]
EVERY_MESSAGE = b"".join(MESSAGES)

# --- callbacks and tasks that raise ----------------------------------------------------------


@prop("exceptions")
def test_callbacks_and_tasks_that_raise_lose_no_other_work(play):
    assert play() == {
        "every message arrived": True,
        "every error reported once": {"ValueError": RAISERS, "KeyError": RAISERS},
        "a reader that raised kept firing": True,
    }


@test_callbacks_and_tasks_that_raise_lose_no_other_work.callbacks
def _(loop):
    reported = []
    loop.set_exception_handler(lambda loop, context: reported.append(context.get("exception")))
    sender, receiver = nonblocking_pair()
    received = bytearray()
    reader_raises = []

    def fail(kind):
        raise kind(f"raised on purpose: {kind.__name__}")

    def on_readable():  # takes what is there, then raises every time: the reader must stay
        received.extend(receiver.recv(65536))
        if len(received) >= len(EVERY_MESSAGE):
            loop.stop()
        reader_raises.append(True)
        raise OSError("the reader raises after each read")

    def send(n):
        sender.send(MESSAGES[n])
        if n + 1 < len(MESSAGES):
            loop.call_later(0.001, send, n + 1)

    for n in range(RAISERS):
        loop.call_soon(fail, ValueError)
        loop.call_later(0.001 * n, fail, KeyError)
    loop.add_reader(receiver, on_readable)
    loop.call_soon(send, 0)
    loop.call_later(SAFETY, loop.stop)
    try:
        loop.run_forever()
    finally:
        loop.remove_reader(receiver)
        sender.close()
        receiver.close()
    kinds = [type(error).__name__ for error in reported if not isinstance(error, OSError)]
    reader_reports = sum(isinstance(error, OSError) for error in reported)
    return {
        "every message arrived": bytes(received) == EVERY_MESSAGE,
        "every error reported once": {kind: kinds.count(kind) for kind in set(kinds)},
        "a reader that raised kept firing": len(reader_raises) == reader_reports >= 1,
    }


def _raising_tasks_outcome(received, joined, reader_errors):
    kinds = [type(error).__name__ for error in joined]
    return {
        "every message arrived": bytes(received) == EVERY_MESSAGE,
        "every error reported once": {kind: kinds.count(kind) for kind in set(kinds)},
        "a reader that raised kept firing": reader_errors >= 1,
    }


@test_callbacks_and_tasks_that_raise_lose_no_other_work.generators
def _(co):
    sender, receiver = nonblocking_pair()
    received = bytearray()

    def fail(kind, delay):
        yield from co.sleep(delay)
        raise kind(f"raised on purpose: {kind.__name__}")

    def reader():  # a task that raises is gone; so each read that "fails" is its own task
        errors = 0
        while len(received) < len(EVERY_MESSAGE):
            task = yield from co.spawn(read_once())
            try:
                yield from co.join(task)
            except OSError:
                errors += 1
        return errors

    def read_once():
        received.extend((yield from co.recv(receiver, 65536)))
        raise OSError("the reader raises after each read")

    with sender, receiver:
        failing = []
        for n in range(RAISERS):
            failing.append((yield from co.spawn(fail(ValueError, 0))))
            failing.append((yield from co.spawn(fail(KeyError, 0.001 * n))))
        reading = yield from co.spawn(reader())
        for message in MESSAGES:
            yield from co.sendall(sender, message)
            yield from co.sleep(0.001)
        reader_errors = yield from co.join(reading)
        joined = []
        for task in failing:
            try:
                yield from co.join(task)
            except (ValueError, KeyError) as error:
                joined.append(error)
    return _raising_tasks_outcome(received, joined, reader_errors)


@test_callbacks_and_tasks_that_raise_lose_no_other_work.coroutines
async def _(co):
    sender, receiver = nonblocking_pair()
    received = bytearray()

    async def fail(kind, delay):
        await co.sleep(delay)
        raise kind(f"raised on purpose: {kind.__name__}")

    async def reader():  # a task that raises is gone; so each read that "fails" is its own task
        errors = 0
        while len(received) < len(EVERY_MESSAGE):
            task = await co.spawn(read_once())
            try:
                await co.join(task)
            except OSError:
                errors += 1
        return errors

    async def read_once():
        received.extend(await co.recv(receiver, 65536))
        raise OSError("the reader raises after each read")

    with sender, receiver:
        failing = []
        for n in range(RAISERS):
            failing.append(await co.spawn(fail(ValueError, 0)))
            failing.append(await co.spawn(fail(KeyError, 0.001 * n)))
        reading = await co.spawn(reader())
        for message in MESSAGES:
            await co.sendall(sender, message)
            await co.sleep(0.001)
        reader_errors = await co.join(reading)
        joined = []
        for task in failing:
            try:
                await co.join(task)
            except (ValueError, KeyError) as error:
                joined.append(error)
    return _raising_tasks_outcome(received, joined, reader_errors)


@test_callbacks_and_tasks_that_raise_lose_no_other_work.blocking
def _(co):
    sender, receiver = nonblocking_pair()
    received = bytearray()

    def fail(kind, delay):
        co.sleep(delay)
        raise kind(f"raised on purpose: {kind.__name__}")

    def reader():  # a task that raises is gone; so each read that "fails" is its own task
        errors = 0
        while len(received) < len(EVERY_MESSAGE):
            task = co.spawn(read_once)
            try:
                co.join(task)
            except OSError:
                errors += 1
        return errors

    def read_once():
        received.extend(co.recv(receiver, 65536))
        raise OSError("the reader raises after each read")

    with sender, receiver:
        failing = []
        for n in range(RAISERS):
            failing.append(co.spawn(fail, ValueError, 0))
            failing.append(co.spawn(fail, KeyError, 0.001 * n))
        reading = co.spawn(reader)
        for message in MESSAGES:
            co.sendall(sender, message)
            co.sleep(0.001)
        reader_errors = co.join(reading)
        joined = []
        for task in failing:
            try:
                co.join(task)
            except (ValueError, KeyError) as error:
                joined.append(error)
    return _raising_tasks_outcome(received, joined, reader_errors)


# --- a task that swallows its cancellation ---------------------------------------------------

STUBBORN_FOR = 0.3  # seconds the stubborn task keeps running after its first cancellation
CANCEL_TIMEOUT = 0.1


@prop("timeouts")
def test_a_task_that_swallows_cancellation_cannot_keep_a_timeout_from_ending_the_run(play):
    state = {"swallowed": 0, "steps after": 0}
    how, value = outcome(play, state)
    seen = (how, type(value).__name__, state["swallowed"] > 0, state["steps after"] > 0)
    assert seen == ("raised", "TimeoutError", True, True), (value, state)


@test_a_task_that_swallows_cancellation_cannot_keep_a_timeout_from_ending_the_run.generators
def _(co, state):
    def stubborn():
        until = None
        while until is None or co.now() < until:
            try:
                yield from co.sleep(0.01)
            except co.CancelledError:  # swallowed: the anti-pattern this case is about
                state["swallowed"] += 1
                until = until or co.now() + STUBBORN_FOR
            if until is not None:
                state["steps after"] += 1
        return "finished anyway"

    task = yield from co.spawn(stubborn())
    yield from co.sleep(0.02)
    # cancel() waits for a task that will not end; the timeout must still end the wait, and
    # the TimeoutError end the run (once the stubborn task gives up on its own).
    yield from co.timeout_after(CANCEL_TIMEOUT, co.cancel(task))
    return "cancel returned although the task never ended"


@test_a_task_that_swallows_cancellation_cannot_keep_a_timeout_from_ending_the_run.coroutines
async def _(co, state):
    async def stubborn():
        until = None
        while until is None or co.now() < until:
            try:
                await co.sleep(0.01)
            except co.CancelledError:  # swallowed: the anti-pattern this case is about
                state["swallowed"] += 1
                until = until or co.now() + STUBBORN_FOR
            if until is not None:
                state["steps after"] += 1
        return "finished anyway"

    task = await co.spawn(stubborn())
    await co.sleep(0.02)
    # cancel() waits for a task that will not end; the timeout must still end the wait, and
    # the TimeoutError end the run (once the stubborn task gives up on its own).
    await co.timeout_after(CANCEL_TIMEOUT, co.cancel(task))
    return "cancel returned although the task never ended"


@test_a_task_that_swallows_cancellation_cannot_keep_a_timeout_from_ending_the_run.blocking
def _(co, state):
    def stubborn():
        until = None
        while until is None or co.now() < until:
            try:
                co.sleep(0.01)
            except co.CancelledError:  # swallowed: the anti-pattern this case is about
                state["swallowed"] += 1
                until = until or co.now() + STUBBORN_FOR
            if until is not None:
                state["steps after"] += 1
        return "finished anyway"

    task = co.spawn(stubborn)
    co.sleep(0.02)
    # cancel() waits for a task that will not end; the timeout must still end the wait, and
    # the TimeoutError end the run (once the stubborn task gives up on its own).
    co.timeout_after(CANCEL_TIMEOUT, co.cancel, task)
    return "cancel returned although the task never ended"


# --- a watched fd closed behind the loop's back ----------------------------------------------

NOT_WEDGED = {
    "the loop ran on": ("returned", None),
    "its timer fired": True,
    "the late cleanup": "returned",
    "new sockets work": b"fresh",
}


@prop("io")
def test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it(play):
    assert play() == NOT_WEDGED


@test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it.callbacks
def _(loop):
    a, b = nonblocking_pair()
    loop.add_reader(b, lambda: None)
    stale = b.fileno()
    b.close()  # no remove_reader first: the loop still thinks it watches `stale`
    a.close()
    fired = []
    loop.call_later(0.02, fired.append, "timer")
    loop.call_later(0.05, loop.stop)
    ran = outcome(loop.run_forever)
    cleanup = outcome(loop.remove_reader, stale)[0]  # the program notices, and cleans up late
    return {
        "the loop ran on": (ran[0], ran[1] if ran[0] == "returned" else repr(ran[1])),
        "its timer fired": fired == ["timer"],
        "the late cleanup": cleanup,
        "new sockets work": new_sockets_work(loop),
    }


@test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it.generators
def _(co):
    a, b = nonblocking_pair()
    waiter = yield from co.spawn(co.recv(b, 100))
    yield from co.sleep(0.01)  # it is waiting for b now
    b.close()  # behind the waiting task's back
    a.close()
    fired = []

    def timer():
        yield from co.sleep(0.02)
        fired.append("timer")

    ran = ("returned", (yield from timer()))
    cleanup = "returned"
    try:
        yield from co.cancel(waiter)  # the program notices, and cleans up late
    except Exception as error:
        cleanup = repr(error)
    c, d = nonblocking_pair()  # new sockets, most likely reusing the numbers just freed
    with c, d:
        yield from co.sendall(c, b"fresh")
        got = yield from co.timeout_after(SAFETY, co.recv(d, 100))
    return {
        "the loop ran on": ran,
        "its timer fired": fired == ["timer"],
        "the late cleanup": cleanup,
        "new sockets work": got,
    }


@test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it.coroutines
async def _(co):
    a, b = nonblocking_pair()
    waiter = await co.spawn(co.recv(b, 100))
    await co.sleep(0.01)  # it is waiting for b now
    b.close()  # behind the waiting task's back
    a.close()
    fired = []

    async def timer():
        await co.sleep(0.02)
        fired.append("timer")

    ran = ("returned", await timer())
    cleanup = "returned"
    try:
        await co.cancel(waiter)  # the program notices, and cleans up late
    except Exception as error:
        cleanup = repr(error)
    c, d = nonblocking_pair()  # new sockets, most likely reusing the numbers just freed
    with c, d:
        await co.sendall(c, b"fresh")
        got = await co.timeout_after(SAFETY, co.recv(d, 100))
    return {
        "the loop ran on": ran,
        "its timer fired": fired == ["timer"],
        "the late cleanup": cleanup,
        "new sockets work": got,
    }


@test_a_watched_fd_closed_behind_the_loops_back_does_not_wedge_it.blocking
def _(co):
    a, b = nonblocking_pair()
    waiter = co.spawn(co.recv, b, 100)
    co.sleep(0.01)  # it is waiting for b now
    b.close()  # behind the waiting task's back
    a.close()
    fired = []

    def timer():
        co.sleep(0.02)
        fired.append("timer")

    ran = ("returned", timer())
    cleanup = "returned"
    try:
        co.cancel(waiter)  # the program notices, and cleans up late
    except Exception as error:
        cleanup = repr(error)
    c, d = nonblocking_pair()  # new sockets, most likely reusing the numbers just freed
    with c, d:
        co.sendall(c, b"fresh")
        got = co.timeout_after(SAFETY, co.recv, d, 100)
    return {
        "the loop ran on": ran,
        "its timer fired": fired == ["timer"],
        "the late cleanup": cleanup,
        "new sockets work": got,
    }


# --- Ctrl-C during a workload ----------------------------------------------------------------

INTERRUPTED = 128 + signal.SIGINT  # what a shell reports for a command ended by Ctrl-C


def ctrl_c_ends_workloads_cleanly(case, tmp_path) -> dict:
    """SIGINT to the echo server mid-transfer, to the sleep workload in its idle wait, and to
    the crawler waiting for a site that accepted its connection and never answers."""
    with running(echo_command(case), ECHO_READY, tmp_path) as server, connect(server.port) as busy:
        busy.sendall(b"x" * 100_000)  # a transfer in flight when the signal comes
        stopped = server.stop(signal.SIGINT)
    seen = {
        "echo exit status": stopped.returncode,
        "echo says": "stopped by SIGINT; every socket closed" in stopped.out or stopped.out,
    }
    # Its 1 000 idle sockets open and the process asleep in its selector, for longer than the
    # workload's short settling sleep: in its idle wait. (A signal in the bookkeeping around
    # a wait is the next property's case.)
    sleep = module_command("workloads.sleep", *loop_args(case), "--idle", "60")
    seen |= _interrupt("sleep", sleep, lambda pid: settled_in_selector(pid, 1000, quiet=0.25))
    with socket.create_server(("127.0.0.1", 0)) as mute:  # the kernel accepts; nobody answers
        url = f"http://127.0.0.1:{mute.getsockname()[1]}/"
        crawl = module_command("workloads.crawler", *loop_args(case), url, "--timeout", "60")

        def connected_and_waiting(pid: int) -> Callable[[], bool]:
            return lambda: bool(select.select([mute], [], [], 0)[0]) and waiting_in_selector(pid)

        seen |= _interrupt("crawler", crawl, connected_and_waiting)
    return seen


def _interrupt(name: str, command: list[str], in_the_loop) -> dict:
    """Start command, wait until the condition in_the_loop(pid) holds, send SIGINT: what the
    user sees."""
    process = spawn(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = in_the_loop(process.pid)
        until(lambda: process.poll() is not None or ready())
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=PATIENCE)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return {
        f"{name} exit status": process.returncode,
        f"{name} says": "interrupted; every socket closed" in err or err[-1500:],
        f"{name} prints no traceback": "Traceback" not in err,
    }


ENDED_CLEANLY = {
    "echo exit status": 0,  # SIGINT and SIGTERM are how the server is meant to be stopped
    "echo says": True,
    "sleep exit status": INTERRUPTED,
    "sleep says": True,
    "sleep prints no traceback": True,
    "crawler exit status": INTERRUPTED,
    "crawler says": True,
    "crawler prints no traceback": True,
}


@case_prop("io", timeout=60)
def test_ctrl_c_ends_a_workload_cleanly(case, tmp_path):
    assert ctrl_c_ends_workloads_cleanly(case, tmp_path) == ENDED_CLEANLY


# The sleep workload's sleepers wake throughout its run, so at each of these moments (seconds
# of the process's own CPU time, past its start-up) the loop is as likely to be in its own
# bookkeeping (a queue half updated, a task half made, a timer half popped) as in a task or its
# selector. Its own CPU clock, not the wall clock: on a busy machine half a wall second can
# still be start-up (the interrupt then lands before the loop runs, a different property).
BUSY_MOMENTS = (0.5, 0.9, 1.3, 1.7)
BUSY_SLEEPERS = ("--tasks", "200000", "--max-delay", "5")


def ctrl_c_while_busy(case) -> list[dict]:
    """SIGINT to the sleep workload at BUSY_MOMENTS (a run each) while 200 000 sleepers start
    and wake: what the user sees each time."""
    command = module_command("workloads.sleep", *loop_args(case), *BUSY_SLEEPERS)
    return [_interrupt("sleep", command, _cpu_seconds_spent(moment)) for moment in BUSY_MOMENTS]


def _cpu_seconds_spent(seconds: float):
    """A condition factory for _interrupt: true once the process has used `seconds` of CPU."""

    def spent(pid: int) -> Callable[[], bool]:
        process = psutil.Process(pid)

        def enough() -> bool:
            times = process.cpu_times()
            return times.user + times.system >= seconds

        return enough

    return spent


@case_prop("io", timeout=90)
def test_ctrl_c_in_the_loops_own_bookkeeping_ends_it_cleanly(case):
    assert ctrl_c_while_busy(case) == [
        {"sleep exit status": INTERRUPTED, "sleep says": True, "sleep prints no traceback": True}
    ] * len(BUSY_MOMENTS)


@case_prop("interrupts", timeout=120)
def test_ctrl_c_at_each_back_edge_of_the_loops_own_code_ends_it_cleanly(case):
    # A loop's back edge is a moment the interpreter takes a signal at, and on CPython 3.13 the
    # back edge of `while cond:` inside a try lies outside that try (CPython gh-130279). The
    # Ctrl-C sweep (reports/findings-ctrl-c.md) plays every moment; this plays the back edges of
    # the variant's own folder, on the interpreter running the suite.
    if case.style not in case.variant.styles:
        pytest.skip(f"the sleep workload has no {case.style} style")
    sweep = Sweep(case.variant.name, case.style)
    edges = sweep.moments(where=back_edge_in(ROOT / "loops" / case.variant.name))
    endings = {f"{Path(key[0]).name}:{key[3]}": sweep.interrupted_at(key) for key, _ in edges}
    faults = {at: ended for at, ended in endings.items() if ended[0] not in {CLEAN, NOT_REACHED}}
    assert faults == {}


# --- a signal that wakes no one ----------------------------------------------------------------

# CPython's C-level handler only marks a signal; its Python handler (KeyboardInterrupt) runs
# when the main thread next runs bytecode. A loop asleep in its wait learns of the signal only
# if the signal interrupts that very wait. One that lands a moment before the wait begins (past
# the last bytecode), or that the kernel hands to another thread, interrupts nothing: the loop
# sleeps on, on an idle server for good, unless it has the C handler write to a socket it
# watches (``signal.set_wakeup_fd``; loops/_signals.py). The first case is a race of a few
# instructions; the second makes the same state on purpose: the main thread blocks SIGINT, so
# the kernel hands it to the other thread the program has.
SIGNAL_GUARD = 3.0  # seconds the loop may take to end once the signal came, before it "hangs"
ASLEEP_QUIET = 0.3  # seconds the main thread must sleep without waking before the signal
ASLEEP_WITHIN = 5.0  # a loop that wakes by itself (the threads variant's slices) never settles


@prop("interrupts", timeout=ASLEEP_WITHIN + SIGNAL_GUARD + 10)
def test_a_signal_another_thread_caught_still_ends_the_loops_wait(play):
    assert _sigint_caught_elsewhere(play) == "raised KeyboardInterrupt"


def _sigint_caught_elsewhere(play) -> str:
    """Play (a wait of an hour) in a forked child whose main thread blocks SIGINT while a
    second thread does not; once the main thread has slept ASLEEP_QUIET seconds without
    waking, SIGINT to the process: "raised KeyboardInterrupt", "returned ...", or "hung"."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: leaves without cleanup handlers, whatever happens
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            bystander = threading.Thread(target=threading.Event().wait, daemon=True)
            bystander.start()  # it leaves SIGINT unblocked: the kernel hands the signal to it
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            result = f"returned {play()!r}"
        except BaseException as error:
            result = f"raised {type(error).__name__}"
        os.write(writer, result.encode())
        os._exit(0)
    os.close(writer)
    try:
        _asleep(pid)
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + SIGNAL_GUARD
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() >= deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                return "hung"
            time.sleep(0.02)
        return os.read(reader, 4096).decode() or "exited without a word"
    finally:
        os.close(reader)


def _asleep(pid: int) -> None:
    """Return once the child's main thread has slept in the kernel ASLEEP_QUIET seconds in a
    row (or after ASLEEP_WITHIN seconds): then a signal finds it in its wait."""
    status = Path(f"/proc/{pid}/task/{pid}/status")
    seen, since = None, time.monotonic()
    deadline = since + ASLEEP_WITHIN
    while time.monotonic() < deadline:
        fields = dict(line.split(":", 1) for line in status.read_text().splitlines())
        now = (fields["State"].split()[0], fields["voluntary_ctxt_switches"].strip())
        if now != seen or now[0] != "S":
            seen, since = now, time.monotonic()
        elif time.monotonic() - since >= ASLEEP_QUIET:
            return
        time.sleep(0.02)


HOUR = 3600.0


@test_a_signal_another_thread_caught_still_ends_the_loops_wait.callbacks
def _(loop):
    loop.call_later(HOUR, loop.stop)
    loop.run_forever()


@test_a_signal_another_thread_caught_still_ends_the_loops_wait.generators
def _(co):
    yield from co.sleep(HOUR)


@test_a_signal_another_thread_caught_still_ends_the_loops_wait.coroutines
async def _(co):
    await co.sleep(HOUR)


@test_a_signal_another_thread_caught_still_ends_the_loops_wait.blocking
def _(co):
    co.sleep(HOUR)


@test_a_signal_another_thread_caught_still_ends_the_loops_wait.asyncio
async def _():
    await asyncio.sleep(HOUR)
