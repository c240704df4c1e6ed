"""`python -m bench run` measures and stores; `python -m bench report` renders from storage;
`python -m bench all` is what ``nox -s bench`` runs: run, the cost anatomy, then report.

Each command imports its own room when it runs: ``report`` loads :mod:`bench.render` alone,
``run`` and ``anatomy`` the running side.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from pathlib import Path

from bench import registry
from bench.store import RESULTS


def known_row_names() -> list[str]:
    """Loop names (from discovery) and anchor names (from the echo anchors) --loop accepts."""
    import loops
    from bench.registry import echo

    return sorted({*loops.discover(), *echo.anchor_names()})


class Stopped(KeyboardInterrupt):
    """SIGTERM, raised where the bench is, so every ``finally`` stops the children it started."""


def stop_on_sigterm() -> None:
    """Unwind on SIGTERM instead of dying with servers and generators left running.

    Python's default for SIGTERM ends the process at once, skipping the ``finally`` blocks that
    stop a repetition's server; a SIGTERM ignored by whoever started the bench stays ignored.
    """

    def stop(signum: int, frame) -> None:
        raise Stopped(signal.Signals(signum).name)

    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, stop)


def interrupted(stop: KeyboardInterrupt, resume: str) -> int:
    """End a stopped run: no process it started outlives it, and the user knows what is kept.

    The ``finally`` blocks have stopped the current repetition's server and generators; this
    sweep catches one started in the instant the signal came, before anything held it.
    """
    import psutil

    left = psutil.Process().children(recursive=True)
    for child in left:
        with contextlib.suppress(psutil.Error):
            child.terminate()
    for child in psutil.wait_procs(left, timeout=5)[1]:
        with contextlib.suppress(psutil.Error):
            child.kill()
    print(f"\ninterrupted: {resume}", file=sys.stderr)
    return 128 + (signal.SIGTERM if isinstance(stop, Stopped) else signal.SIGINT)


def parser() -> argparse.ArgumentParser:
    """The commands and their options."""
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run_options(commands.add_parser("run", help="measure a run (quick by default) and store it"))
    run_options(
        commands.add_parser(
            "all",
            help="run (its options), then the cost anatomy at the fixed load and in the closed "
            "loop and the instructions per request for the same loops (where the run includes "
            "echo), then report: nox -s bench",
        )
    )

    anatomy = commands.add_parser(
        "anatomy", help="count syscalls and server CPU per echo request (untimed)"
    )
    anatomy.add_argument("--loop", action="append", metavar="NAME", help="only this loop")
    anatomy.add_argument("--counter", choices=("perf", "strace"), help="default: the first usable")
    anatomy.add_argument(
        "--closed-loop",
        action="store_true",
        help="in the closed loop (each connection sends its next request as soon as its echo "
        "is back: the server's maximum throughput) instead of at the fixed offered load; "
        "stored apart, in anatomy-closed.json",
    )
    anatomy.add_argument("--results", type=Path, default=RESULTS)

    counts = commands.add_parser(
        "instructions",
        help="count instructions per echo request for every echo row under callgrind, "
        "closed loop and fixed load (no other process's work in the count; about half a "
        "minute a row)",
    )
    counts.add_argument("--loop", action="append", metavar="NAME", help="only this loop")
    counts.add_argument("--regime", action="append", choices=("closed", "paced"))
    counts.add_argument("--results", type=Path, default=RESULTS)

    again = commands.add_parser(
        "reproduce",
        help="measure the headline point's key rows again in a new session and say whether "
        "each ratio lands inside the committed interval (appends reproductions.json)",
    )
    again.add_argument("--results", type=Path, default=RESULTS)
    again.add_argument(
        "--spread-only",
        action="store_true",
        help="measure nothing: store on the committed headline points how far the stored "
        "reproductions moved (what a re-measured headline point's intervals then hold)",
    )

    report = commands.add_parser("report", help="render reports/ from stored results only")
    report.add_argument("--results", type=Path, default=RESULTS)
    return parser


def run_options(run: argparse.ArgumentParser) -> None:
    """The options of a run (``run`` and ``all``)."""
    size = run.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="full", action="store_false", help="the quick run's points")
    size.add_argument("--full", dest="full", action="store_true", help="the full run's points")
    run.set_defaults(full=False)
    run.add_argument("--loop", action="append", metavar="NAME", help="only this loop (repeat)")
    run.add_argument(
        "--workload", action="append", choices=registry.names(), help="only this workload (repeat)"
    )
    run.add_argument(
        "--where",
        action="append",
        metavar="PARAM=VALUE",
        help="only points with this parameter value, e.g. connections=10000 (repeat: all hold; "
        "VALUE None: the parameter absent, as tls=None for echo's plain points)",
    )
    run.add_argument("--redo", action="store_true", help="measure again what is stored")
    run.add_argument(
        "--python",
        action="append",
        metavar="X.Y|PATH",
        help="measure on this interpreter (repeat: rows interleaved across them; default: the "
        "one running the bench); another version runs from .venvs/bench-X.Y/, made once",
    )
    run.add_argument(
        "--across",
        action="store_true",
        help="only the points the report's Interpreters section reads "
        "(bench/interpreter_figures.py)",
    )
    run.add_argument("--results", type=Path, default=RESULTS)


def main(argv: list[str] | None = None) -> int:
    command_line = parser()
    args = command_line.parse_args(argv)
    stop_on_sigterm()
    if args.command == "run":
        return run(command_line, args)
    if args.command == "anatomy":
        return anatomy(args.loop, args.results, args.counter, args.closed_loop)
    if args.command == "all":
        return everything(command_line, args)
    if args.command == "reproduce":
        from bench.reproduce import run as reproduce
        from bench.reproduce import store_spread

        return store_spread(args.results) if args.spread_only else reproduce(args.results)
    if args.command == "instructions":
        from bench.measure.instructions import run as count_instructions

        return count_instructions(args.loop, args.results, args.regime)
    return report(args.results)


def everything(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`python -m bench all`: the run, then (where it includes echo) the cost anatomy at both
    points for the same loops (a few seconds a row each) and their instructions per request under
    callgrind, then the report. A failed anatomy row
    is stored as failed and the report still renders; a stopped run stops here."""
    status = run(parser, args)
    if status > 1:  # interrupted: what finished is stored, nothing more runs
        return status
    if not args.workload or "echo" in args.workload:
        for closed in (False, True):
            found = anatomy(args.loop, args.results, None, closed)
            if found > 1:
                return found
        from bench.measure.instructions import run as count_instructions

        count_instructions(args.loop, args.results)  # a row that fails is stored as failed
    return max(status, report(args.results))


