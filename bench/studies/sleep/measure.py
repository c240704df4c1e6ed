"""Sleep, the running side: one repetition is one fresh process under its point's CPU cap.

What is measured and why is the study's description (:mod:`bench.studies.sleep`).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

from bench.plan import Point, Row
from bench.procs import Child, ChildFailed, DidNotFinish, python
from bench.study import Measuring

# Runs argv[2:] with RLIMIT_CPU set to argv[1] seconds (the kernel sends SIGXCPU past it):
# exec keeps the process (its pid, pinning and reaping stay the bench's) and the limit.
CPU_CAPPED = (
    "import os, resource, sys; cap = int(sys.argv[1]); "
    "resource.setrlimit(resource.RLIMIT_CPU, (cap, cap + 5)); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[2:]])"
)


class CpuCapReached(DidNotFinish):
    """The process used more CPU than its point's cap allows: it did not finish in N s of CPU."""

    kind = "cpu"


def cpu_capped(argv: list[str], cap_s: float) -> list[str]:
    """argv run under a CPU-time limit of cap_s seconds."""
    return [argv[0], "-c", CPU_CAPPED, str(int(cap_s)), *argv[1:]]


# The wall-time safety net of a CPU-capped repetition, as a multiple of its CPU cap.
WALL_CAP_FACTOR = 5


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: one fresh process running the sleep workload."""
    params = point.args
    out = workdir / "sleep.json"
    argv = python("-m", "workloads.sleep", "--loop", row.variant, "--style", row.style)
    if params["mode"] == "idle":
        argv += ["--idle", str(params["idle"])]
        argv += ["--idle-sockets", str(params.get("sockets", 1000))]
        timeout = params["idle"] + 60
    elif params["mode"] == "resident":
        argv += ["--resident", "--tasks", str(params["tasks"])]
        timeout = 600  # it ends once every sleeper is asleep
    else:
        argv += ["--tasks", str(params["tasks"]), "--max-delay", str(params["max_delay"])]
        argv += ["--cancel", str(params.get("cancel", 0))]
        timeout = params["max_delay"] + 240
    argv = [*argv, "--json", str(out)]
    if point.cap_s:
        argv, timeout = cpu_capped(argv, point.cap_s), point.cap_s * WALL_CAP_FACTOR + 60
    child = Child(argv, cores.subject, stderr_path=workdir / "sleep.err")
    try:
        usage = child.wait(timeout)
    finally:
        child.kill()
    if point.cap_s and usage.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        raise CpuCapReached(
            point.cap_s,
            f"used more than {point.cap_s:g} s of CPU (after {usage.wall_seconds:.0f} s of wall)",
        )
    record = json.loads(out.read_text()) if out.exists() else None
    if usage.returncode != 0 or record is None or not record.get("ok"):
        faults = (
            {
                k: record[k]
                for k in ("woke_after_cancel", "early_beyond_tick", "unexpected_reads", "asleep")
                if k in record
            }
            if record
            else {}
        )
        raise ChildFailed(
            f"sleep exited {usage.returncode} {faults or ''}{child.stderr_tail(300)}".strip()
        )
    if params["mode"] == "resident":
        return {
            "bytes_per_sleeper": record["bytes_per_sleeper"],
            "peak_rss_mib": record["peak_rss_mib"],
        }
    ideal = params.get("max_delay") or params.get("idle")
    return {
        "cpu_per_sleeper_us": record["cpu_per_task_us"] if params["mode"] != "idle" else None,
        "wall_over_ideal": record["wall_s"] / ideal if params["mode"] != "idle" else None,
        "lateness_p50_ms": record["lateness_p50_s"] * 1000 if params["mode"] != "idle" else None,
        "lateness_p99_ms": record["lateness_p99_s"] * 1000 if params["mode"] != "idle" else None,
        "peak_rss_mib": record["peak_rss_mib"],
        "idle_cpu_pct": record["cpu_per_wall_s"] * 100 if params["mode"] == "idle" else None,
        "cancelled": record.get("cancelled"),
        "woke": record.get("woke"),
    }


MEASURING = Measuring(measure=measure)
