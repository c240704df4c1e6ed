"""Instructions per echo request, by part of the server: rendered from the stored profile alone.

The counting (callgrind on the echo server, two dumps subtracted, the parts told apart through
Python 3.12's ``-X perf`` trampolines) is :mod:`bench.measure.profile`, which stores
``reports/results/profile.json``; this module reads that file and writes a markdown section for
the cost anatomy: one column per loop, one line per part, the totals with and without
``-X perf``, then the completions loop's levers in the order they were tried. An instruction
count leaves Linux's work out, so the section ends with what the bench measured of the same two
loops, Linux included: their server CPU per echo request at the echo section's headline point
(1 KiB x 100 connections), closed loop and at the fixed offered load, as a ratio with its
interval where both rows come from one session (:func:`measured`).

``python -m bench.render.instructions [RESULTS_DIR]`` prints the section.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

from bench.registry.echo import HEADLINE_POINT, HEADLINE_RATE, PACED
from bench.render import intervals

FILE = "profile.json"  # under the results folder (reports/results/)
COMMAND = "python -m bench.measure.profile"
# The parts, in the order bench.measure.profile attributes them, with what each one is.
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


def load(results: Path) -> dict | None:
    """The stored profile, or None where it was never measured."""
    path = results / FILE
    return json.loads(path.read_text()) if path.exists() else None


def section(data: dict | None, echo: Any = None, closed: dict | None = None) -> list[str]:
    """The markdown lines of the section (a heading of level 3, for the cost anatomy); `echo`,
    the echo workload's result store of the same report, and `closed`, the stored closed-loop
    anatomy (bench.measure.anatomy), give its closing sentences."""
    lines = ["### Instructions per echo request, by part", ""]
    rows = (data or {}).get("rows", {})
    columns = [loop for loop in LOOPS if loop in rows]
    if not columns:
        return [*lines, f"Not measured in this tree yet: `{COMMAND}`.", ""]
    first = rows[columns[0]]["split"]
    lines += [
        f"Counted by `{COMMAND}`: user-space instructions (callgrind's `Ir`) the echo server "
        f"executes per request, {first['connections']} connections × 1 KiB, the difference of "
        "two dumps over the difference of their request counts. Linux's own work inside the "
        "syscalls is not counted. Parts are told apart on Python 3.12 with `-X perf` (which "
        "costs instructions itself); the plain interpreter's total is the first line.",
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
    return [*lines, *(line for text in said for line in ("", text)), ""]


def in_the_anatomy(closed: dict | None, columns: list[str]) -> str | None:
    """One sentence: the twins' server CPU per request in the closed-loop cost anatomy, whose
    CPU repetitions are interleaved across its rows in one run: the second column's median
    over the first's with its 95% bootstrap interval. None where either row lacks two."""
    if not closed or len(columns) != 2:
        return None
    entries = [closed.get("rows", {}).get(f"{loop}/coroutines", {}) for loop in columns]
    values = [entry.get("cpu_us_reps", []) for entry in entries]
    ratio = (
        intervals.ratio_interval(values[1], values[0], "instructions:anatomy")
        if all(len(v) >= 2 for v in values)
        else None
    )
    if ratio is None:
        return None
    medians = " against ".join(
        f"{loop} {statistics.median(v):.2f} µs" for loop, v in zip(columns, values, strict=True)
    )
    return (
        f"In the closed-loop cost anatomy above ({len(values[0])} and {len(values[1])} "
        f"repetitions, interleaved across its rows, `python -m bench anatomy --closed-loop`): "
        f"{medians}: {columns[1]} / {columns[0]} {intervals.worded(ratio)}."
    )


def measured(echo: Any, columns: list[str]) -> str | None:
    """One sentence: the twins' server CPU per echo request as the bench measured it at the
    echo headline point, closed loop then at the fixed offered load, the second column's
    median over the first's with its 95% bootstrap interval. A ratio is given only for rows
    of one session (the machine moves between sessions); None where the echo store has
    neither point. `echo` is a bench.store.ResultStore."""
    if echo is None or len(columns) != 2:
        return None
    phrases = []
    for regime, point in _headline_points(echo.data.get("points", {})):
        rows = point.get("rows", {})
        first, second = (rows.get(f"{loop}/coroutines") for loop in columns)
        if not first or not second:
            continue
        values = [
            [rep["server_cpu_us"] for rep in entry["reps"] if rep.get("server_cpu_us")]
            for entry in (first, second)
        ]
        if not all(values):
            continue
        medians = " against ".join(
            f"{loop} {statistics.median(v):.1f} µs" for loop, v in zip(columns, values, strict=True)
        )
        if first.get("session") != second.get("session"):
            phrases.append(f"{regime}, {medians} (two sessions: no ratio)")
            continue
        ratio = intervals.ratio_interval(values[1], values[0], f"instructions:{regime}")
        phrases.append(
            f"{regime}, {medians}: {columns[1]} / {columns[0]} "
            + (intervals.worded(ratio) if ratio else "from one repetition a side: no interval")
        )
    if not phrases:
        return None
    return (
        "Measured by the bench, Linux's work included (the echo section's rows, server CPU per "
        f"request, {HEADLINE_POINT['size']:,} B × {HEADLINE_POINT['connections']} connections, "
        "median of the repetitions, 95% bootstrap interval): " + "; ".join(phrases) + "."
    )


def _headline_points(points: dict) -> list[tuple[str, dict]]:
    """The echo store's points at the headline size and connections: closed loop first, then
    the fixed offered load at the headline rate, each with the words that name it."""
    found = {}
    for key, point in points.items():
        args = dict(part.split("=", 1) for part in key.split(","))
        if any(args.get(name) != str(value) for name, value in HEADLINE_POINT.items()):
            continue
        if args.get("measure") == PACED:
            if args.get("rate") == str(HEADLINE_RATE):
                found[1] = (f"at the fixed load of {HEADLINE_RATE:,} requests/s", point)
        elif "measure" not in args:
            found[0] = ("at the closed loop", point)
    return [found[k] for k in sorted(found)]


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
        "| total, Python 3.12 `-X perf` | "
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
