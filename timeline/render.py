"""Charts and reports/timelines.md, rendered from stored records alone (no loop runs here).

Per record, a chart: one row per task, callback or thread's work (in the order they first ran),
a bar per run slice (drawn at least a few pixels wide), and at each bar's end a mark coloured by
what the task then waited on (for a callback, at its start: what woke it). Colour means that and
only that on this chart: every bar is one grey, thread work is hatched, and the time axis reads
in the unit of the record's events (:func:`timeline.readings.time_unit`: µs for a run of a few
milliseconds). Per scenario and style, an order chart: one line per loop, one cell per slice
coloured by which task ran (its one colour meaning), in the order the slices ran, so
interleavings can be compared at a glance whatever the clocks said.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

from loops import STYLES
from timeline.readings import metrics, on_loop, order, time_unit
from timeline.scenarios import SCENARIOS

# What a mark means, coarsely, so that one colour says the same thing on every loop.
CATEGORIES = {
    "yield": "#4c9be8",  # sleep(0) / call_soon: back to the ready queue
    "timer": "#f0a030",  # a timer: sleep(t), call_later
    "io": "#2ca02c",  # socket readiness
    "thread": "#9467bd",  # work in a thread, or waiting for it
    "task": "#8c564b",  # spawn, join, cancel: waiting on another task
    "returned": "#222222",  # the task ended
    "raised": "#d62728",  # the task ended with an exception (a cancelled one: its CancelledError)
}
_IO_CALLS = {"recv", "sendall", "accept", "connect", "recvfrom", "sendto"}


def category(piece: dict[str, Any]) -> str:
    """The coarse kind of one slice's mark."""
    mark, call = piece["mark"], piece["call"]
    if mark == "returned" or mark.startswith("raised"):
        return "returned" if mark == "returned" else "raised"
    if mark in ("call_soon", "call_soon_threadsafe"):
        return "yield"
    if mark in ("readable", "writable") or call in _IO_CALLS:
        return "io"
    if mark in ("thread", "thread done") or call == "run_in_thread":
        return "thread"
    if call in ("spawn", "join", "cancel"):
        return "task"
    if mark == "yield" or call == "sleep(0)":
        return "yield"
    if call == "sleep":
        return "timer"
    return "timer" if mark == "timer" else "task"


def _rows_in_order(record: dict[str, Any]) -> list[dict[str, Any]]:
    first = {}
    for piece in record["slices"]:
        first.setdefault(piece["row"], piece["start"])
    rows = [row for row in record["rows"] if row["id"] in first]
    return sorted(rows, key=lambda row: first[row["id"]])


