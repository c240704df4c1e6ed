"""The timelines' command line.

One run, by hand::

    python -m timeline --loop traps --style coroutines --scenario workers --json t.json --out t.png

Every variant, style and scenario (each run in a fresh process), then the report::

    python -m timeline --all            # records under reports/timelines/
    python -m timeline --report         # reports/timelines.md and its charts, from the records
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import loops
from timeline import record, render
from timeline.scenarios import SCENARIOS

STORE = Path("reports/timelines")
REPORT = Path("reports/timelines.md")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m timeline", description=__doc__.split("\n")[0])
    parser.add_argument("--loop", help="the variant to trace (discovered: any folder in loops/)")
    parser.add_argument("--style", help="callbacks, generators or coroutines")
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), help="the program to run")
    parser.add_argument("--json", type=Path, help="write the record (JSON) here")
    parser.add_argument("--out", type=Path, help="render the record's chart (PNG) here")
    parser.add_argument("--all", action="store_true", help="record every variant/style/scenario")
    parser.add_argument("--report", action="store_true", help="render the report from records")
    parser.add_argument("--store", type=Path, default=STORE, help=f"records' folder ({STORE})")
    args = parser.parse_args(argv)
    try:
        if args.all:
            return run_all(args.store)
        if args.report:
            return write_report(args.store)
        if not (args.loop and args.style and args.scenario):
            parser.error("one run needs --loop, --style and --scenario (or use --all, --report)")
        result = record.run(args.loop, args.style, args.scenario)
    except (loops.UnknownVariantError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        record.save(result, args.json)
    if args.out:
        render.chart(result, args.out)
    if not (args.json or args.out):
        print(" ".join(record.order(result)))
    return 0


def run_all(store: Path) -> int:
    """Record every (variant, style, scenario), each in a fresh process; stale records go."""
    store.mkdir(parents=True, exist_ok=True)
    for old in store.glob("*.json"):
        old.unlink()
    failed = []
    for variant in loops.discover().values():
        for style in variant.styles:
            for scenario in SCENARIOS:
                path = store / f"{scenario}-{variant.name}-{style}.json"
                command = [
                    sys.executable,
                    "-m",
                    "timeline",
                    "--loop",
                    variant.name,
                    "--style",
                    style,
                    "--scenario",
                    scenario,
                    "--json",
                    str(path),
                ]
                print(" ".join(command[1:]), flush=True)
                try:
                    done = subprocess.run(command, timeout=120)
                except subprocess.TimeoutExpired:
                    failed.append(f"{scenario} on {variant.name} ({style}): hung, killed")
                    continue
                if done.returncode:
                    failed.append(f"{scenario} on {variant.name} ({style}): exit {done.returncode}")
    for line in failed:
        print(f"failed: {line}", file=sys.stderr)
    return 1 if failed else 0


def write_report(store: Path) -> int:
    paths = sorted(store.glob("*.json"))
    if not paths:
        print(f"error: no records in {store}/ (run python -m timeline --all)", file=sys.stderr)
        return 2
    for old in store.glob("*.png"):
        old.unlink()
    render.report([record.load(p) for p in paths], charts=store, out=REPORT)
    print(f"wrote {REPORT} from {len(paths)} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
