"""wrk, the external HTTP load generator: the command line and its summary as a record.

wrk (Debian's package ``wrk``) runs in its own process, on its own core where the machine
has two. ``report.lua`` makes it print its summary as one JSON line (``WRK_JSON {...}``):
request count, duration, errors by kind and latency percentiles in microseconds, read here
into a dict. wrk counts a response with status >= 400 as a ``status`` error, and connect, read,
write and timeout errors apart; the workload adds them up as failures.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
from pathlib import Path

LUA = Path(__file__).with_name("report.lua")
MARK = "WRK_JSON "
ERROR_KINDS = ("connect", "read", "write", "status", "timeout")


class WrkMissing(RuntimeError):
    """wrk is not installed."""


def command(url: str, seconds: float, connections: int, threads: int, timeout: float) -> list[str]:
    binary = shutil.which("wrk")
    if binary is None:
        raise WrkMissing("wrk is not installed (Debian/Ubuntu: apt-get install -y wrk)")
    return [
        binary,
        f"--threads={threads}",
        f"--connections={connections}",
        f"--duration={max(1, round(seconds))}s",
        f"--timeout={max(1, round(timeout))}s",
        "--latency",
        f"--script={LUA}",
        url,
    ]


def parse(output: str) -> dict:
    """The record report.lua printed, or ValueError quoting wrk's output."""
    for line in output.splitlines():
        if line.startswith(MARK):
            return json.loads(line[len(MARK) :])
    raise ValueError(f"wrk printed no summary:\n{output.strip()}")


def run(argv: list[str], core: int | None) -> tuple[dict, float]:
    """Run wrk (pinned to core), return its record and the CPU seconds it used."""
    preexec = None
    if core is not None:

        def preexec() -> None:
            os.sched_setaffinity(0, {core})

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.run(
        argv, capture_output=True, text=True, preexec_fn=preexec, check=False, timeout=600
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if process.returncode != 0:
        raise RuntimeError(f"wrk failed ({process.returncode}): {process.stderr.strip()}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return parse(process.stdout), cpu