def anatomy(loop_names: list[str] | None, results: Path, counter: str | None, closed: bool) -> int:
    """`python -m bench anatomy`: count, store, say what is kept if stopped."""
    from bench.measure.anatomy import run as run_anatomy

    try:
        return run_anatomy(loop_names, results, counter, closed=closed)
    except KeyboardInterrupt as stop:
        return interrupted(stop, "the anatomy stores its rows at the end: none of this run is kept")


def report(results: Path) -> int:
    """`python -m bench report`: render every page from stored results, and say how fast."""
    from bench.render import render_all
    from bench.render.reading import render_reading

    started = time.perf_counter()
    written = render_all(results) + render_reading(results)
    for path in written:
        print(f"wrote {path}")
    print(f"report: {len(written)} files in {time.perf_counter() - started:.1f} s")
    return 0


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`python -m bench run`: check the selection, then measure it."""
    from bench.runner import run as run_bench

    if args.loop:
        known = known_row_names()
        unknown = sorted(set(args.loop) - set(known))
        if unknown:
            parser.error(f"unknown loop {', '.join(unknown)}; known: {', '.join(known)}")
    where = {}
    for condition in args.where or ():
        name, equals, value = condition.partition("=")
        if not equals or not name or not value:
            parser.error(f"--where {condition!r}: expected PARAM=VALUE, e.g. connections=100")
        where[name] = value
    try:
        return run_bench(
            args.workload or registry.names(),
            args.full,
            args.loop,
            args.redo,
            args.results,
            where=where,
            pythons=args.python,
            only_across=args.across,
        )
    except KeyboardInterrupt as stop:
        return interrupted(stop, "finished points are stored; run again to resume")


if __name__ == "__main__":
    sys.exit(main())
