"""Instructions per echo request, by part of the server: rendered from the stored profile alone.

The counting (callgrind on the echo server over the load window, the parts told apart through
Python 3.12's ``-X perf`` trampolines) is :mod:`bench.studies.instructions.profile`, which stores
``reports/results/profile.json``; this module reads that file and writes a markdown section for
the cost anatomy: one column per loop, one line per part, the totals with and without
``-X perf``, then the completions loop's levers in the order they were tried. An instruction
count leaves Linux's work out, so the section ends with what the bench measured of the same two
loops, Linux included: their server CPU per echo request at the echo section's headline point
(1 KiB x 100 connections), closed loop and at the fixed offered load, as a ratio with its
interval where both rows come from one session (:func:`measured`).

``python -m bench.studies.instructions.render [RESULTS_DIR]`` prints the section.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from bench import interpreter_figures
from bench.headline import HEADLINE_POINT, HEADLINE_RATE
from bench.render import intervals
from bench.render.page import ELSEWHERE, Page
from bench.studies.anatomy.render import load_anatomy
from bench.studies.instructions import PROFILE_FILE
from bench.study import Rendering, SideStudy
from bench.summary import valid_values

COMMAND = "python -m bench.studies.instructions.profile"
TITLE = "### Instructions per echo request, by part"  # under the cost anatomy
# The parts, in the order bench.studies.instructions.profile attributes them, with what each one is.
PARTS = {
    "ring": "ring (uring.py: SQE writes, the enter, reaping CQEs)",
    "ctypes": "ctypes (foreign calls and their marshalling)",
    "poller (C)": "poller (epoll.poll's C code)",
    "socket methods (C)": "socket methods (C: sock.recv, sock.send, fileno...)",
    "the turn": "the turn (kernel.py: the run loop and its helpers)",
    "task switch": "task switch (coroutine resumption, the traps)",
    "socket calls": "socket calls (api.py, buffers.py: recv, sendall, completers)",
    "protocol": "protocol (workloads/echo)",
    "other": "other",
}
LOOPS = ("traps", "completions")  # the columns, when stored: the twins compared
# The points of the closing sentence (the Interpreters section's echo figures), with their words.
HEADLINE_FIGURES = (
    ("echo-closed", "at the closed loop"),
    ("echo-paced", f"at the fixed load of {HEADLINE_RATE:,} requests/s"),
)


def load(results: Path) -> dict | None:
    """The stored profile, or None where it was never measured."""
    path = results / PROFILE_FILE
    return json.loads(path.read_text()) if path.exists() else None


def section(data: dict | None, echo: Any = None, closed: dict | None = None) -> list[str]:
    """The markdown lines of the section (a heading of level 3, for the cost anatomy); `echo`,
    the echo workload's result store of the same report, and `closed`, the stored closed-loop
    anatomy (bench.studies.anatomy.measure), give its closing sentences."""
    lines = [TITLE, ""]
    rows = (data or {}).get("rows", {})
    columns = [loop for loop in LOOPS if loop in rows]
    if not columns:
        return [*lines, f"Not measured in this tree yet: `{COMMAND}`.", ""]
    first = rows[columns[0]]["split"]
    lines += [
        f"Counted by `{COMMAND}`: user-space instructions (callgrind's `Ir`) the echo server "
        f"executes per request, {first['connections']} connections × "
        f"{HEADLINE_POINT['size'] // 1024} KiB, "
        + (
            "over the load window alone (every connection open and primed). "
            if first.get("method") == "window"
            else "the difference of two whole loads over the difference of their request "
            "counts (the way counts were taken before the window was counted alone, which "
            f"holds the set-up's variation too: `{COMMAND}` counts it again). "
        )
        + "Linux's own work inside the syscalls is not counted. Parts are told apart on "
        f"{_python(first['python'])} with `-X perf` (which costs instructions itself); the plain "
        "interpreter's total is the first line.",
        "",
    ]
    lines += _table([rows[loop] for loop in columns], columns, "closed loop")
    paced = {loop: key for key in rows for loop in columns if key.startswith(f"{loop} (paced")}
    if len(paced) == len(columns):
        rate = rows[paced[columns[0]]]["split"].get("rate")
        title = f"at a fixed offered load of {rate} requests/s (`--rate {rate}`)"
        lines += ["", *_table([rows[paced[loop]] for loop in columns], columns, title)]
    levers = (data or {}).get("levers", [])
    if levers:
        lines += [
            "",
            "The completions loop's levers, in the order they were tried (each on top of the "
            "ones before it; `-X perf` counts):",
            "",
            "| lever | commit | instructions per request | change |",
            "|---|---|--:|--:|",
        ]
        before = None
        for lever in levers:
            value = lever["per_request"]
            change = "" if before is None else f"{value - before:+,.0f}"
            lines.append(f"| {lever['label']} | {lever['commit']} | {value:,.0f} | {change} |")
            before = value
    said = [text for text in (measured(echo, columns), in_the_anatomy(closed, columns)) if text]
    return [
        *lines,
        "",
        counted_in([rows[key] for key in rows]),
        *(line for text in said for line in ("", text)),
        "",
    ]


def counted_in(entries: list[dict]) -> str:
    """When and on what code the parts were counted ("-dirty": with uncommitted changes).
    The profile records no machine: callgrind counts instructions, which the machine's speed
    and load do not move (the interpreter named above does)."""
    dates = sorted({e["date"][:10] for e in entries if e.get("date")})
    commits = sorted({e["commit"] for e in entries if e.get("commit")})
    return (
        f"*Counted in:* {' to '.join(dict.fromkeys([dates[0], dates[-1]]))}, commit"
        f"{'s' if len(commits) > 1 else ''} {', '.join(f'`{c}`' for c in commits)}; machine "
        "not recorded (instruction counts do not move with the machine's speed or load)."
        if dates and commits
        else "*Counted in:* date and commit not recorded."
    )


def measured(echo: Any, columns: list[str]) -> str | None:
    """One sentence: the twins' server CPU per echo request as the bench measured it at the
    points the Interpreters section reads (bench.interpreter_figures: the headline size and
    connections, closed loop then at the declared fixed load), over each row's valid
    repetitions. A ratio is given only for rows of one session (the machine moves between
    sessions); None where the echo store has neither point. `echo` is a
    bench.store.ResultStore."""
    if echo is None or len(columns) != 2:
        return None
    phrases = []
    figures = {figure.name: figure for figure in interpreter_figures.FIGURES}
    for name, regime in HEADLINE_FIGURES:
        figure = figures.get(name)
        if figure is None:  # the Interpreters section reads no such figure: nothing to say
            continue
        point = next(
            (p for p in echo.data.get("points", {}).values() if figure.matches(p["params"])), None
        )
        entries = [(point or {}).get("rows", {}).get(f"{loop}/coroutines") for loop in columns]
        if not all(entries):
            continue
        values = [valid_values(entry["reps"], figure.metric) for entry in entries]
        if not all(values):
            continue
        if entries[0].get("session") != entries[1].get("session"):
            phrases.append(f"{regime}, {_medians(columns, values)} (two sessions: no ratio)")
            continue
        phrases.append(f"{regime}, {_compared(columns, values)}")
    if not phrases:
        return None
    return (
        "Measured by the bench, Linux's work included (the echo section's rows, server CPU per "
        f"request, {HEADLINE_POINT['size']:,} B × {HEADLINE_POINT['connections']} connections, "
        f"median of the repetitions, with the ratio's {intervals.CONFIDENCE:.0%} interval within "
        "the session): " + "; ".join(phrases) + "."
    )


def in_the_anatomy(closed: dict | None, columns: list[str]) -> str | None:
    """One sentence: the twins' server CPU per request in the closed-loop cost anatomy, whose
    CPU repetitions are interleaved across its rows in one run: the second column's median
    over the first's with its 95% interval, repetitions paired by their turn. None where either
    row lacks two."""
    if not closed or len(columns) != 2:
        return None
    entries = [closed.get("rows", {}).get(f"{loop}/coroutines", {}) for loop in columns]
    values = [entry.get("cpu_us_reps", []) for entry in entries]
    if not all(len(v) >= 2 for v in values):
        return None
    return (
        f"In the closed-loop cost anatomy above ({len(values[0])} and {len(values[1])} "
        f"repetitions, interleaved across its rows, `python -m bench anatomy --closed-loop`): "
        f"{_compared(columns, values, digits=2, interleaved=True)}."
    )


def _medians(columns: list[str], values: list[list[float]], digits: int = 1) -> str:
    return " against ".join(
        f"{loop} {statistics.median(v):.{digits}f} µs"
        for loop, v in zip(columns, values, strict=True)
    )


def _compared(
    columns: list[str], values: list[list[float]], digits: int = 1, interleaved: bool = False
) -> str:
    """Both medians, then the second column's over the first's with its interval (paired by
    turn where the repetitions were interleaved)."""
    sides = [dict(enumerate(v)) if interleaved else v for v in values]
    ratio = intervals.ratio_interval(sides[1], sides[0])
    return f"{_medians(columns, values, digits)}: {columns[1]} / {columns[0]} " + (
        intervals.worded(ratio) if ratio else "from one repetition a side: no interval"
    )


def _table(entries: list[dict], columns: list[str], regime: str) -> list[str]:
    """One regime's table: a column per loop, the totals, then a line per part."""
    split = [entry["split"] for entry in entries]
    lines = [
        f"| instructions per request, {regime} | " + " | ".join(columns) + " |",
        "|---|" + "--:|" * len(columns),
    ]
    totals = [entry.get("total") for entry in entries]
    if all(totals):
        lines.append(
            f"| total, {_python(totals[0]['python'])} | "
            + " | ".join(f"{t['per_request']:,.0f}" for t in totals)
            + " |"
        )
    lines.append(
        f"| total, {_python(split[0]['python'])} `-X perf` | "
        + " | ".join(f"**{s['per_request']:,.0f}**" for s in split)
        + " |"
    )
    for part, label in PARTS.items():
        values = [s["parts"].get(part, 0) for s in split]
        if any(round(v) for v in values):
            lines.append(f"| {label} | " + " | ".join(f"{v:,.0f}" for v in values) + " |")
    if len(columns) == 2:
        a, b = (s["per_request"] for s in split)
        lines += ["", f"{columns[1]} / {columns[0]}: {b / a:.2f} under `-X perf`"]
        if all(totals):
            ratio = totals[1]["per_request"] / totals[0]["per_request"]
            lines[-1] += f", {ratio:.2f} on {_python(totals[0]['python'])}"
        lines[-1] += "."
    return lines


def _python(path: str) -> str:
    """The interpreter's version, as its path names it (pyenv's versions/3.11.7/, python3.12)."""
    found = re.search(r"(3\.\d+)", path)
    return f"Python {found[1]}" if found else path


if __name__ == "__main__":
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("reports/results")
    print("\n".join(section(load(folder))))


def page_section(study: SideStudy, page: Page) -> list[str]:
    """Instructions per request by part, under the cost anatomy (nothing without results)."""
    if not page.results:
        return []
    data, closed = load(page.results), load_anatomy(page.results, closed=True)
    if data and page.own(data) is None:
        return [TITLE, "", ELSEWHERE, ""]
    return section(data, page.stores.get("echo"), page.own(closed))


RENDERING = Rendering(section=page_section)
