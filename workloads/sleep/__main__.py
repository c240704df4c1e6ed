"""``python -m workloads.sleep``: run the sleepers (or the idle wait) on one loop and style.

Usage and the JSON fields are in ``workloads/README.md``. This module
only does what is the same for every style: arguments, the plan, the idle sockets, timing the
run, the summary line and the record.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from machine.proc import raise_open_file_limit, resident
from workloads.common import (
    add_loop_arguments,
    finish,
    interrupted,
    number,
    peak_rss_mib,
    resolve,
    style_module,
)
from workloads.sleep.common import Plan, Tally, cpu_seconds, idle_sockets, record

IDLE_SOCKETS = 1000
# The resident mode's one delay: far longer than any loop takes to put a million sleepers to
# sleep, so that when the last falls asleep none has woken.
RESIDENT_DELAY = 3600.0


def _milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.3f} ms"


def _tick(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms" if seconds >= 1e-4 else f"{seconds * 1e6:.3g} µs"


def summary_line(result: dict) -> str:
    head = f"sleep {result['loop']}/{result['style']}: "
    if result["mode"] == "idle":
        head += f"idle {result['idle_s']} s with {result['idle_sockets']} idle sockets, "
    else:
        head += f"{result['tasks']} tasks up to {result['max_delay_s']} s, "
    per_task = "" if result["mode"] == "idle" else f" ({result['cpu_per_task_us']:.1f} µs/task)"
    line = (
        f"{head}wall {result['wall_s']:.3f} s, CPU {result['cpu_s']:.3f} s{per_task}, "
        f"lateness p50 {_milliseconds(result['lateness_p50_s'])} "
        f"p99 {_milliseconds(result['lateness_p99_s'])} "
        f"max {_milliseconds(result['lateness_max_s'])}, "
        f"early {result['early_wakeups']} ({result['early_beyond_tick']} beyond the "
        f"{_tick(result['clock_tick_s'])} clock tick), "
        f"peak RSS {result['peak_rss_mib']:.1f} MiB"
    )
    if result["mode"] == "idle":
        line += f", idle CPU {result['cpu_per_wall_s']:.2%} of wall"
    if result["cancel_fraction"]:
        line += (
            f", cancelled {result['cancelled']} ({result['woke_after_cancel']} woke anyway, "
            f"{result['cancel_too_late']} too late to cancel)"
        )
    if result["unexpected_reads"]:
        line += f", {result['unexpected_reads']} idle sockets reported readable"
    return line + ("" if result["ok"] else "; FAILED")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m workloads.sleep",
        description="N sleepers with seeded random delays (or one idle wait) on one loop.",
    )
    add_loop_arguments(parser)
    parser.add_argument("--tasks", type=number(int, 1), help="number of sleepers")
    parser.add_argument(
        "--max-delay", type=number(float, 0.0), help="longest delay in seconds (uniform from 0)"
    )
    parser.add_argument(
        "--cancel",
        type=number(float, 0.0, 1.0),
        default=0.0,
        metavar="F",
        help="fraction of sleepers cancelled before they fire (default 0)",
    )
    parser.add_argument(
        "--idle",
        type=number(float, 0.0, low_open=True),
        metavar="S",
        help="instead: one sleep of S seconds while idle sockets are watched",
    )
    parser.add_argument(
        "--idle-sockets",
        type=number(int, 0),
        default=IDLE_SOCKETS,
        metavar="N",
        help=f"with --idle: how many idle sockets are watched (default {IDLE_SOCKETS})",
    )
    parser.add_argument(
        "--resident",
        action="store_true",
        help="with --tasks: memory per sleeping task; every sleeper sleeps an hour, and once "
        "all are asleep the process reads its resident memory, writes its record and ends",
    )
    parser.add_argument("--seed", type=int, default=1, help="delay seed (default 1)")
    parser.add_argument("--json", metavar="FILE", help="write the result record ('-': stdout)")
    args = parser.parse_args(argv)
    variant, style = resolve(parser, args)
    if args.idle is not None:
        if args.tasks is not None or args.max_delay is not None or args.cancel:
            parser.error("--idle runs one sleep: drop --tasks, --max-delay and --cancel")
        # Room for the idle sockets beside the loop's own descriptors (selector, wake-up pair).
        limit = raise_open_file_limit(args.idle_sockets + 64)
        if limit < args.idle_sockets + 16:
            parser.exit(
                1,
                f"{args.idle_sockets} idle sockets need more open files than this process may "
                f"have (hard limit {limit}); raise it with `ulimit -Hn` as an administrator\n",
            )
        plan = Plan(delays=[args.idle], cancels=[False])
        sockets = idle_sockets(args.idle_sockets)
    elif args.idle_sockets != IDLE_SOCKETS:
        parser.error("--idle-sockets goes with --idle")
    elif args.resident:
        if args.tasks is None or args.max_delay is not None or args.cancel:
            parser.error("--resident takes --tasks alone (every sleeper sleeps an hour)")
        plan, sockets = Plan(delays=[RESIDENT_DELAY] * args.tasks, cancels=[False] * args.tasks), []
    elif args.tasks is None or args.max_delay is None:
        parser.error("--tasks and --max-delay are required (or --idle S)")
    else:
        plan, sockets = Plan.make(args.tasks, args.max_delay, args.cancel, args.seed), []

    tally = Tally(len(plan))
    api, running = variant.api(style), style_module("workloads.sleep", style)
    if args.resident:
        tally.all_asleep = _report_resident(variant.name, style, len(plan), tally, args.json)
    cpu, wall = cpu_seconds(), time.perf_counter()
    try:
        try:
            running.run(api, plan, tally, sockets)
        finally:
            for sock in sockets:
                sock.close()
    except KeyboardInterrupt:  # Ctrl-C: no record, no traceback
        return interrupted(parser.prog)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall

    result = {
        "workload": "sleep",
        "mode": "sleepers" if args.idle is None else "idle",
        "loop": variant.name,
        "style": style,
        "tasks": len(plan),
        "max_delay_s": args.max_delay if args.idle is None else args.idle,
        "cancel_fraction": args.cancel,
        "idle_s": args.idle,
        "idle_sockets": len(sockets),
        "seed": args.seed,
        **record(tally, wall, cpu, len(plan)),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    result["ok"] = (
        result["woke_after_cancel"] == 0
        and result["early_beyond_tick"] == 0
        and result["unexpected_reads"] == 0
    )
    return finish(result, args.json, summary_line(result))


def _report_resident(loop: str, style: str, tasks: int, tally: Tally, json_path: str | None):
    """The resident mode's end, called once every sleeper is asleep: the memory they hold,
    the record, and the process's end, at once (os._exit: unwinding a million sleepers is not
    what this mode measures, and would take longer than putting them to sleep)."""
    start = resident()  # the loop imported and its API in hand; no sleeper yet

    def report() -> None:
        asleep = resident()
        awake = sum(tally.woke) + tally.cancels  # none, with an hour's delay; said if not
        result = {
            "workload": "sleep",
            "mode": "resident",
            "loop": loop,
            "style": style,
            "tasks": tasks,
            "asleep": tasks - awake,
            "rss_start_bytes": start,
            "rss_asleep_bytes": asleep,
            "bytes_per_sleeper": round((asleep - start) / max(tasks - awake, 1), 1),
            "cpu_s": round(cpu_seconds(), 6),
            "peak_rss_mib": round(peak_rss_mib(), 1),
        }
        result["ok"] = awake == 0
        line = (
            f"sleep {loop}/{style}: {tasks} sleepers asleep at once hold "
            f"{result['bytes_per_sleeper']:,.0f} bytes each (resident memory "
            f"{start / 2**20:.1f} MiB before, {asleep / 2**20:.1f} MiB with them)"
        )
        code = finish(result, json_path, line + ("" if result["ok"] else "; FAILED"))
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    return report


if __name__ == "__main__":
    sys.exit(main())
