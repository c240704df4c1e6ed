"""Loop-free parts of the sleep workload: the plan, the tally, the clock's tick, the record.

The style files import these so that they differ only where the style differs. Every style
runs the same :class:`Plan` (seeded: the same delays and the same cancellations on every loop)
and records into the same :class:`Tally`; :func:`record` turns a finished tally into the flat
JSON record documented in :mod:`workloads.sleep`.
"""

from __future__ import annotations

import array
import math
import random
import resource
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

from workloads.common import percentile

# Sleepers are started this many at a time, and the loop runs between batches, so that
# cancellation reaches a sleeper that is already asleep (and a big run does not start with one
# enormous burst that no real program makes).
BATCH = 1000
# With idle sockets, the sleepers start this long after their watchers: the idle window must
# open when every watcher is waiting. A loop whose recv takes a turn before it registers
# (roundrobin checkpoints first) would otherwise register thousands of sockets inside the
# window and read as if waiting cost CPU. Any loop runs every runnable task before it blocks
# on this timer, so by the time it fires every watcher is waiting.
SETTLE = 0.05


def cpu_seconds() -> float:
    """This process's user + system CPU seconds, to the microsecond whatever its limits.

    Not ``time.process_time``: once the process has a CPU-time limit (``RLIMIT_CPU``, which the
    full bench sets to stop a runaway row, or a user's ``ulimit -t``), Linux answers that clock
    from the limit's timer, which moves in scheduler ticks (4 ms at HZ=250), and an idle window
    of 3 s read a tick of the setup before it as idle CPU. ``getrusage`` sums each thread's own
    exact runtime.
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@dataclass(frozen=True)
class Plan:
    """Who sleeps how long, and who gets cancelled: the same on every loop for one seed."""

    delays: list[float]  # seconds, one per sleeper
    cancels: list[bool]  # True: cancel this sleeper right after its batch starts

    @classmethod
    def make(cls, tasks: int, max_delay: float, cancel: float, seed: int) -> Plan:
        delays = random.Random(seed)
        # A separate stream, so the delays do not depend on the cancelled fraction.
        choices = random.Random(f"{seed}-cancel")
        return cls(
            delays=[delays.uniform(0.0, max_delay) for _ in range(tasks)],
            cancels=[choices.random() < cancel for _ in range(tasks)],
        )

    def __len__(self) -> int:
        return len(self.delays)


class Tally:
    """What the sleepers did, recorded as it happens (one class for every style)."""

    def __init__(self, count: int) -> None:
        self.woke = bytearray(count)  # 1 once sleeper i woke up
        self.cancelled = bytearray(count)  # 1 once sleeper i was cancelled
        self.deadlines = array.array("d", [math.inf]) * count  # sleeper i's deadline, loop clock
        self.lateness: list[float] = []  # wake time minus deadline, loop clock, per wake-up
        self.outstanding = count  # sleepers neither woken nor cancelled yet
        self.cancels = 0
        self.cancel_too_late = 0  # chosen for cancelling, but it had already woken
        self.woke_after_cancel = 0  # must stay 0: a cancelled sleeper that woke anyway
        self.unexpected_reads = 0  # must stay 0: an idle socket that became readable
        self.last_deadline = -math.inf  # the latest deadline any sleeper asked for
        self.clock_tick = 0.0  # the loop clock's smallest observed step
        self.marks: list[tuple[float, float]] = []  # (CPU, wall) when all slept, all woke
        # Called once every sleeper is asleep, if set (the resident mode ends the run there).
        self.all_asleep: Callable[[], None] | None = None

    def asleep(self, index: int, deadline: float) -> None:
        self.deadlines[index] = deadline
        if deadline > self.last_deadline:
            self.last_deadline = deadline

    def wake(self, index: int, lateness: float) -> None:
        if self.cancelled[index]:
            self.woke_after_cancel += 1
        else:
            self.outstanding -= 1
        self.woke[index] = 1
        self.lateness.append(lateness)

    def cancel(self, index: int, now: float) -> bool:
        """Mark sleeper index cancelled; False (and counted) if it is too late for that.

        Too late means it woke, or its deadline has passed: its timer may have fired, and a
        loop that delivers cancellation only at the next suspension (curio) rightly lets a
        task whose sleep is over run on, so such a sleeper is not cancelled at all.
        """
        if self.woke[index] or self.deadlines[index] <= now:
            self.cancel_too_late += 1
            return False
        self.cancelled[index] = 1
        self.cancels += 1
        self.outstanding -= 1
        return True

    def mark(self) -> None:
        """Note CPU and wall time: once when every sleeper is asleep, once when all woke."""
        self.marks.append((cpu_seconds(), time.perf_counter()))
        if len(self.marks) == 1 and self.all_asleep is not None:
            self.all_asleep()


def measure_tick(clock: Callable[[], float], budget: float = 0.05) -> float:
    """The smallest step the clock takes (its effective resolution), sampled for ``budget`` s.

    A loop whose clock ticks in milliseconds (uvloop: libuv's clock) cannot tell a wake-up
    half a tick early from one on time, so lateness is judged against this tick.
    """
    end = time.perf_counter() + budget
    tick, steps, last = math.inf, 0, clock()
    while steps < 5 and time.perf_counter() < end:
        now = clock()
        if now != last:
            tick, steps, last = min(tick, now - last), steps + 1, now
    return tick if steps else budget


def idle_sockets(count: int) -> list[socket.socket]:
    """count non-blocking sockets (socketpairs) that nobody will ever write to."""
    sockets: list[socket.socket] = []
    for _ in range(count // 2):
        sockets.extend(socket.socketpair())
    for sock in sockets:
        sock.setblocking(False)
    return sockets


def record(tally: Tally, wall_s: float, cpu_s: float, tasks: int) -> dict:
    """The measured half of the JSON record (the CLI adds the parameters)."""
    lateness = sorted(tally.lateness)
    (cpu_asleep, wall_asleep), (cpu_woken, wall_woken) = tally.marks[0], tally.marks[-1]
    window = wall_woken - wall_asleep
    return {
        "wall_s": round(wall_s, 6),
        "cpu_s": round(cpu_s, 6),
        "cpu_per_task_us": round(cpu_s / tasks * 1e6, 3),
        "sleep_wall_s": round(window, 6),
        "sleep_cpu_s": round(cpu_woken - cpu_asleep, 6),
        "cpu_per_wall_s": round((cpu_woken - cpu_asleep) / window, 6) if window > 0 else 0.0,
        "woke": len(lateness),
        "cancelled": tally.cancels,
        "cancel_too_late": tally.cancel_too_late,
        "woke_after_cancel": tally.woke_after_cancel,
        "lateness_min_s": lateness[0] if lateness else 0.0,
        "lateness_p50_s": percentile(lateness, 0.50),
        "lateness_p99_s": percentile(lateness, 0.99),
        "lateness_max_s": lateness[-1] if lateness else 0.0,
        "lateness_mean_s": sum(lateness) / len(lateness) if lateness else 0.0,
        "clock_tick_s": tally.clock_tick,
        "early_wakeups": sum(1 for late in lateness if late < 0),
        "early_beyond_tick": sum(1 for late in lateness if late < -tally.clock_tick),
        "unexpected_reads": tally.unexpected_reads,
    }
