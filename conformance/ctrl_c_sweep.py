"""Ctrl-C at every moment a loop can take it: what each single unlucky signal does to it.

The suite's Ctrl-C property sends SIGINT at a few moments of a busy run, so it finds a fault
only when a signal happens to land in it. This sweep leaves nothing to chance: it runs a small
sleep workload to list every moment where CPython could run a signal handler in Python
code outside the workload's own (the loop, its adapter, the libraries and the standard library
under it: :class:`Moments`), then, for each, runs the workload again in a forked child whose
trace function raises SIGINT there, the first time the run passes it, and reports how the run
ended. The outcomes, the command and what they showed: ``reports/findings-ctrl-c.md``.
"""

from __future__ import annotations

import argparse
import dis
import functools
import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import loops
from workloads.common import style_module
from workloads.sleep.common import Plan, Tally

# The outcomes, best first. A run that ends with KeyboardInterrupt is what Ctrl-C promises;
# the child then runs the workload once more, since a REPL, a notebook or a test runner goes on.
CLEAN = "ends with KeyboardInterrupt, runs again"
STUCK = "ends with KeyboardInterrupt, cannot run again"
OTHER = "ends with another error"
HANGS = "hangs"
LOST = "the signal is lost"
OUTCOMES = (CLEAN, STUCK, OTHER, HANGS, LOST)
NOT_REACHED = "not reached"  # the run did not pass it this time (a race decided otherwise)

PATIENCE = 5.0  # seconds a child may take; the workload runs in milliseconds
ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ROOT / "workloads"


def _plan() -> Plan:
    # Six sleepers of up to 3 ms, two of them cancelled: spawn, sleep, cancel, join, timers.
    return Plan.make(6, 0.003, 0.3, seed=1)


class Moments:
    """A trace function that calls `at(frame, key)` wherever CPython may run a signal handler.

    CPython runs a Python signal handler only where its interpreter checks for pending events
    (``CHECK_EVAL_BREAKER`` in 3.11-3.13's ``ceval.c``/``bytecodes.c``): as a function starts
    or a generator resumes after a plain ``yield`` (``RESUME`` with an argument below 2), at a
    loop's back edge (``JUMP_BACKWARD``), and as a call to C code returns (``CALL``). A call to
    a Python function returns without a check, and so is left out; a Python function reached
    through C (``Context.run``, a class's ``__init__``) counts as one too, so the moments found
    are a subset of the real ones: every fault they show can happen. The key of a moment is
    (file, first line of its code, instruction offset, line)."""

    def __init__(self, at) -> None:
        self.at = at
        self.pending: dict[Any, int] = {}  # frame -> offset after its CALL, until it returns

    def start(self, frame, event, arg):
        if frame.f_back in self.pending:  # the pending call entered Python: no check after it
            del self.pending[frame.f_back]
        if not _traced(frame):
            return None
        code, offset = frame.f_code, frame.f_lasti
        table = _table(code)
        name, argument, _ = table.get(offset, ("", 0, 0))
        if name == "RESUME" and argument < 2:  # 2 and 3: resumed by yield from or await
            self.at(frame, _key(code, offset, table))
        frame.f_trace_opcodes = True
        return self.step

    def step(self, frame, event, arg):
        if event != "opcode":
            if event == "return":
                self.pending.pop(frame, None)
            return self.step
        code, offset = frame.f_code, frame.f_lasti
        table = _table(code)
        name, _, after = table[offset]
        if self.pending.pop(frame, None) == offset or name == "JUMP_BACKWARD":
            self.at(frame, _key(code, offset, table))
        if name in CALLS:
            self.pending[frame] = after
        return self.step


CALLS = {"CALL", "CALL_KW", "CALL_FUNCTION_EX"}  # CALL_INTRINSIC_* run no check


@functools.cache
def _table(code) -> dict[int, tuple[str, int, int]]:
    """Each instruction's (name, argument, offset of the next one), by offset."""
    found = list(dis.get_instructions(code))
    ends = [i.offset for i in found[1:]] + [-1]
    return {i.offset: (i.opname, i.arg or 0, end) for i, end in zip(found, ends, strict=True)}


