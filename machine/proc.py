"""What Linux's ``/proc`` says of a process: time on a CPU, context switches, memory, the
open-file limit.

One reader each, for every room that measures a process: the scheduler's exact on-CPU time
(``/proc/PID/task/*/schedstat``, nanoseconds, where psutil's ``cpu_times`` counts 10 ms ticks)
and the address space's high-water mark (``VmHWM``, which starts afresh at ``exec``, where
``ru_maxrss`` starts at the parent's size at fork and survives ``exec``).
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
from pathlib import Path


def schedstat(pid: int | str = "self") -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for one), summed over the process's
    threads; None where there is no such process or no schedstat (not Linux)."""
    on_cpu = waiting = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        with contextlib.suppress(OSError, ValueError, IndexError):  # a thread that just ended
            fields = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()
            on_cpu += int(fields[0])
            waiting += int(fields[1])
    return on_cpu / 1e9, waiting / 1e9


SWITCHES = ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")


def context_switches(pid: int | str = "self") -> tuple[int, int] | None:
    """(voluntary, involuntary) context switches so far, summed over the process's live
    threads (a thread that has ended takes its counts with it); None where there is no such
    process. Voluntary: the thread blocked (a wait, a lock); involuntary: it was preempted."""
    counts = [0, 0]
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for task in tasks:
        found = _status(f"{pid}/task/{task}", *SWITCHES)  # None: a thread that just ended
        if found:
            counts[0] += found[SWITCHES[0]]
            counts[1] += found[SWITCHES[1]]
    return counts[0], counts[1]


def voluntary_switches(task: int | str = "self") -> int | None:
    """How many times one thread has gone to sleep so far (task: a PID for its main thread,
    or PID/task/TID); None where it is gone."""
    found = _status(task, SWITCHES[0])
    return found[SWITCHES[0]] if found else None


def on_cpu(pid: int | str = "self") -> float | None:
    """A process's seconds on a CPU so far, threads included (None: gone, or not Linux)."""
    found = schedstat(pid)
    return None if found is None else found[0]


def cpu_seconds(pid: int) -> float | None:
    """A live process's CPU seconds so far, user + system as psutil reads them from
    ``/proc/PID/stat`` (10 ms ticks: for spans of seconds), or None if it is gone."""
    import psutil  # the bench's and the workloads' dependency, not conformance's

    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return times.user + times.system


def peak_rss(pid: int | str = "self") -> int | None:
    """A process's peak resident memory since its exec, bytes (None: gone, or not Linux)."""
    found = _status(pid, "VmHWM")
    if found:
        return found["VmHWM"] * 1024
    if pid == "self":  # no /proc: the rusage figure, the best this system offers
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    return None


def resident(pid: int | str = "self") -> int | None:
    """A process's resident memory now, bytes (``VmRSS``; None: gone, or not Linux). Memory
    the kernel holds for it (socket buffers, each thread's kernel stack) is not in it."""
    found = _status(pid, "VmRSS")
    return found["VmRSS"] * 1024 if found else None


def _status(task: int | str, *fields: str) -> dict[str, int] | None:
    """The numbers of `fields` in ``/proc/TASK/status`` (kB for the memory lines); None where
    there is no such process or thread, or a field is missing."""
    found = {}
    try:
        with open(f"/proc/{task}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in fields:
                    found[name] = int(value.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return found if len(found) == len(fields) else None


def raise_open_file_limit(wanted: int | None = None) -> int:
    """Raise this process's soft open-file limit to `wanted` (default: the hard limit), so a run
    with 10 000 connections or idle sockets is not stopped by a default soft limit of 1 024.

    Never above the hard limit, which only an administrator may raise; the limit in force is
    returned, so a caller that needs more than that can say so clearly. Children inherit it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if wanted is None else wanted
    if hard != resource.RLIM_INFINITY:
        target = min(target, hard)
    if soft != resource.RLIM_INFINITY and target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
