"""The sleep workload in the callbacks style: one timer per sleeper, ``loop.call_later``.

Diff it with coroutines.py and generators.py: the same names in the same order, but a sleeper
is a timer whose callback records the wake-up, and what a task would wait for is a callback
(``on_wake`` checks whether the last sleeper woke). Sleepers start a batch at a time; the
batch's chosen timers are cancelled at once, then the loop runs before the next batch. Each
sleeper notes its deadline on the loop's clock when it is scheduled and its lateness when it
fires; a cancelled one must never fire. Idle sockets, if any, are watched for reading
throughout (they never become readable).
"""

from __future__ import annotations

from workloads.common import run_until_stopped
from workloads.sleep.common import BATCH, SETTLE, measure_tick


def run(new_loop, plan, tally, sockets):
    """Run every sleeper of plan (cancelling the chosen ones) while watching sockets."""
    loop = new_loop()
    try:
        run_until_stopped(loop, main, loop, plan, tally, sockets)
    finally:
        loop.close()


def main(loop, plan, tally, sockets):
    tally.clock_tick = measure_tick(loop.time)
    watchers = []
    for sock in sockets:
        watchers.append(watch(loop, sock, tally))
    sleepers = []
    batches = iter(range(0, len(plan), BATCH))
    all_asleep = finishing = False

    def start_batch():
        nonlocal all_asleep
        first = next(batches, None)
        if first is None:
            all_asleep = True
            tally.mark()  # every sleeper is asleep (or cancelled)
            return on_wake()
        batch = range(first, min(first + BATCH, len(plan)))
        for index in batch:
            sleepers.append(sleeper(loop, index, plan.delays[index], tally, on_wake))
        for index in batch:
            if plan.cancels[index] and tally.cancel(index, loop.time()):
                sleepers[index].cancel()
        loop.call_soon(start_batch)  # the loop runs between batches

    def on_wake():
        nonlocal finishing
        if all_asleep and tally.outstanding == 0 and not finishing:
            finishing = True
            tally.mark()  # every sleeper woke
            # Stay until the last deadline has passed, so a cancelled timer that fires is seen.
            loop.call_at(max(tally.last_deadline, loop.time()), finish)

    def finish():
        for cancel in watchers:
            cancel()
        loop.stop()

    if watchers:
        loop.call_later(SETTLE, start_batch)  # the idle window opens when every watcher waits
    else:
        start_batch()


def sleeper(loop, index, delay, tally, on_wake):
    deadline = loop.time() + delay
    tally.asleep(index, deadline)

    def wake():
        tally.wake(index, loop.time() - deadline)
        on_wake()

    return loop.call_later(delay, wake)


def watch(loop, sock, tally):
    def on_readable():
        loop.remove_reader(sock)
        tally.unexpected_reads += 1

    loop.add_reader(sock, on_readable)
    return lambda: loop.remove_reader(sock)