def _key(code, offset: int, table) -> tuple[str, int, int, int]:
    line = next((n for a, b, n in code.co_lines() if a <= offset < b and n), code.co_firstlineno)
    return (code.co_filename, code.co_firstlineno, offset, line)


class Sweep:
    """One variant and style: the workload to play, and the moments it passes."""

    def __init__(self, variant: str, style: str) -> None:
        self.api = loops.get(variant).api(style)
        self.running = style_module("workloads.sleep", style)

    def play(self) -> None:
        plan = _plan()
        self.running.run(self.api, plan, Tally(len(plan)), [])

    def moments(self, passes: int = 1, where=None) -> list[tuple[tuple, int]]:
        """Every moment the play passes outside the workload's code, with each of its first
        `passes` passes (1: the first), in the order they came; only those where
        `where(frame, key)` holds, if given."""
        seen: Counter = Counter()
        found: list[tuple[tuple, int]] = []

        def passed(frame, key) -> None:
            if where is not None and not where(frame, key):
                return
            seen[key] += 1
            if seen[key] <= passes:
                found.append((key, seen[key]))

        # Twice, the moments of the second: CPython 3.13 reports fewer opcode events the first
        # time a code runs traced (a loop's back edge among them), and every child runs after.
        sys.settrace(Moments(lambda frame, key: None).start)
        try:
            self.play()
        finally:
            sys.settrace(None)
        sys.settrace(Moments(passed).start)
        try:
            self.play()
        finally:
            sys.settrace(None)
        return found

    def interrupted_at(self, moment: tuple, passing: int = 1) -> tuple[str, str]:
        """The outcome of a run whose SIGINT comes as it passes moment the `passing`-th time."""
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: play, report, and leave without running anything else
            os.close(reader)
            # A sweep started as a background job inherits SIGINT ignored; the signal raised
            # below must reach the loop as a user's Ctrl-C does.
            signal.signal(signal.SIGINT, signal.default_int_handler)
            # What a dying loop prints (ignored errors in finalizers) is not the outcome.
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            try:
                os.write(writer, json.dumps(self._child(moment, passing)).encode())
            finally:
                os._exit(0)
        os.close(writer)
        deadline = time.monotonic() + PATIENCE
        while not os.waitpid(pid, os.WNOHANG)[0]:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os.close(reader)
                return HANGS, f"still running {PATIENCE:g} s after the signal"
            time.sleep(0.002)
        with os.fdopen(reader, "rb") as pipe:
            report = pipe.read()
        return tuple(json.loads(report)) if report else (OTHER, "the child died without a word")

    def _child(self, moment: tuple, passing: int) -> tuple[str, str]:
        fired, passed = False, 0

        def at(frame, key) -> None:
            nonlocal fired, passed
            if key == moment and not fired and (passed := passed + 1) == passing:
                fired = True
                sys.settrace(None)
                frame.f_trace = None
                signal.raise_signal(signal.SIGINT)  # its handler raises here

        sys.settrace(Moments(at).start)
        try:
            self.play()
        except KeyboardInterrupt:
            pass
        except BaseException as error:
            return (OTHER if fired else NOT_REACHED), _said(error)
        else:
            return (LOST if fired else NOT_REACHED), ""
        finally:
            sys.settrace(None)
        try:
            self.play()
        except BaseException as error:
            return STUCK, _said(error)
        return CLEAN, ""


def back_edge_in(folder: Path):
    """A `where` for Sweep.moments: a loop's back edge (``JUMP_BACKWARD``) in code under folder."""
    inside = str(folder) + os.sep

    def where(frame, key) -> bool:
        code = frame.f_code
        return key[0].startswith(inside) and _table(code)[key[2]][0] == "JUMP_BACKWARD"

    return where


def _traced(frame) -> bool:
    name = frame.f_code.co_filename
    return not name.startswith(("<", str(WORKLOADS))) and name != __file__


def _said(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:160]


