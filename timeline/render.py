"""Charts and reports/timelines.md, rendered from stored records alone (no loop runs here).

Per record, a chart: one row per task, callback or thread's work (in the order they first ran),
a bar per run slice (drawn at least a few pixels wide: most slices last microseconds in a
span of milliseconds), and at each bar's end a mark coloured by what the task then waited on
(for a callback, at its start: what woke it). Per scenario and style, an order chart: one line
per loop, one cell per slice coloured by task, in the order the slices ran, so interleavings
can be compared at a glance whatever the clocks said.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from timeline.record import metrics, on_loop, order

# What a mark means, coarsely, so that one colour says the same thing on every loop.
CATEGORIES = {
    "yield": "#4c9be8",  # sleep(0) / call_soon: back to the ready queue
    "timer": "#f0a030",  # a timer: sleep(t), call_later
    "io": "#2ca02c",  # socket readiness
    "thread": "#9467bd",  # work in a thread, or waiting for it
    "task": "#8c564b",  # spawn, join, cancel: waiting on another task
    "end": "#222222",  # returned or raised
}
_IO_CALLS = {"recv", "sendall", "accept", "connect", "recvfrom", "sendto", "_retry", "_io"}
# (_retry and _io: the futures and roundrobin loops' socket helpers, outermost in their chains)


def category(piece: dict[str, Any]) -> str:
    """The coarse kind of one slice's mark."""
    mark, call = piece["mark"], piece["call"]
    if mark == "returned" or mark.startswith("raised"):
        return "end"
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
    scale = 1000.0  # milliseconds on the axis
    least = (span - start0) * scale / 400  # narrowest bar: a visible tick
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(rows) + 1.6))
    for piece in record["slices"]:
        y = index[piece["row"]]
        x = (piece["start"] - start0) * scale
        width = max((piece["end"] - piece["start"]) * scale, least)
        kind = next(r["kind"] for r in rows if r["id"] == piece["row"])
        ax.broken_barh(
            [(x, width)], (y - 0.3, 0.6), color="#bbbbbb" if kind == "thread" else "#555555"
        )
        at = x if kind == "callback" else x + width
        ax.plot(
            at,
            y,
            marker="|" if kind == "callback" else "o",
            markersize=7,
            color=CATEGORIES[category(piece)],
            zorder=3,
        )
    ax.set_yticks(range(len(rows)), [f"{r['name']} ({r['kind']})" for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("milliseconds since the first slice")
    ax.set_title(f"{record['scenario']}: {record['loop']}, {record['style']}")
    ax.legend(
        handles=[
            Line2D([], [], marker="o", linestyle="", color=c, label=k)
            for k, c in CATEGORIES.items()
        ],
        loc="lower right",
        fontsize=7,
        ncols=len(CATEGORIES),
        framealpha=0.8,
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
    records = sorted(records, key=lambda r: (r["scenario"], r["style"], r["loop"]))
    rel = Path(os.path.relpath(charts, out.parent))
    lines = [
        "# Timelines: every loop scheduling the same programs",
        "",
        "Generated by `nox -s timeline` (run: `python -m timeline --all`; render: "
        "`python -m timeline --report`), from the records in "
        f"`{rel}/*.json`. One traced run each, after an untraced warm-up: the *order* of slices "
        "is the loop's design; the microseconds are one noisy run on a shared machine, "
        "indicative only (the bench measures).",
        "",
        "How to read a chart: one row per task (or callback, or thread's work), a bar per run "
        "slice (widened to stay visible), a mark where it suspended, coloured by what it then "
        "waited on: " + ", ".join(f"{k}" for k in CATEGORIES) + ". The programs are in "
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
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["scenario"], record["style"]), []).append(record)
    commits = sorted({r["commit"] for r in records})
    pythons = sorted({r["python"] for r in records})
    lines += [f"Commit {', '.join(commits)}; Python {', '.join(pythons)}.", ""]
    if failures:
        lines += ["Not recorded (the run failed; the rest of the report is unaffected):", ""]
        lines += [f"- `{name}`: {reason}" for name, reason in sorted(failures.items())]
        lines.append("")
    for (scenario, style), group in groups.items():
        lines += [f"## {scenario}, {style}", ""]
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
        lines += ["", _differences(group), ""]
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
    out.write_text("\n".join(lines).rstrip() + "\n")


def _differences(group: list[dict[str, Any]]) -> str:
    """A sentence per group: which loops ran the same schedule, which differ."""
    by_schedule: dict[tuple[str, ...], list[str]] = {}
    for record in group:
        by_schedule.setdefault(tuple(order(record)), []).append(f"`{record['loop']}`")
    if len(by_schedule) == 1:
        return "Every loop ran the slices in the same order."
    parts = [
        f"{', '.join(loops)} ({len(schedule)} slices)"
        for schedule, loops in sorted(by_schedule.items(), key=lambda kv: -len(kv[1]))
    ]
    return f"{len(by_schedule)} different schedules: " + "; ".join(parts) + "."


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
