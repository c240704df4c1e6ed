"""The sleep workload in the generators style: one task per sleeper, ``yield from co.sleep``.

Diff it with coroutines.py (the same code with ``await``) and callbacks.py (timers instead of
tasks). Sleepers start a batch at a time; the loop runs once between a batch's start and the
cancelling of the batch's chosen sleepers, so a cancel reaches a sleeping task. Each sleeper
notes its deadline on the loop's clock before it sleeps and its lateness when it wakes; a
cancelled one must never wake. Idle sockets, if any, are watched for reading throughout by one
task each (they never become readable).
"""

from __future__ import annotations

from workloads.sleep.common import BATCH, SETTLE, measure_tick


def run(co, plan, tally, sockets):
    """Run every sleeper of plan (cancelling the chosen ones) while watching sockets."""
    co.run(main(co, plan, tally, sockets))


def main(co, plan, tally, sockets):
    tally.clock_tick = measure_tick(co.now)
    watchers = []
    for sock in sockets:
        task = yield from co.spawn(watch(co, sock, tally))
        watchers.append(task)
    if watchers:
        yield from co.sleep(SETTLE)  # the idle window opens when every watcher waits
    sleepers = []
    for first in range(0, len(plan), BATCH):
        batch = range(first, min(first + BATCH, len(plan)))
        for index in batch:
            task = yield from co.spawn(sleeper(co, index, plan.delays[index], tally))
            sleepers.append(task)
        yield from co.sleep(0)  # the loop runs: the batch falls asleep
        for index in batch:
            if plan.cancels[index] and tally.cancel(index, co.now()):
                yield from co.cancel(sleepers[index])
    tally.mark()  # every sleeper is asleep (or cancelled)
    for index, task in enumerate(sleepers):
        if not tally.cancelled[index]:
            yield from co.join(task)
    tally.mark()  # every sleeper woke
    # Stay until the last deadline has passed, so a cancelled sleeper that still wakes is seen.
    yield from co.sleep(max(0.0, tally.last_deadline - co.now()))
    for task in watchers:
        yield from co.cancel(task)


def sleeper(co, index, delay, tally):
    deadline = co.now() + delay
    tally.asleep(index, deadline)
    yield from co.sleep(delay)
    tally.wake(index, co.now() - deadline)


def watch(co, sock, tally):
    yield from co.recv(sock, 1)
    tally.unexpected_reads += 1
