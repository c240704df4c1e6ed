"""The timelines' command line.

One run, by hand::

    python -m timeline --loop traps --style coroutines --scenario workers --json t.json --out t.png

Every variant, style and scenario (each run in a fresh process), then the report::

    python -m timeline --all            # records under reports/timelines/
    python -m timeline --report         # reports/timelines.md and its charts, from the records

``--all`` takes ``--loop``/``--style``/``--scenario`` to narrow what it re-records. A run that
fails (a variant scaffolded but not written yet, a loop that hangs) is noted in the store's
``failures.json`` and listed by the report; the others are still recorded.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import traceback
from pathlib import Path

import loops
from timeline import readings, render
from timeline.scenarios import SCENARIOS
from timeline.store import REPORT, STORE, load_all, load_failures, save, save_failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m timeline", description=__doc__.split("\n")[0])
    parser.add_argument("--loop", help="the variant to trace (discovered: any folder in loops/)")
    parser.add_argument("--style", help=f"one of {', '.join(loops.STYLES)}")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help="the program to run")
    parser.add_argument("--json", type=Path, help="write the record (JSON) here")
    parser.add_argument("--out", type=Path, help="render the record's chart (PNG) here")
    parser.add_argument("--all", action="store_true", help="record every variant/style/scenario")
    parser.add_argument("--report", action="store_true", help="render the report from records")
    parser.add_argument("--store", type=Path, default=STORE, help=f"records' folder ({STORE})")
    parser.add_argument("--markdown", type=Path, default=REPORT, help=f"the report ({REPORT})")
    args = parser.parse_args(argv)
    try:
        if args.all:
            return run_all(args.store, args.loop, args.style, args.scenario)
        if args.report:
            return write_report(args.store, args.markdown)
        if not (args.loop and args.style and args.scenario):
            parser.error("one run needs --loop, --style and --scenario (or use --all, --report)")
        loops.get(args.loop).api(args.style)  # bad names: a clear error, before any run
    except (loops.VariantLookupError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from timeline import observe  # the observing side: only a run loads the tracer

    try:
        result = observe.run(args.loop, args.style, args.scenario)
    except Exception as error:  # the loop's failure: its traceback, then one line that says so
        traceback.print_exc()
        print(f"error: the run failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    if args.json:
        save(result, args.json)
    if args.out:
        render.chart(result, args.out)
    if not (args.json or args.out):
        print(" ".join(readings.order(result)))
    return 0


def run_all(store: Path, loop: str | None, style: str | None, scenario: str | None) -> int:
    """Record every (variant, style, scenario), narrowed by the arguments, each in a fresh
    process; failures go to failures.json. Exit 0 when all that could be tried was tried."""
    variants = [loops.get(loop)] if loop else list(loops.discover().values())
    store.mkdir(parents=True, exist_ok=True)
    failures = load_failures(store)
    for variant in variants:
        failures.pop(variant.name, None)
        if not variant.available:
            # Records made on an interpreter where it runs stay (each names its Python: the
            # eager asyncio is recorded on 3.12+); with none, the report says why it is absent.
            if not any(store.glob(f"*-{variant.name}-*.json")):
                failures[variant.name] = variant.summary
            continue
        for spoken in variant.styles:
            if style and spoken != style:
                continue
            for program in SCENARIOS:
                if scenario and program != scenario:
                    continue
                name = f"{program}-{variant.name}-{spoken}"
                path = store / f"{name}.json"
                path.unlink(missing_ok=True)
                failures.pop(name, None)
                command = [
                    sys.executable,
                    "-m",
                    "timeline",
                    "--loop",
                    variant.name,
                    "--style",
                    spoken,
                    "--scenario",
                    program,
                    "--json",
                    str(path),
                ]
                print(" ".join(command[1:]), flush=True)
                try:
                    done = subprocess.run(command, timeout=120, capture_output=True, text=True)
                except subprocess.TimeoutExpired:
                    failures[name] = "did not finish within 120 s (killed)"
                    continue
                if done.returncode:
                    last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
                    failures[name] = f"exit {done.returncode}: {last}"
    save_failures(store, failures)
    for name, reason in failures.items():
        print(f"not recorded: {name}: {reason}", file=sys.stderr)
    return 0


def write_report(store: Path, out: Path) -> int:
    found = load_all(store)
    if not found:
        print(f"error: no records in {store}/ (run python -m timeline --all)", file=sys.stderr)
        return 2
    failures = load_failures(store)
    for old in store.glob("*.png"):
        old.unlink()
    render.report(found, charts=store, out=out, failures=failures)
    print(f"wrote {out} from {len(found)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
