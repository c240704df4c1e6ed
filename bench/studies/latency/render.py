"""The "Latency as the load rises" section: each echo row's curve up its ladder, and its knee.

From the stored steps alone (:mod:`bench.studies.latency` says what a step is for a row and
where a climb ends): a chart per group of rows (production loops and their anchors; home-made
loops) of p99, and p50 dashed, against the offered rate, log-log, the knee marked; and a knee
table. A step a row did not keep has no latency drawn: past the knee the figure is how long
the backlog grew in the step, not what the server does. The HTML site draws the same curves
from the same functions (``htmlreport/latency.py``). No curve stored: no section.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter, NullLocator
from tabulate import tabulate

from bench.plan import Row
from bench.render.page import Page
from bench.render.rows import anchor_label
from bench.render.tables import ran_in
from bench.studies.echo import render as echo
from bench.studies.latency import BROKE, CEILING, ENDS, KEPT, METRICS, step_state
from bench.study import Rendering, Study
from bench.summary import counted, summarize

# The chart groups, in page order: (file name part, title, the row kinds in it).
GROUPS = (
    ("production", "production loops and their anchor servers", ("reference", "anchor")),
    ("home-made", "home-made loops", ("home-made",)),
)


@dataclass(frozen=True)
class Step:
    """One row at one offered rate: what the step was (a registry.latency state) and, where it
    kept the rate, its latency percentiles in ms (medians over its valid repetitions)."""

    rate: int
    state: str
    p50: float | None = None
    p99: float | None = None
    p999: float | None = None
    achieved: float | None = None  # requests/s completed, median over its repetitions
    cpu_share: float | None = None  # the server's share of its core, median, where kept


@dataclass(frozen=True)
class Curve:
    """One row's steps up the ladder, lowest rate first."""

    key: str
    label: str
    kind: str
    steps: tuple[Step, ...]
    sessions: tuple[str, ...] = ()

    @property
    def knee(self) -> Step | None:
        return knee(self.steps)[0]

    @property
    def ended(self) -> Step | None:
        return knee(self.steps)[1]


def knee(steps: tuple[Step, ...] | list[Step]) -> tuple[Step | None, Step | None]:
    """(the last step kept before the climb ended, the step that ended it): (None, step) for
    a row that kept none, (last kept, None) for one that kept every step it was offered."""
    last = None
    for step in sorted(steps, key=lambda s: s.rate):
        if step.state in ENDS:
            return last, step
        if step.state == KEPT:
            last = step
    return last, None


def step_of(rate: int, reps: list[dict]) -> Step:
    """One stored step of one row."""
    state = step_state(reps)
    achieved = [r["rate_achieved"] for r in counted(reps) if r.get("rate_achieved") is not None]
    middle = statistics.median(achieved) if achieved else None
    if state != KEPT:
        return Step(rate, state, achieved=middle)
    stats = summarize(reps, METRICS).stats

    def ms(name: str) -> float | None:
        return stats[name].median if name in stats else None

    return Step(
        rate,
        state,
        ms("latency_p50_ms"),
        ms("latency_p99_ms"),
        ms("latency_p999_ms"),
        middle,
        stats["server_cpu_share"].median if "server_cpu_share" in stats else None,
    )


def curves(workload: Study, points: dict[str, dict], full: bool) -> list[Curve]:
    """Every row's curve from a store's points: the current ladder's steps where any is stored
    (a ladder of other timings stays in the store, not on the page), else every stored step."""
    current = {point.key for point in workload.points(full)}
    chosen = [p for key, p in points.items() if key in current] or list(points.values())
    by_row: dict[str, dict] = {}
    for point in chosen:
        rate = point["params"]["rate"]
        for key, entry in point["rows"].items():
            found = by_row.setdefault(key, {"entry": entry, "steps": [], "sessions": set()})
            found["steps"].append(step_of(rate, entry["reps"]))
            found["sessions"].add(entry["session"])
    made = []
    for key, found in by_row.items():
        entry = found["entry"]
        row = Row(entry["variant"], entry["style"], entry.get("anchor", False))
        steps = tuple(sorted(found["steps"], key=lambda s: s.rate))
        made.append(
            Curve(
                key,
                anchor_label(row),
                entry.get("kind", ""),
                steps,
                tuple(sorted(found["sessions"])),
            )
        )
    return sorted(made, key=lambda c: (-(c.knee.rate if c.knee else 0), c.label))


