"""The micro operations under pyperf, the harness CPython's own benchmarks use.

    python -m bench.studies.micro.pyperf_micro --loop NAME --style S [--op OP ...] [pyperf options]
        -o FILE

The operations are :mod:`bench.studies.micro.measure`'s, the very same programs
(:func:`bench.studies.micro.measure.timed_run`); only the harness differs. pyperf calibrates the
number of operations per value (at least ``--min-time``, 100 ms by default), runs every value
in fresh worker processes (20 by default, each with a warm-up and 3 values), and says when a
result looks unstable (a standard deviation of 10% of the mean or more, outliers, too few
samples). ``-o FILE`` writes pyperf's JSON, which :mod:`bench.studies.micro.measure` reads back: the
median per operation, the spread, and the warnings.
"""

from __future__ import annotations

import pyperf

import loops as lab_loops  # `loops` is pyperf's name for the count of operations
from bench.studies.micro import OPERATIONS
from bench.studies.micro.measure import timed_run


def operation_seconds(count: int, loop_name: str, style: str, op: str) -> float:
    """Seconds for `count` operations of `op` on a fresh loop (what pyperf divides by count)."""
    return timed_run(lab_loops.get(loop_name), style, op, count) / 1e9


def _worker_arguments(cmd: list[str], args) -> None:
    """Hand this run's own options on to every worker process pyperf starts."""
    cmd.extend(("--loop", args.loop, "--style", args.style))
    for op in args.op or ():
        cmd.extend(("--op", op))


def main() -> None:
    runner = pyperf.Runner(
        program_args=("-m", "bench.studies.micro.pyperf_micro"), add_cmdline_args=_worker_arguments
    )
    runner.argparser.add_argument("--loop", required=True)
    runner.argparser.add_argument("--style", required=True, choices=lab_loops.STYLES)
    runner.argparser.add_argument("--op", action="append", choices=sorted(OPERATIONS))
    args = runner.parse_args()
    variant = lab_loops.get(args.loop)
    variant.api(args.style)  # a style the variant does not speak: a clear error here
    for op in args.op or OPERATIONS:
        if args.style in OPERATIONS[op]:
            runner.bench_time_func(op, operation_seconds, args.loop, args.style, op)


if __name__ == "__main__":
    main()
