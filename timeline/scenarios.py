"""The programs the timelines show: the same small programs on every loop, one per style.

``workers``: five workers and a main task, each doing one kind of waiting, so one chart shows
how a loop interleaves them: ``spinner`` yields with ``sleep(0)``, ``sleeper`` waits on timers,
``pinger`` and ``ponger`` talk over a socketpair, ``victim`` sleeps long and is cancelled
mid-wait, ``offloader`` sends blocking work to a thread.

``spin``: three tasks that only yield (``sleep(0)``), four times each. Its schedule is known in
advance for a FIFO loop (a b c a b c ...), so it is the tests' program; a loop that orders its
ready tasks differently (trio shuffles each batch on purpose) shows it at a glance.

The styles of one program are written to be diffed: same names, same structure, only the
style differs. Each scenario takes the style's entry (the namespace, or a loop for callbacks)
and returns nothing; the timeline is the tracer's record.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from typing import Any

SPINS = 4  # sleep(0) calls of a spinning task
TICK = 0.004  # seconds: the timer period, the thread's work, the victim's reprieve
ROUNDS = 3  # ping-pong exchanges over the socketpair


def _pair() -> tuple[socket.socket, socket.socket]:
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def blocking_work(seconds: float) -> float:
    """What the offloader sends to a thread: a blocking call the loop must not wait for."""
    time.sleep(seconds)
    return seconds


# -- workers ------------------------------------------------------------------------------


async def workers_coroutines(co: Any) -> None:
    a, b = _pair()

    async def spinner():
        for _ in range(SPINS):
            await co.sleep(0)

    async def sleeper():
        for _ in range(ROUNDS):
            await co.sleep(TICK)

    async def pinger():
        for _ in range(ROUNDS):
            await co.sendall(a, b"ping")
            await co.recv(a, 4)

    async def ponger():
        for _ in range(ROUNDS):
            await co.recv(b, 4)
            await co.sendall(b, b"pong")

    async def victim():
        await co.sleep(60)  # never wakes: cancelled mid-wait

    async def offloader():
        return await co.run_in_thread(blocking_work, TICK)

    try:
        doomed = await co.spawn(victim())
        tasks = [await co.spawn(f()) for f in (spinner, sleeper, pinger, ponger, offloader)]
        await co.sleep(TICK * 1.5)
        await co.cancel(doomed)
        for task in tasks:
            await co.join(task)
    finally:
        a.close()
        b.close()


def workers_generators(co: Any):
    a, b = _pair()

    def spinner():
        for _ in range(SPINS):
            yield from co.sleep(0)

    def sleeper():
        for _ in range(ROUNDS):
            yield from co.sleep(TICK)

    def pinger():
        for _ in range(ROUNDS):
            yield from co.sendall(a, b"ping")
            yield from co.recv(a, 4)

    def ponger():
        for _ in range(ROUNDS):
            yield from co.recv(b, 4)
            yield from co.sendall(b, b"pong")

    def victim():
        yield from co.sleep(60)  # never wakes: cancelled mid-wait

    def offloader():
        return (yield from co.run_in_thread(blocking_work, TICK))

    try:
        doomed = yield from co.spawn(victim())
        tasks = []
        for f in (spinner, sleeper, pinger, ponger, offloader):
            tasks.append((yield from co.spawn(f())))
        yield from co.sleep(TICK * 1.5)
        yield from co.cancel(doomed)
        for task in tasks:
            yield from co.join(task)
    finally:
        a.close()
        b.close()


def workers_blocking(co: Any) -> None:
    a, b = _pair()

    def spinner():
        for _ in range(SPINS):
            co.sleep(0)

    def sleeper():
        for _ in range(ROUNDS):
            co.sleep(TICK)

    def pinger():
        for _ in range(ROUNDS):
            co.sendall(a, b"ping")
            co.recv(a, 4)

    def ponger():
        for _ in range(ROUNDS):
            co.recv(b, 4)
            co.sendall(b, b"pong")

    def victim():
        co.sleep(60)  # never wakes: cancelled mid-wait

    def offloader():
        return co.run_in_thread(blocking_work, TICK)

    try:
        doomed = co.spawn(victim)
        tasks = [co.spawn(f) for f in (spinner, sleeper, pinger, ponger, offloader)]
        co.sleep(TICK * 1.5)
        co.cancel(doomed)
        for task in tasks:
            co.join(task)
    finally:
        a.close()
        b.close()


def workers_callbacks(loop: Any) -> None:
    a, b = _pair()
    unfinished = 5  # spinner, sleeper, pinger, ponger, offloader; the loop stops at zero

    def finished():
        nonlocal unfinished
        unfinished -= 1
        if unfinished == 0:
            loop.stop()

    def spinner(n):
        if n < SPINS:
            loop.call_soon(spinner, n + 1)
        else:
            finished()

    def sleeper(n):
        if n < ROUNDS:
            loop.call_later(TICK, sleeper, n + 1)
        else:
            finished()

    def pinger(n):  # a's reader: a pong arrived (n pongs so far), send the next ping
        if n:
            a.recv(4)
        if n < ROUNDS:
            a.send(b"ping")
            loop.add_reader(a, pinger, n + 1)
        else:
            loop.remove_reader(a)
            finished()

    def ponger(n):  # b's reader: a ping arrived, answer it
        b.recv(4)
        b.send(b"pong")
        if n + 1 < ROUNDS:
            loop.add_reader(b, ponger, n + 1)
        else:
            loop.remove_reader(b)
            finished()

    def victim():
        raise AssertionError("the victim's timer was cancelled; it must never run")

    def cancel_victim(handle):
        handle.cancel()

    def offloaded(future):
        future.result()
        finished()

    def main():
        doomed = loop.call_later(60, victim)
        loop.call_soon(spinner, 1)
        loop.call_later(TICK, sleeper, 1)
        loop.call_soon(pinger, 0)
        loop.add_reader(b, ponger, 0)
        loop.run_in_thread(blocking_work, TICK, callback=offloaded)
        loop.call_later(TICK * 1.5, cancel_victim, doomed)

    try:
        loop.call_soon(main)
        loop.run_forever()
    finally:
        a.close()
        b.close()


# -- spin ---------------------------------------------------------------------------------


async def spin_coroutines(co: Any) -> None:
    async def a():
        for _ in range(SPINS):
            await co.sleep(0)

    async def b():
        for _ in range(SPINS):
            await co.sleep(0)

    async def c():
        for _ in range(SPINS):
            await co.sleep(0)

    tasks = [await co.spawn(f()) for f in (a, b, c)]
    for task in tasks:
        await co.join(task)


def spin_generators(co: Any):
    def a():
        for _ in range(SPINS):
            yield from co.sleep(0)

    def b():
        for _ in range(SPINS):
            yield from co.sleep(0)

    def c():
        for _ in range(SPINS):
            yield from co.sleep(0)

    tasks = []
    for f in (a, b, c):
        tasks.append((yield from co.spawn(f())))
    for task in tasks:
        yield from co.join(task)


def spin_blocking(co: Any) -> None:
    def a():
        for _ in range(SPINS):
            co.sleep(0)

    def b():
        for _ in range(SPINS):
            co.sleep(0)

    def c():
        for _ in range(SPINS):
            co.sleep(0)

    tasks = [co.spawn(f) for f in (a, b, c)]
    for task in tasks:
        co.join(task)


def spin_callbacks(loop: Any) -> None:
    unfinished = 3

    def finished():
        nonlocal unfinished
        unfinished -= 1
        if unfinished == 0:
            loop.stop()

    def a(n):
        loop.call_soon(a, n + 1) if n < SPINS else finished()

    def b(n):
        loop.call_soon(b, n + 1) if n < SPINS else finished()

    def c(n):
        loop.call_soon(c, n + 1) if n < SPINS else finished()

    def main():
        for f in (a, b, c):
            loop.call_soon(f, 0)

    loop.call_soon(main)
    loop.run_forever()


# -- the registry -------------------------------------------------------------------------

SCENARIOS: dict[str, dict[str, Callable[..., Any]]] = {
    "workers": {
        "callbacks": workers_callbacks,
        "generators": workers_generators,
        "coroutines": workers_coroutines,
        "blocking": workers_blocking,
    },
    "spin": {
        "callbacks": spin_callbacks,
        "generators": spin_generators,
        "coroutines": spin_coroutines,
        "blocking": spin_blocking,
    },
}


def play(api: Any, style: str, scenario: str) -> None:
    """Run one scenario on a style's entry (traced or not)."""
    program = SCENARIOS[scenario][style]
    if style == "callbacks":
        loop = api()
        try:
            program(loop)
        finally:
            loop.close()
    elif style == "blocking":
        api.run(program, api)
    else:
        task = program(api)
        try:
            api.run(task)
        finally:
            task.close()  # a no-op once run; if run() refused it, no "never awaited" warning