def ended_text(curve: Curve) -> tuple[str, str]:
    """(the step that ended the climb, why), in words for the knee table."""
    ended = curve.ended
    if ended is None:
        top = curve.steps[-1].rate if curve.steps else 0
        return "—", f"kept every step offered (up to {top:,} requests/s)"
    if ended.state == BROKE:
        done = f": {ended.achieved:,.0f} requests/s completed" if ended.achieved else ""
        return f"{ended.rate:,}", f"fell behind{done}"
    if ended.state == CEILING:
        return f"{ended.rate:,}", f"the generator saturated first{implied(curve.knee)}"
    return f"{ended.rate:,}", ENDS[ended.state]


def implied(kept: Step | None) -> str:
    """What a knee the generator capped says of the server: the share of its core it used at
    the last step kept, and the rate that share implies if its CPU per request held (a bound
    from its own cost, not a measured knee), or "" where the share is not stored."""
    if kept is None or not kept.cpu_share:
        return ": the knee is higher than shown"
    return (
        f": at {kept.rate:,}/s the server used {kept.cpu_share:.0%} of its core, about "
        f"{kept.rate / kept.cpu_share:,.0f}/s at a whole core if its CPU per request held"
    )


HEADERS = (
    "row",
    "knee: last rate kept (req/s)",
    "p50 (ms)",
    "p99 (ms)",
    "p99.9 (ms)",
    "climb ended at (req/s)",
    "why",
)


def capped(curve: Curve) -> bool:
    """True where the generator, not the server, ended the row's climb."""
    return curve.ended is not None and curve.ended.state == CEILING


def table_rows(made: list[Curve]) -> list[list[str]]:
    """The knee table's rows (HEADERS), in group order, highest knee first; in each group the
    rows whose climb the generator capped come last, ≥ their knee, and are not ranked: their
    "why" says what the server's own CPU implies instead."""
    body = []
    for _, _, kinds in GROUPS:
        group = [c for c in made if c.kind in kinds]
        for curve in [c for c in group if not capped(c)] + [c for c in group if capped(c)]:
            point = curve.knee
            at, why = ended_text(curve)
            figures = (
                [f"{v:,.3f}" if v is not None else "—" for v in (point.p50, point.p99, point.p999)]
                if point
                else ["—"] * 3
            )
            knee_text = f"{point.rate:,}" if point else "none"
            body.append([curve.label, f"≥ {knee_text}" if capped(curve) else knee_text,
                         *figures, at, why])  # fmt: skip
    return body


def what_this_shows(made: list[Curve]) -> str:
    """The groups' highest knees, and which knees are the instrument's, in words."""
    said = []
    for _, title, kinds in GROUPS:
        # Only a climb the server ended has a knee to rank: where the generator saturated
        # first, the knee is a lower bound (said below), not a place in the order.
        group = [c for c in made if c.kind in kinds and c.knee is not None and not capped(c)]
        if group:
            top = max(c.knee.rate for c in group)
            best = [c.label for c in group if c.knee.rate == top]
            lowest = min(c.knee.rate for c in group)
            worst = [c.label for c in group if c.knee.rate == lowest]
            kept = (
                f"{len(best)} of {len(group)} rows kept"
                if len(best) > 3
                else f"{', '.join(best)} kept"
            )
            line = f"among {title} whose climb the server ended, {kept} the highest rate"
            line += f" ({top:,} requests/s)"
            if lowest < top:
                line += f" and {', '.join(worst)} the lowest ({lowest:,})"
            said.append(line)
    sentence = "; ".join(said) + "." if said else ""
    sentence = sentence[:1].upper() + sentence[1:]
    bounded = [c.label for c in made if capped(c)]
    if bounded:
        sentence += (
            f" The generator saturated before {', '.join(bounded)} fell behind: their knees are "
            "lower bounds, set by the instrument."
        )
    none = [c.label for c in made if c.knee is None]
    if none:
        sentence += f" Kept no step: {', '.join(none)}."
    return sentence.strip()