def chart(record: dict[str, Any], path: Path) -> None:
    """The timeline of one record as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = _rows_in_order(record)
    index = {row["id"]: i for i, row in enumerate(rows)}
    span = max((p["end"] for p in record["slices"]), default=1.0)
    start0 = min((p["start"] for p in record["slices"]), default=0.0)
    unit, scale = time_unit(record)  # the axis reads in the unit of the events
    least = (span - start0) * scale / 400  # narrowest bar: a visible tick
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 2.2))
    for piece in record["slices"]:
        y = index[piece["row"]]
        x = (piece["start"] - start0) * scale
        width = max((piece["end"] - piece["start"]) * scale, least)
        kind = next(r["kind"] for r in rows if r["id"] == piece["row"])
        # One grey for every bar (colour is the marks' alone); thread work is hatched.
        ax.broken_barh(
            [(x, width)],
            (y - 0.3, 0.6),
            facecolor="#bbbbbb",
            edgecolor="#555555",
            hatch="///" if kind == "thread" else None,
            linewidth=0.5,
        )
        at = x if kind == "callback" else x + width
        ax.plot(
            at,
            y,
            marker="D" if kind == "callback" else "o",
            markersize=7,
            color=CATEGORIES[category(piece)],
            zorder=3,
        )
    ax.set_yticks(range(len(rows)), [f"{r['name']} ({r['kind']})" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel(f"time since the first slice ({unit})")
    ax.set_title(f"{record['scenario']}: {record['loop']}, {record['style']}")
    ax.legend(
        handles=[
            Line2D([], [], marker="o", linestyle="", color=c, label=k)
            for k, c in CATEGORIES.items()
        ],
        loc="upper center",
        bbox_to_anchor=(0.5, -0.1 - 0.4 / max(len(rows), 1)),
        fontsize=7,
        ncols=len(CATEGORIES),
        title="colour: what it waited on next (tasks: at a slice's end; callbacks ◆: what "
        "woke it); hatched bars: thread work",
        title_fontsize=7,
    )
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def order_chart(records: list[dict[str, Any]], path: Path) -> None:
    """Several loops' schedules of one scenario and style: a line of cells per loop."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    names: list[str] = []
    for record in records:
        for name in order(record):
            if name not in names:
                names.append(name)
    palette = plt.get_cmap("tab10")
    colour = {name: palette(i % 10) for i, name in enumerate(names)}
    longest = max(len(order(r)) for r in records)
    fig, ax = plt.subplots(figsize=(min(2 + longest * 0.22, 16), 0.45 * len(records) + 1.8))
    for y, record in enumerate(records):
        for x, name in enumerate(order(record)):
            ax.add_patch(plt.Rectangle((x, y - 0.4), 0.95, 0.8, color=colour[name]))
    ax.set_xlim(0, longest)
    ax.set_ylim(len(records) - 0.5, -0.5)
    ax.set_yticks(range(len(records)), [r["loop"] for r in records])
    ax.set_xlabel("slice, in the order they ran")
    ax.set_title(f"{records[0]['scenario']}, {records[0]['style']}: who ran next")
    ax.legend(
        handles=[Patch(color=colour[n], label=n) for n in names],
        title="colour: which task ran",
        title_fontsize=7,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.22),
        ncols=min(len(names), 8),
        fontsize=7,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def _letters(record: dict[str, Any]) -> str:
    """The schedule as a string of initials (m = the main task), for the side-by-side table."""
    main = record["scenario"] + "_"
    return " ".join("M" if n.startswith(main) or n == "main" else n[:2] for n in order(record))


def report(
    records: Iterable[dict[str, Any]],
    charts: Path,
    out: Path,
    failures: dict[str, str] | None = None,
) -> None:
    """Write charts for every record and the markdown report that shows them."""
    programs, styles = list(SCENARIOS), list(STYLES)
    records = sorted(
        records,
        key=lambda r: (
            programs.index(r["scenario"]) if r["scenario"] in programs else len(programs),
            r["scenario"],
            styles.index(r["style"]),
            r["loop"],
        ),
    )
    rel = Path(os.path.relpath(charts, out.parent))
    lines = _introduction(records, rel)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["scenario"], record["style"]), []).append(record)
    lines += _provenance(records, failures)
    for (scenario, style), group in groups.items():
        others = [r for r in records if r["scenario"] == scenario and r["style"] != style]
        lines += _group(scenario, style, group, charts, rel, others)
    out.write_text("\n".join(lines).rstrip() + "\n")


def _introduction(records: list[dict[str, Any]], rel: Path) -> list[str]:
    """What the report is, how to read a chart, and what the table's columns mean."""
    return [
        "# Timelines: every loop scheduling the same programs",
        "",
        "Also: [the bench](bench.md) (what each design costs), [conformance](conformance.md) "
        "(what each does correctly), [the HTML report](site/index.html), "
        "[the README](../README.md).",
        "",
        "Generated by `nox -s timeline` (run: `python -m timeline --all`; render: "
        "`python -m timeline --report`), from the records in "
        f"`{rel}/*.json`. Each record is the least disturbed (least time inside slices) of "
        f"{_repeats(records)} traced runs after an untraced warm-up: the *order* of slices is the "
        "loop's design; the microseconds come from a shared, noisy machine and are indicative "
        "only (the bench measures costs).",
        "",
        "How to read a chart: one row per task (or callback, or thread's work, hatched), a grey "
        "bar per run slice (widened to stay visible), a mark where it suspended; colour means "
        "one thing, what it then waited on: " + ", ".join(f"{k}" for k in CATEGORIES) + ". "
        "The time axis is in the unit of the events (µs for a run of a few milliseconds). The "
        "order charts' colour means which task ran. The same timelines are zoomable in the HTML "
        "report ([site/timelines.html](site/timelines.html)), and as trace-event JSON for "
        "Perfetto in `site/traces/`. The programs are in "
        "[`timeline/scenarios.py`](../timeline/scenarios.py); the tracer (a driver around each "
        "task, a proxy around each callbacks loop, no loop edited) in "
        "[`timeline/tracer.py`](../timeline/tracer.py).",
        "",
        "Table columns: *slices* and *switches* (consecutive slices of different rows) on the "
        "loop's thread; *longest* slice; *median gap* between one slice's end and the next "
        "one's start (a switch's cost, when nothing is waited for); *loop share*: the part of "
        "the span in which no task or callback ran (the loop's own work plus its waiting on "
        "timers, sockets and the thread).",
        "",
    ]


