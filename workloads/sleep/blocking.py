"""The sleep workload in the blocking style: one task per sleeper, ``co.sleep`` blocking it.

Diff it with coroutines.py: the same code without ``await``, tasks spawned as
``co.spawn(fn, *args)``. On the threads variant every sleeper is an OS thread, so the number of
sleepers a machine can hold is the number of threads it lets a process start.
"""

from __future__ import annotations

from workloads.sleep.common import BATCH, SETTLE, measure_tick


def run(co, plan, tally, sockets):
    """Run every sleeper of plan (cancelling the chosen ones) while watching sockets."""
    co.run(main, co, plan, tally, sockets)


def main(co, plan, tally, sockets):
    tally.clock_tick = measure_tick(co.now)
    watchers = []
    for sock in sockets:
        task = co.spawn(watch, co, sock, tally)
        watchers.append(task)
    if watchers:
        co.sleep(SETTLE)  # the idle window opens when every watcher waits
    sleepers = []
    for first in range(0, len(plan), BATCH):
        batch = range(first, min(first + BATCH, len(plan)))
        for index in batch:
            task = co.spawn(sleeper, co, index, plan.delays[index], tally)
            sleepers.append(task)
        co.sleep(0)  # the loop runs: the batch falls asleep
        for index in batch:
            if plan.cancels[index] and tally.cancel(index, co.now()):
                co.cancel(sleepers[index])
    tally.mark()  # every sleeper is asleep (or cancelled)
    for index, task in enumerate(sleepers):
        if not tally.cancelled[index]:
            co.join(task)
    tally.mark()  # every sleeper woke
    # Stay until the last deadline has passed, so a cancelled sleeper that still wakes is seen.
    co.sleep(max(0.0, tally.last_deadline - co.now()))
    for task in watchers:
        co.cancel(task)


def sleeper(co, index, delay, tally):
    deadline = co.now() + delay
    tally.asleep(index, deadline)
    co.sleep(delay)
    tally.wake(index, co.now() - deadline)


def watch(co, sock, tally):
    co.recv(sock, 1)
    tally.unexpected_reads += 1
