"""What else the machine did while a repetition ran: CPU pressure, steal, others' CPU.

A repetition is a window of wall time; two readings of the whole machine, one at each end,
say whether something else competed for the CPUs meanwhile. CPU pressure (``/proc/pressure/
cpu``, the "some" line's total: microseconds in which at least one runnable task waited for a
CPU, Linux 4.20+), steal (``/proc/stat``: time the hypervisor ran another guest instead) and
the CPU of every process outside this one's tree (the machine's busy time from ``/proc/stat``
less this process's and its reaped children's rusage): the bench's children are the server and
the load generator, reaped before the window closes, so what is left is the neighbours'.
"""

from __future__ import annotations

import datetime
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100  # /proc/stat's unit, per s


@dataclass(frozen=True)
class Reading:
    """The machine at one instant, as far as a window's figures need it."""

    wall: float  # seconds since the epoch
    monotonic: float
    pressure_us: int | None  # /proc/pressure/cpu "some" total (None: no PSI here)
    busy_ticks: int | None  # every CPU's non-idle time, steal left out (None: no /proc/stat)
    steal_ticks: int | None
    tree_cpu_s: float  # this process's CPU and its reaped children's


def read() -> Reading:
    pressure = busy = steal = None
    try:
        for line in Path("/proc/pressure/cpu").read_text().splitlines():
            if line.startswith("some "):
                pressure = int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
        # user nice system idle iowait irq softirq steal (guest time is inside user and nice)
        busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
        steal = fields[7]
    except (OSError, ValueError, IndexError):
        pass
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree = own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
    return Reading(time.time(), time.monotonic(), pressure, busy, steal, tree)


def window(before: Reading, after: Reading) -> dict:
    """The window between two readings, as flat figures for a repetition's record: when it
    started (UTC) and how long it ran, the share of it some task waited for a CPU, and the
    CPU the hypervisor and the other processes took, as shares of one CPU over the window."""
    length = max(after.monotonic - before.monotonic, 1e-9)
    found: dict = {
        "started_at": datetime.datetime.fromtimestamp(before.wall, datetime.UTC).isoformat(
            timespec="milliseconds"
        ),
        "length_s": round(length, 4),
    }
    if before.pressure_us is not None and after.pressure_us is not None:
        found["cpu_pressure"] = round((after.pressure_us - before.pressure_us) / 1e6 / length, 4)
    if before.steal_ticks is not None and after.steal_ticks is not None:
        found["steal_cpus"] = round((after.steal_ticks - before.steal_ticks) / TICK / length, 4)
    if before.busy_ticks is not None and after.busy_ticks is not None:
        machine = (after.busy_ticks - before.busy_ticks) / TICK
        tree = after.tree_cpu_s - before.tree_cpu_s
        # /proc/stat counts in ticks, rusage exactly: a small negative is the ticks' rounding.
        found["others_cpus"] = round(max(machine - tree, 0.0) / length, 4)
    return found
