"""The sleep workload in the coroutines style: one task per sleeper, ``await co.sleep``.

Diff it with generators.py (the same code with ``yield from``) and callbacks.py (timers
instead of tasks). Sleepers start a batch at a time; the loop runs once between a batch's start
and the cancelling of the batch's chosen sleepers, so a cancel reaches a sleeping task. Each
sleeper notes its deadline on the loop's clock before it sleeps and its lateness when it wakes;
a cancelled one must never wake. Idle sockets, if any, are watched for reading throughout by
one task each (they never become readable).
"""

from __future__ import annotations

from workloads.sleep.common import BATCH, SETTLE, measure_tick


def run(co, plan, tally, sockets):
    """Run every sleeper of plan (cancelling the chosen ones) while watching sockets."""
    co.run(main(co, plan, tally, sockets))


async def main(co, plan, tally, sockets):
    tally.clock_tick = measure_tick(co.now)
    watchers = []
    for sock in sockets:
        task = await co.spawn(watch(co, sock, tally))
        watchers.append(task)
    if watchers:
        await co.sleep(SETTLE)  # the idle window opens when every watcher waits
    sleepers = []
    for first in range(0, len(plan), BATCH):
        batch = range(first, min(first + BATCH, len(plan)))
        for index in batch:
            task = await co.spawn(sleeper(co, index, plan.delays[index], tally))
            sleepers.append(task)
        await co.sleep(0)  # the loop runs: the batch falls asleep
        for index in batch:
            if plan.cancels[index] and tally.cancel(index, co.now()):
                await co.cancel(sleepers[index])
    tally.mark()  # every sleeper is asleep (or cancelled)
    for index, task in enumerate(sleepers):
        if not tally.cancelled[index]:
            await co.join(task)
    tally.mark()  # every sleeper woke
    # Stay until the last deadline has passed, so a cancelled sleeper that still wakes is seen.
    await co.sleep(max(0.0, tally.last_deadline - co.now()))
    for task in watchers:
        await co.cancel(task)


async def sleeper(co, index, delay, tally):
    deadline = co.now() + delay
    tally.asleep(index, deadline)
    await co.sleep(delay)
    tally.wake(index, co.now() - deadline)


async def watch(co, sock, tally):
    await co.recv(sock, 1)
    tally.unexpected_reads += 1