def _provenance(records: list[dict[str, Any]], failures: dict[str, str] | None) -> list[str]:
    """Where the records come from, and the runs that did not record (and why)."""
    commits = sorted({r["commit"] for r in records})
    pythons = sorted({r["python"] for r in records})
    cpus = sorted({r.get("cpu", "unknown") for r in records})
    libraries = sorted(
        {f"{k} {v}" for r in records for k, v in r.get("libraries", {}).items() if v}
    )
    lines = [
        f"Commit {', '.join(commits)}; Python {', '.join(pythons)}; {', '.join(cpus)}; "
        f"{', '.join(libraries)}.",
        "",
    ]
    if failures:
        lines += [
            "Not recorded (the run failed, or the variant is unavailable on the interpreter that "
            "recorded; the rest of the report is unaffected):",
            "",
        ]
        lines += [f"- `{name}`: {reason}" for name, reason in sorted(failures.items())]
        lines.append("")
    return lines


def _group(
    scenario: str,
    style: str,
    group: list[dict[str, Any]],
    charts: Path,
    rel: Path,
    others: list[dict[str, Any]],
) -> list[str]:
    """One scenario in one style: who ran next, the table, why the schedules differ (`others`:
    the same program in the other styles), each timeline."""
    lines = [f"## {scenario}, {style}", "", *_interpreters(group)]
    order_png = charts / f"{scenario}-{style}-order.png"
    order_chart(group, order_png)
    lines += [
        f"![who ran next, {scenario}, {style}]({rel}/{order_png.name})",
        "",
        "| loop | slices | switches | longest (µs) | median gap (µs) | loop share | "
        "schedule (initials, M = main) |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for record in group:
        m = metrics(record)
        lines.append(
            f"| `{record['loop']}` | {m['slices']} | {m['switches']} | "
            f"{m['longest'] * 1e6:.0f} | {m['median_gap'] * 1e6:.0f} | "
            f"{m['loop_share']:.0%} | {_letters(record)} |"
        )
    lines += ["", _differences(group, others), ""]
    for record in group:
        png = charts / f"{scenario}-{record['loop']}-{style}.png"
        chart(record, png)
        lines += [
            "<details>",
            f"<summary>{record['loop']}: the timeline, and what each task waited on</summary>",
            "",
            f"![{scenario} on {record['loop']}, {style}]({rel}/{png.name})",
            "",
            _waits(record),
            "</details>",
            "",
        ]
    return lines


def _interpreters(group: list[dict[str, Any]]) -> list[str]:
    """A sentence when the rows of one table were recorded on different interpreters."""
    by_python: dict[str, list[str]] = {}
    for record in group:
        by_python.setdefault(record["python"], []).append(f"`{record['loop']}`")
    if len(by_python) < 2:
        return []
    parts = [
        f"{', '.join(names)} on Python {python}" for python, names in sorted(by_python.items())
    ]
    return [
        "These rows come from different interpreters: "
        + "; ".join(parts)
        + " (a loop unavailable on one is recorded on another). Compare their schedules; "
        "their microseconds also differ by interpreter.",
        "",
    ]


def _repeats(records: list[dict[str, Any]]) -> str:
    counts = sorted({str(r.get("repeats", 1)) for r in records})
    return " or ".join(counts)


def _main_name(record: dict[str, Any]) -> str:
    """The row that ran first: the main task (or the callback that starts the program)."""
    return order(record)[0] if order(record) else ""


def _differences(group: list[dict[str, Any]], others: list[dict[str, Any]] | None = None) -> str:
    """Why the loops' schedules of one program and style differ: a sentence per finding,
    computed from the records (the table above shows the schedules themselves). `others`: the
    same program's records in the other styles, to compare a loop that is alone in its style."""
    schedules: dict[tuple[str, ...], list[str]] = {}
    for record in group:
        schedules.setdefault(tuple(order(record)), []).append(f"`{record['loop']}`")
    if len(group) == 1:
        (record,) = group
        lines = [f"Only `{record['loop']}` speaks this style, so no other loop is compared here."]
        twins = [
            f"`{o['loop']}` in the {o['style']} style"
            for o in others or []
            if o["loop"] == record["loop"] and _letters(o) == _letters(record)
        ]
        if twins:
            lines[0] += (
                f" Its schedule is the same as {', '.join(twins)}: the style changed, not the loop."
            )
        lines += _accounts(group)
        return "\n".join(lines)
    if len(schedules) == 1:
        lines = [f"All {len(group)} loops ran the slices in the same order."]
        wakes = {_woken_by(r, i) for r in group for i in range(1, len(order(r)))}
        if wakes <= {"yield"}:
            lines[0] += (
                " Every slice was woken by a yield or `call_soon`, nothing waited on a timer or a "
                "socket, and each loop runs its ready queue first in, first out."
            )
        return "\n".join(lines + _accounts(group)[1:])
    lines = [f"{len(schedules)} different schedules among {len(group)} loops, and why:"]
    shared = [names for names in schedules.values() if len(names) > 1]
    if shared:
        lines.append("- the same schedule: " + "; ".join(", ".join(n) for n in shared) + ".")
    lines += _accounts(group)
    lines += _first_parting(group)
    return "\n".join(lines)


def _leading(record: dict[str, Any]) -> int:
    """Slices of the program's first task before any other ran."""
    ran, main = order(record), _main_name(record)
    return next((i for i, name in enumerate(ran) if name != main), len(ran))


def _ended(piece: dict[str, Any]) -> str:
    return piece["call"] or piece["mark"]


def _counts(pieces: Iterable[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for piece in pieces:
        counts[_ended(piece)] = counts.get(_ended(piece), 0) + 1
    return ", ".join(f"`{k}` ×{v}" for k, v in counts.items())


def _accounts(group: list[dict[str, Any]]) -> list[str]:
    """Who runs first after starting tasks, and the slices that resumed the task just run."""
    lines = []
    leading: dict[int, list[str]] = {}
    for record in group:
        leading.setdefault(_leading(record), []).append(f"`{record['loop']}`")
    spawners = [r for r in group if _leading(r) > 1]
    alike: dict[tuple[int, str], list[str]] = {}
    for record in spawners:
        ran = on_loop(record)[: _leading(record)]
        alike.setdefault((len(ran), _counts(ran)), []).append(f"`{record['loop']}`")
    for (count, ended), names in alike.items():
        why = (
            "a `spawn` there is a request the loop answers at once by resuming the spawner, "
            "so each spawn costs it a slice"
            if "`spawn`" in ended
            else "starting a task suspended it"
        )
        lines.append(
            f"- on {', '.join(names)} the first task ran {count} slices before any other, "
            f"ending in {ended}: {why}."
        )
    eager = [f"`{r['loop']}`" for r in group if _started_inside(r)]
    if eager:
        lines.append(
            f"- on {', '.join(eager)} the new tasks ran their first slices inside the first "
            "task's own (they start before it ends): starting a task runs it at once, up to its "
            "first suspension, inside the call that starts it."
        )
    queued = [name for name in leading.get(1, []) if name not in eager]
    if (spawners or eager) and queued:
        lines.append(
            f"- on {', '.join(queued)} it ran 1: starting a task queued it and returned "
            "within the slice, and the new tasks waited in the ready queue."
        )
    again = {r["loop"]: _resumed_at_once(r) for r in group}
    if len({len(pieces) for pieces in again.values()}) > 1:
        parts = [
            f"`{loop}` {len(pieces)}" + (f" ({_counts(pieces)})" if pieces else "")
            for loop, pieces in sorted(again.items(), key=lambda item: len(item[1]))
        ]
        lines.append(
            "- slices that resumed the task that had just suspended, before any other ran "
            "(the difference in slice counts; in brackets, the call each such suspension was "
            "in): " + "; ".join(parts) + "."
        )
    return lines


def _started_inside(record: dict[str, Any]) -> bool:
    """Did another task's slice start inside the first task's first slice (an eager start)?"""
    ran = on_loop(record)
    return len(ran) > 1 and ran[1]["row"] != ran[0]["row"] and ran[1]["start"] < ran[0]["end"]


def _resumed_at_once(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The slices after which the same task ran again at once."""
    ran = on_loop(record)
    return [a for a, b in pairwise(ran) if a["row"] == b["row"]]


def _woken_by(record: dict[str, Any], index: int) -> str:
    """What woke the slice at `index` (on the loop's thread): a callback's own mark, or for a
    task what its previous slice waited on; a coarse category."""
    ran = on_loop(record)
    piece = ran[index]
    kinds = {row["id"]: row["kind"] for row in record["rows"]}
    if kinds.get(piece["row"]) == "callback":
        return category(piece)
    before = [p for p in ran[:index] if p["row"] == piece["row"]]
    return category(before[-1]) if before else "start"  # its first slice: it was started


WOKEN = {  # what woke a slice, by the category of the wait before it (see `category`)
    "yield": "after a yield or `call_soon`",
    "timer": "woken by a timer",
    "io": "woken by socket readiness",
    "thread": "woken by a thread's result",
    "task": "woken by another task (a join or a cancel)",
    "returned": "after a task ended",
    "raised": "after a task ended",
    "start": "its first slice",
}


def _first_parting(group: list[dict[str, Any]]) -> list[str]:
    """Where the schedules first differ, and what had woken the task each loop ran there
    (among the loops that started their tasks alike: the spawn sentence explains the rest)."""
    starts: dict[int, list[dict[str, Any]]] = {}
    for record in group:
        starts.setdefault(_leading(record), []).append(record)
    among = "among those that ran it once, " if len(starts) > 1 else ""
    group = max(starts.values(), key=len)
    schedules = [_letters(r).split() for r in group]
    index = next(
        (i for i in range(min(map(len, schedules))) if len({s[i] for s in schedules}) > 1),
        None,
    )
    if index is None:
        return []
    picks: dict[tuple[str, str], list[str]] = {}
    for record in group:
        name = order(record)[index]
        picks.setdefault((name, _woken_by(record, index)), []).append(f"`{record['loop']}`")
    parts = [f"{', '.join(ls)} ran `{name}` ({WOKEN[why]})" for (name, why), ls in picks.items()]
    reason = (
        "tasks woken the same way were ready together, and the loops took them in another order"
        if len({why for _, why in picks}) == 1
        else "wake-ups of different kinds came due in the same turn, and the loops queue them "
        "in a different order"
    )
    return [
        f"- {among}the schedules first part at slice {index + 1}: "
        + "; ".join(parts)
        + f": {reason}."
    ]


def _waits(record: dict[str, Any]) -> str:
    """What each row's slices ended on (tasks) or were started by (callbacks), with counts."""
    names = {row["id"]: (row["name"], row["kind"]) for row in record["rows"]}
    seen: dict[str, dict[str, int]] = {}
    for piece in on_loop(record):
        name, _ = names[piece["row"]]
        label = piece["mark"] + (f" in {piece['call']}" if piece["call"] else "")
        counts = seen.setdefault(name, {})
        counts[label] = counts.get(label, 0) + 1
    lines = ["| row | marks (count) |", "|---|---|"]
    for name, counts in seen.items():
        lines.append(f"| {name} | " + ", ".join(f"{k} ×{v}" for k, v in counts.items()) + " |")
    return "\n".join(lines) + "\n"
