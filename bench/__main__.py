"""`python -m bench run` measures and stores; `python -m bench report` renders from storage;
`python -m bench all` is what ``nox -s bench`` runs: the run, the side studies, then the report.

Each command loads its own room when it runs: ``report`` the pages alone, ``run`` the runner
and the running side of each study it measures, by the name the study's declaration gives.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import signal
import sys
import time
from pathlib import Path

import loops
from bench import interpreter_figures, registry
from bench.plan import anchor_names
from bench.store import RESULTS
from bench.study import SideStudy

# The side studies `all` runs after the run, where it includes echo: the anatomy at the fixed
# load and in the closed loop, then the instruction counts (a failed row is stored as failed).
AFTER_THE_RUN = (("anatomy", False), ("anatomy", True), ("instructions", False))
# The commands of earlier versions, each the same as `run --study NAME` (loops' READMEs and
# the committed pages still name them).
ALIASES = {"anatomy": "anatomy", "instructions": "instructions", "reproduce": "reproductions"}


def known_row_names() -> list[str]:
    """Loop names (from discovery) and anchor names (the echo anchors) --loop accepts."""
    return sorted({*loops.discover(), *anchor_names()})


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
    run_options(commands.add_parser("run", help="measure studies (quick by default) and store"))
    run_options(
        commands.add_parser(
            "all",
            help="run (its options), then, where the run includes echo, the cost anatomy at "
            "the fixed load and in the closed loop and the instructions per request for the "
            "same loops, then report: nox -s bench",
        )
    )
    for alias, study in ALIASES.items():
        run_options(commands.add_parser(alias, help=f"the same as run --study {study}"))
    report = commands.add_parser("report", help="render reports/ from stored results only")
    report.add_argument("--results", type=Path, default=RESULTS)
    return parser


def run_options(run: argparse.ArgumentParser) -> None:
    """The options of a run (``run``, ``all`` and the aliases), a side study's among them."""
    size = run.add_mutually_exclusive_group()
    size.add_argument("--quick", dest="full", action="store_false", help="the quick run's points")
    size.add_argument("--full", dest="full", action="store_true", help="the full run's points")
    run.set_defaults(full=False)
    run.add_argument("--loop", action="append", metavar="NAME", help="only this loop (repeat)")
    every = [*registry.names(), *(side.name for side in registry.SIDES)]
    run.add_argument(
        "--study",
        "--workload",  # its name before studies were folders
        action="append",
        choices=every,
        help="only this study (repeat); default: every study measured point by point, "
        f"{', '.join(registry.names())}",
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
    for side in registry.SIDES:
        for option in side.options:
            run.add_argument(*option.flags, **dict(option.settings))


def main(argv: list[str] | None = None) -> int:
    command_line = parser()
    args = command_line.parse_args(argv)
    stop_on_sigterm()
    if args.command in ALIASES:
        args.study = [ALIASES[args.command]]
    if args.command == "report":
        return report(args.results)
    if args.command == "all":
        return everything(command_line, args)
    return run(command_line, args)


def everything(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`python -m bench all`: the run, then (where it includes echo) the side studies of
    AFTER_THE_RUN for the same loops (the anatomy a few seconds a row at each point, then the
    instructions per request under callgrind), then the report. A failed side row is stored as
    failed and the report still renders; a stopped run stops here."""
    started = time.perf_counter()
    status = run(parser, args)
    if status > 1:  # interrupted: what finished is stored, nothing more runs
        return status
    ran = time.perf_counter() - started
    if not args.study or "echo" in args.study:
        for name, closed in AFTER_THE_RUN:
            found = side_study(registry.get(name), with_options(args, closed_loop=closed))
            if found > 1 and name == "anatomy":
                return found
    status = max(status, report(args.results))
    took = time.perf_counter() - started
    # The whole command's length, the side studies' and the report's included, which the run's
    # own estimate does not cover.
    print(f"bench all: {took / 60:.0f} min in all (the run {ran / 60:.0f} min, the rest after it "
          f"{(took - ran) / 60:.0f} min)")  # fmt: skip
    return status


def with_options(args: argparse.Namespace, **options) -> argparse.Namespace:
    """`args` with these options set (a side study run by `all` at its own settings)."""
    return argparse.Namespace(**{**vars(args), **options})


def side_study(study: SideStudy, args: argparse.Namespace) -> int:
    """`python -m bench run --study NAME` for a side study: its running side, loaded by the
    name its declaration gives, measures and stores; stopped, it says what is kept."""
    try:
        return importlib.import_module(study.measuring).main(args)
    except KeyboardInterrupt as stop:
        return interrupted(stop, study.kept_if_stopped)


def report(results: Path) -> int:
    """`python -m bench report`: render every page from stored results, and say how fast."""
    pages = importlib.import_module("bench.pages.report")  # the rendering room alone

    started = time.perf_counter()
    written = pages.render_every_page(results)
    for path in written:
        print(f"wrote {path}")
    print(f"report: {len(written)} files in {time.perf_counter() - started:.1f} s")
    return 0


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`python -m bench run`: check the selection, then measure each study it names (every
    study measured point by point, by default)."""
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
    chosen = args.study or registry.names()
    sides = [registry.get(name) for name in chosen if name not in registry.names()]
    measured = [name for name in chosen if name in registry.names()]
    status = 0
    if measured:
        runner = importlib.import_module("bench.runner")  # the running room, for a run alone
        try:
            status = runner.run(
                measured,
                args.full,
                args.loop,
                args.redo,
                args.results,
                where=where,
                pythons=args.python,
                only=interpreter_figures.read_at if args.across else None,
            )
        except KeyboardInterrupt as stop:
            return interrupted(stop, "finished points are stored; run again to resume")
    for side in sides:
        status = max(status, side_study(side, args))
    return status


if __name__ == "__main__":
    sys.exit(main())