def draw(made: list[Curve], mode: str, chart_dir: Path) -> list[tuple[Path, str]]:
    """A chart per group: p99 solid, p50 dashed, against the offered rate, log-log; the knee
    ringed; ▶ where the climb ended at the generator's ceiling. (file, caption) per chart."""
    drawn = []
    for name, title, kinds in GROUPS:
        group = [c for c in made if c.kind in kinds and any(s.p99 for s in c.steps)]
        if not group:
            continue
        figure, axis = plt.subplots(figsize=(9.5, 6.0))
        palette = plt.get_cmap("tab20")
        for i, curve in enumerate(group):
            colour = palette((2 * i) % 20 + (i // 10) % 2)  # ten hues, then their light shades
            kept = [s for s in curve.steps if s.state == KEPT and s.p99 is not None]
            rates = [s.rate for s in kept]
            axis.plot(rates, [s.p99 for s in kept], "-o", color=colour, ms=3, lw=1.4,
                      label=curve.label)  # fmt: skip
            axis.plot(rates, [s.p50 for s in kept], "--", color=colour, lw=0.9)
            point = curve.knee
            if point is not None and point.p99 is not None:
                ceiling = curve.ended is not None and curve.ended.state == CEILING
                axis.plot(
                    point.rate, point.p99, ">" if ceiling or curve.ended is None else "o",
                    ms=10, mfc="none", mec=colour, mew=1.6,
                )  # fmt: skip
        axis.set_xscale("log")
        axis.set_yscale("log")
        ladder = sorted({s.rate for c in group for s in c.steps if s.state == KEPT})
        axis.set_xticks(ladder, [f"{r:,}" for r in ladder], rotation=30, fontsize=8)
        axis.xaxis.set_minor_locator(NullLocator())
        axis.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_xlabel("offered load (requests/s)")
        axis.set_ylabel("latency from the scheduled send (ms)")
        axis.grid(True, which="both", alpha=0.25)
        axis.legend(fontsize=7, loc="upper left", ncol=2, frameon=False)
        axis.set_title(
            f"Latency as the load rises, {title}: p99 solid, p50 dashed ({mode} run)",
            fontsize=10, loc="left",
        )  # fmt: skip
        figure.text(
            0.01, 0.01,
            "ringed: the knee, the last step kept before the row fell behind; ▷: the generator "
            "saturated or the ladder ended first (the knee is at least there)",
            fontsize=8, color="#444444",
        )  # fmt: skip
        figure.tight_layout(rect=(0, 0.03, 1, 1))
        chart_dir.mkdir(parents=True, exist_ok=True)
        path = chart_dir / f"{mode}-latency-{name}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        drawn.append((path, f"Latency against offered load, {title}"))
    return drawn


READING = """\
*Reading it:* a row's curve is flat while the server keeps up (the p99 is a few round trips
of scheduling), turns up as it nears its capacity (requests queue behind each other), and ends
at its knee, ringed: the last step it kept before one it could not. A capacity plan reads the
rate where the p99 it can afford is crossed, below the knee. The ladder's steps are declared in
`bench/studies/latency/__init__.py`, the same for every row; a row is not measured past the
step that ended its climb.
""".replace("\n", " ")


def section(workload: Study, page: Page) -> list[str]:
    """The section's markdown lines ([] when no curve is stored)."""
    stored, mode, chart_dir, out = (
        page.stores.get(workload.name),
        page.mode,
        page.chart_dir,
        page.out,
    )
    if stored is None or not stored.data["points"]:
        return []
    made = curves(workload, stored.data["points"], mode == "full")
    if not made:
        return []
    lines = [f"## {workload.title}", "", workload.description.strip(), "", READING.strip(), ""]
    for path, caption in draw(made, mode, chart_dir):
        lines += [
            f"![{caption}]({path.relative_to(out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    lines += [
        "### The knee of each row",
        "",
        tabulate(table_rows(made), headers=HEADERS, tablefmt="github", disable_numparse=True),
        "",
        f"*What this shows:* {what_this_shows(made)}",
        "",
    ]
    entries = [e for p in stored.data["points"].values() for e in p["rows"].values()]
    lines += [f"*Ran in:* {ran_in(stored.sessions, {'rows': dict(enumerate(entries))})}", ""]
    return lines


# The rows are echo's, and so is each row's note: which load generator measured it.
RENDERING = Rendering(detail_column=echo.detail_column, detail=echo.detail, section=section)