def sweep(variant: str, style: str, passes: int = 1, progress=None) -> dict[str, Any]:
    """Every moment's outcome for one variant and style, as a JSON-ready record."""
    case = Sweep(variant, style)
    moments = case.moments(passes)
    found = []
    for number, (moment, passing) in enumerate(moments, 1):
        outcome, detail = case.interrupted_at(moment, passing)
        where = {"file": _shown(moment[0]), "line": moment[3], "offset": moment[2]}
        where["pass"] = passing
        found.append(where | {"outcome": outcome, "detail": detail})
        if progress:
            progress(number, len(moments))
    counts = Counter(entry["outcome"] for entry in found)
    return {
        "loop": variant,
        "style": style,
        "python": ".".join(map(str, sys.version_info[:3])),
        "passes": passes,
        "moments": len(moments),
        "counts": {outcome: counts[outcome] for outcome in (*OUTCOMES, NOT_REACHED)},
        "faults": [entry for entry in found if entry["outcome"] not in (CLEAN, NOT_REACHED)],
    }


def _shown(path: str) -> str:
    """A path as a reader finds it: from the checkout, or from the package directory."""
    here = Path(path)
    for root in (ROOT, *map(Path, sys.path[1:])):
        if root.is_dir() and here.is_relative_to(root):
            return str(here.relative_to(root))
    return path


def table(records: list[dict[str, Any]]) -> str:
    """The counts, a row per loop and style, as a Markdown table."""
    head = ["loop (style)", "moments", "clean", "cannot run again", "another error", "hangs"]
    head += ["lost", "not reached"]
    out = ["| " + " | ".join(head) + " |", "|---|" + "--:|" * (len(head) - 1)]
    for r in records:
        counts = [r["counts"][outcome] for outcome in (*OUTCOMES, NOT_REACHED)]
        out.append(
            f"| {r['loop']} ({r['style']}) | {r['moments']} | "
            + " | ".join(map(str, counts))
            + " |"
        )
    return "\n".join(out)


def faults(records: list[dict[str, Any]]) -> str:
    """Where each loop went wrong: a line per file and ending, its lines listed (passes and
    styles merged), with what the first of them said."""
    places: dict[tuple[str, str, str], dict] = {}
    for record in records:
        for fault in record["faults"]:
            place = places.setdefault(
                (record["loop"], fault["file"], fault["outcome"]),
                {"lines": set(), "said": fault["detail"].split("\n")[0][:80]},
            )
            place["lines"].add(fault["line"])
    out = ["| loop | file: lines | ending | what it said |", "|---|---|---|---|"]
    for (loop, file, outcome), place in places.items():
        lines = ", ".join(map(str, sorted(place["lines"])))
        said = place["said"].replace("|", "\\|")
        out.append(f"| {loop} | `{file}`: {lines} | {outcome} | {said} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m conformance.ctrl_c_sweep", description=__doc__)
    parser.add_argument("--loop", action="append", help="a variant (repeat; default: every one)")
    parser.add_argument(
        "--passes",
        type=int,
        default=1,
        help="interrupt each moment at each of its first N passes, a run each (default 1)",
    )
    parser.add_argument("--json", metavar="FILE", help="write the records, one JSON per line")
    parser.add_argument(
        "--stored",
        metavar="FILE",
        help="print the tables of records a --json run wrote, and run nothing",
    )
    args = parser.parse_args(argv)
    if args.stored:
        records = [json.loads(line) for line in Path(args.stored).read_text().splitlines()]
        print(table(records) + "\n\n" + faults(records))
        return 0
    known = loops.available()
    for name in args.loop or ():
        if name not in loops.discover():
            parser.error(f"unknown loop {name!r}; the loops: {', '.join(loops.discover())}")
    names = args.loop or list(known)
    records = []
    for name in names:
        if name not in known:
            print(f"{name}: unavailable here", file=sys.stderr)
            continue
        for style in known[name].styles:
            shown = f"{name} ({style})"

            def progress(done: int, total: int, shown: str = shown) -> None:
                if sys.stderr.isatty() or done == total:
                    end = "\n" if done == total else ""
                    print(
                        f"\r{shown}: moment {done} of {total}", end=end, file=sys.stderr, flush=True
                    )

            records.append(sweep(name, style, args.passes, progress))
    if args.json:
        Path(args.json).write_text("".join(json.dumps(record) + "\n" for record in records))
    print(table(records) + "\n\n" + faults(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
