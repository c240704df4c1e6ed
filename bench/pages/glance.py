"""At a glance: one table opening each report, a row per variant and style, and who leads.

Each column is one workload's headline at one fixed point, declared by the workload's
registration (``Study.glance``, a :class:`bench.plan.Glance` each), with its ratio to asyncio
from the same session (as in the tables below it): echo throughput (closed loop) and server CPU per
request at a fixed offered load, both at 1 KiB × 100 connections, the micro switch, sleep CPU
per sleeper at 10 000 sleepers, crawl pages/s at 20 ms × 100 workers; then the conformance
properties that hold in that style (read from ``reports/conformance.md``, written by ``nox -s
conformance``) and the loop's code lines. Under the table, one sentence per workload, written
from the same figures: who leads and by how much. A row without a valid figure says why in a
word (invalid, failed, did not finish, limit, not measured), never a number that would mislead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

import loops
from bench import registry
from bench.headline import HEADLINE_AT
from bench.plan import BASELINE, USER_BASE, USER_SERVERS, YARDSTICK, Glance, Row
from bench.render import codesize
from bench.render.intervals import CONFIDENCE, MARGIN, MEDIAN_FULL, median_interval
from bench.render.rows import anchor_label
from bench.render.tables import ratio_cell, sessions_line
from bench.study import Study

ECHO_AT = HEADLINE_AT  # where echo's two columns are read: "1 KiB × 100 connections"
LEVEL = 0.03  # a lead by less than this share of the next figure is no lead


@dataclass(frozen=True)
class Column:
    """One headline figure at one point of one workload: a workload's declared Glance, with
    its Metric's digits, scale and direction."""

    header: str
    workload: str
    where: tuple[tuple[str, object], ...]  # the point: these parameter values
    metric: str
    factor: float  # displayed value = stored value × factor
    digits: int
    higher_is_better: bool
    noun: str  # for the sentence: "requests/s", "ns per switch"
    point_text: str  # for the sentence: "1 KiB × 100 connections"
    per_loop: bool = False  # one figure per loop, shown in each of its style rows (http)

    @classmethod
    def of(cls, workload: Study, glance: Glance) -> Column:
        metric = workload.metric(glance.metric)
        return cls(
            glance.header,
            workload.name,
            glance.where,
            glance.metric,
            metric.scale,
            metric.digits,
            metric.higher_is_better,
            glance.noun,
            glance.point_text,
            glance.per_loop,
        )

    def matches(self, rendered, row: Row) -> bool:
        if self.per_loop:
            return rendered.row.variant == row.variant and not row.anchor
        return rendered.row == row


def columns() -> list[Column]:
    """Every registered workload's glance columns, in their places (read when rendering, so a
    workload registered later, a test's, has its columns too)."""
    declared = [(g, w) for w in registry.STUDIES for g in w.glance]
    return [Column.of(w, g) for g, w in sorted(declared, key=lambda pair: pair[0].place)]


# The cost a design adds per request: what the user's servers are read against.
ECHO = registry.get("echo")
COST = Column.of(ECHO, next(g for g in ECHO.glance if g.metric == "server_cpu_us"))
USER_ROWS = tuple(Row(name, "native", anchor=True) for name in USER_SERVERS)
BASELINE_MEANS = (
    "**What the ratios are against**: `asyncio · coroutines` is the lab's contract adapter on "
    "asyncio "
    "(`loops/_aio.py`), whose echo server calls `loop.sock_recv` and `loop.sock_sendall`: the "
    "fair twin of every home-made loop's code, not the server an asyncio user writes. Those are "
    "the Protocol and streams servers in the last rows (grey bars in the chart), and the "
    f"*× {USER_BASE}* and *× {YARDSTICK}* columns read each design's cost per request "
    "against them, measured in the same session (*not in this session* where they were not)."
)
# The conformance matrix's marks (conformance/matrix.py: STYLE_ABBREV), read back from its file.
STYLE_MARK = {"callbacks": "cb", "generators": "gen", "coroutines": "co", "blocking": "blk"}
CELL = re.compile(r"\b(cb|gen|co|blk) (✅|❌|⚠️)")


def conformance_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(variant, style) -> (properties passing, properties claimed), from the conformance
    matrix's file."""
    if not path.exists():
        return {}
    counts: dict[tuple[str, str], list[int]] = {}
    marks = {v: k for k, v in STYLE_MARK.items()}
    variants: list[str] = []
    for line in path.read_text().splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "property":
            variants = cells[1:]
            continue
        if not variants or cells[0].startswith(("**", "-")) or len(cells) != len(variants) + 1:
            continue
        for variant, cell in zip(variants, cells[1:], strict=True):
            for mark, outcome in CELL.findall(cell):
                tally = counts.setdefault((variant, marks[mark]), [0, 0])
                tally[1] += 1
                tally[0] += outcome == "✅"
    return {key: (passing, claimed) for key, (passing, claimed) in counts.items()}


def code_lines(variant: str, root: Path) -> str:
    """The loop's code lines; a loop that is also asyncio's event loop counts that apart."""

    folder = root / "loops" / variant
    if not folder.is_dir():
        return "—"
    alone, for_asyncio = codesize.loop_and_asyncio_api(folder, root)
    return f"{alone:,} + {for_asyncio:,} asyncio API" if for_asyncio else f"{alone:,}"


def find(column: Column, points: list[tuple[dict, list]]):
    """The rendered rows of the point a column reads (None if that point is not stored)."""
    for params, rows in points:
        if all(params.get(k) == v for k, v in column.where):
            return rows
    return None


def cell(column: Column, rendered, ratio: bool = True) -> str:
    if rendered is None:
        return "—"
    if rendered.summary.status != "ok":
        return rendered.summary.status
    stat = rendered.summary.stats.get(column.metric)
    if stat is None:
        return "n/a"
    mark = ("†" if rendered.earlier else "") + ("‡" if rendered.stale else "")
    value = f"{stat.median * column.factor:,.{column.digits}f}{mark}"
    metric = next((m for m in _metrics(column.workload) if m.name == column.metric), None)
    share = rendered.ratio(metric) if metric is not None and ratio else None
    if share is None:
        return value
    # the ratio's interval, and for a row of an earlier session that session's denominator
    found = rendered.ratio_interval(metric)
    said = f"×{share:.2f}" + (f" [{found[1]:.2f}–{found[2]:.2f}]" if found else "")
    base = rendered.base()
    if rendered.earlier and base is not None and column.metric in base.stats:
        said += f" of {base.stats[column.metric].median * column.factor:,.{column.digits}f}†"
    return f"{value} ({said})"


def _metrics(workload: str):
    return registry.get(workload).metrics


def sentence(column: Column, rows: list | None) -> str:
    """Who leads at one column's point, and by how much (from the data)."""
    if rows is None:
        return f"**{_capital(column.point_text)}**: not measured in this run."
    valid = [
        r
        for r in rows
        if not r.row.anchor
        and r.summary.status == "ok"
        and column.metric in r.summary.stats
        and r.summary.stats[column.metric].median > 0
    ]
    if not valid:
        return f"**{_capital(column.point_text)}**: no row has a valid figure."

    def value(r) -> float:
        return r.summary.stats[column.metric].median * column.factor

    ranked = sorted(valid, key=value, reverse=column.higher_is_better)
    lead = ranked[0]
    text = (
        f"**{_capital(column.point_text)}**: {lead.label} leads at "
        f"{value(lead):,.{column.digits}f} {column.noun}"
    )
    metric = next(m for m in _metrics(column.workload) if m.name == column.metric)
    share = lead.ratio(metric)
    if share is not None and lead.row.variant != BASELINE and not lead.earlier:
        text += f" (×{share:.2f} {lead.base_name}, same session)"
    if len(ranked) > 1:
        runner_up = ranked[1]
        gap = value(lead) / value(runner_up)
        gap = gap if column.higher_is_better else 1 / gap
        if gap < 1 + LEVEL:
            text += f", its median within {LEVEL:.0%} of the next, {runner_up.label}'s"
        else:
            text += f", {gap:.2f}× better than the next, {runner_up.label}"
        if runner_up.session != lead.session:
            # Absolute figures from two sessions on a shared machine compare less well than
            # ratios to a same-session asyncio: say so rather than let the gap pass as exact.
            text += " (the two measured in different sessions: the gap is less sure)"
    unfigured = [r for r in rows if not r.row.anchor and r.summary.status != "ok"]
    if unfigured:
        text += f"; {len(unfigured)} row(s) without a valid figure"
    return text + "."


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _against(rendered, server) -> str:
    """A row's cost per request as a multiple of a user's server's (× 1.00 = the same), only
    where both were measured in the same session ("other session" where not: the machine drifts
    between sessions)."""
    if rendered is None or server is None or rendered.summary.status != "ok":
        return "—"
    if rendered.session != server.session:
        return "other session"
    mine = rendered.summary.stats.get(COST.metric)
    theirs = server.summary.stats.get(COST.metric) if server.summary.status == "ok" else None
    if mine is None or theirs is None or theirs.median <= 0:
        return "—"
    return f"×{mine.median / theirs.median:.2f}"


ANCHOR_LINES = {
    USER_BASE: "asyncio's `Protocol` server, what asyncio users write: the default base",
    "asyncio-streams": "asyncio's streams server (`start_server`, reader and writer)",
    "uvloop-protocol": "the same `Protocol` server on uvloop: the C anchor",
    "uvloop-streams": "the streams server on uvloop",
    "trio-streams": "trio's `serve_tcp` with streams",
    "curio-sockets": "curio's socket wrappers, one task per client, in a TaskGroup",
    "selectors-floor": "a bare `selectors` loop, one callback per ready socket: the Python floor",
    "handlers-cookbook": "the handlers loop in its own idiom (the Python Cookbook's recipe 11.12)",
}
KIND_TITLES = {
    "reference": "reference loops (adapters of production loops)",
    "home-made": "home-made loops (this lab's designs)",
    "anchor": "anchor servers (what a user writes instead, in each library's own API)",
}


def definitions(root: Path, link: str = "../loops/") -> list[str]:
    """One line per design, grouped home-made, reference, anchors, each linking its README."""
    lines = []
    variants = loops.discover().values()
    for kind in ("home-made", "reference"):
        lines.append(f"- *{KIND_TITLES[kind]}*:")
        for v in variants:
            if ("reference" if v.reference else "home-made") != kind or not v.available:
                continue
            readme = root / "loops" / v.name / "README.md"
            name = f"[{v.name}]({link}{v.name}/README.md)" if readme.exists() else f"`{v.name}`"
            lines.append(f"  - {name}: {v.summary}.")
    lines.append(f"- *{KIND_TITLES['anchor']}*, in `workloads/echo/native`:")
    lines += [f"  - `{name}`: {what}." for name, what in ANCHOR_LINES.items()]
    return lines


def _ordered_rows() -> list[Row]:
    """Every available variant·style, then the user's servers; reference rows first (asyncio
    leading), then home-made, then the anchors."""
    rows = [
        Row(v.name, style) for v in loops.discover().values() if v.available for style in v.styles
    ]
    rows.sort(key=lambda r: (r.kind != "reference", r.variant != BASELINE, r.variant, r.style))
    return rows + list(USER_ROWS)


def _grouped_body(rows: list[Row], cells_for) -> list[list[str]]:
    """Rows under a label row per kind (reference loops, home-made loops, anchor servers)."""
    body, kind = [], None
    for row in rows:
        cells = cells_for(row)
        if row.kind != kind:
            kind = row.kind
            body.append([f"**{KIND_TITLES[kind].split(' (')[0]}**", *([""] * (len(cells) - 1))])
        body.append(cells)
    return body


def _echo_body(found: dict, conformance: dict, root: Path) -> tuple[list[str], list[list[str]]]:
    """The echo table: throughput and cost against the servers users write, same session only,
    each ratio with its interval and word; then conformance and code lines (8 columns)."""

    throughput = next(c for c in found if c.workload == "echo" and c != COST)
    metrics = {c: registry.get("echo").metric(c.metric) for c in (throughput, COST)}
    headers = [
        "variant · style",
        throughput.header,
        f"× {USER_BASE}",
        COST.header,
        f"× {USER_BASE} ",
        f"× {YARDSTICK}",
        "conformance (holding / claimed)",
        "code lines",
    ]

    def cells_for(row: Row) -> list[str]:
        got = {c: next((r for r in found[c] or () if c.matches(r, row)), None) for c in metrics}
        cells = [anchor_label(row)]
        for column, which in ((throughput, (USER_BASE,)), (COST, (USER_BASE, YARDSTICK))):
            rendered = got[column]
            cells.append(cell(column, rendered, ratio=False))
            for name in which:
                ok = rendered is not None and rendered.summary.status == "ok"
                cells.append(ratio_cell(rendered, metrics[column], name) if ok else "—")
        if row.anchor:
            return [*cells, "—", "—"]
        passing, claimed = conformance.get((row.variant, row.style), (None, None))
        return [*cells, f"{passing}/{claimed}" if claimed else "—", code_lines(row.variant, root)]

    return headers, _grouped_body(_ordered_rows(), cells_for)


def _other_body(found: dict) -> tuple[list[str], list[list[str]]]:
    """The other workloads' headlines, each with its ratio to asyncio (same style and session)."""
    others = [c for c in found if c.workload != "echo"]
    headers = ["variant · style", *(c.header for c in others)]

    def cells_for(row: Row) -> list[str]:
        return [
            row.label,
            *(
                cell(c, next((r for r in found[c] or () if c.matches(r, row)), None))
                for c in others
            ),
        ]

    rows = [row for row in _ordered_rows() if not row.anchor]
    return headers, _grouped_body(rows, cells_for)


def section(
    points_of: Callable[[str], list[tuple[dict, list]]],
    root: Path,
    reports: Path,
    chart: Path | None = None,
    sessions: dict[str, dict] | None = None,
) -> list[str]:
    """The markdown lines of the at-a-glance table, its chart (drawn to `chart`), sentences;
    under each table, the sessions its rows ran in (`sessions`, every study's, by name)."""

    def ran_in(echo: bool) -> list[str]:
        names = [
            rendered.session
            for column, rows in found.items()
            if (column.workload == "echo") == echo
            for rendered in rows or ()
        ]
        return sessions_line(sessions or {}, names)

    found = {column: find(column, points_of(column.workload)) for column in columns()}
    conformance = conformance_counts(reports / "conformance.md")
    echo_headers, echo_body = _echo_body(found, conformance, root)
    other_headers, other_body = _other_body(found)
    text = [
        "## At a glance",
        "",
        "The designs, one line each (home-made first; each links its README):",
        "",
        *definitions(root),
        "",
        f"### Against what users run: echo, {ECHO_AT}",
        "",
        f"Each ratio is to {USER_BASE} (and {YARDSTICK}, the C anchor) measured in the row's "
        f"own session, with its {CONFIDENCE:.0%} interval within that session "
        "(bench/uncertainty.py) and what it says: faster, slower, cheaper or dearer where it "
        f"excludes 1, within ±{MARGIN:.0%}, or can't tell (with the smallest difference that "
        "could have shown); *not in this session* where that server was not measured with the "
        "row. A word instead of a figure says why there is none; "
        "† and ‡ mark an earlier session and changed code, as in the tables below. "
        "Conformance counts the properties that pass over those claimed in that style "
        "([conformance.md](conformance.md)); code lines leave out comments and docstrings.",
        "",
        tabulate(echo_body, headers=echo_headers, tablefmt="github", disable_numparse=True),
        "",
        *ran_in(echo=True),
        "### The other workloads",
        "",
        "Each figure with its ratio to asyncio in the same style (its coroutines row where it "
        f"has none) from the same session, with its {CONFIDENCE:.0%} interval within that "
        "session; a row from an "
        "earlier session (†) prints that session's asyncio figure: above 1 is more.",
        "",
        tabulate(other_body, headers=other_headers, tablefmt="github", disable_numparse=True),
        "",
        *ran_in(echo=False),
    ]
    if chart is not None and draw_cost_chart(found[COST] or [], chart):
        text += [
            f"![{_capital(COST.point_text)}: server CPU per request](charts/{chart.name})",
            "",
        ]
    if chart is not None:
        code_chart = chart.with_name(chart.name.replace("echo-cost", "cost-code"))
        if draw_cost_against_code(found[COST] or [], conformance, root, code_chart):
            text += [f"![Cost against code lines](charts/{code_chart.name})", ""]
        latency = chart.with_name(chart.name.replace("echo-cost", "echo-latency"))
        if draw_latency_chart(found[COST] or [], latency):
            text += [f"![Latency percentiles at the fixed load](charts/{latency.name})", ""]
    text += [f"- {BASELINE_MEANS}", f"- {against_sentence(found[COST])}"]
    text += [f"- {sentence(column, found[column])}" for column in found]
    holding = [
        (variant, style)
        for (variant, style), (passing, claimed) in conformance.items()
        if passing == claimed
    ]
    if conformance:
        text.append(
            f"- **Conformance**: every claimed property holds in {len(holding)} of "
            f"{len(conformance)} variant·style rows (a known deviation counts as not holding)."
        )
    text.append("")
    return text


def against_sentence(rows: list | None) -> str:
    """How the designs stand against the servers a user would write instead (from the data)."""
    head = f"**Against what you would write instead** ({COST.point_text})"
    figures = {r.row: r.summary.stats[COST.metric].median for r in rows or () if _valid(r)}
    user = {row.variant: figures.get(row) for row in USER_ROWS}
    designs = {row: v for row, v in figures.items() if not row.anchor}
    if not designs or user[USER_BASE] is None or user[YARDSTICK] is None:
        return f"{head}: not measured in this run."
    sessions = {r.row: r.session for r in rows or ()}
    user_sessions = {sessions[row] for row in USER_ROWS if row in sessions}
    designs = {row: v for row, v in designs.items() if sessions[row] in user_sessions}
    if len(user_sessions) != 1 or not designs:  # a comparison is made within one session only
        return f"{head}: the servers and the designs were not measured in one session."
    cheaper = [row for row, v in designs.items() if v < user[USER_BASE]]
    kinds = {r.row: r.kind for r in rows or ()}
    home_made = {row: v for row, v in designs.items() if kinds[row] == "home-made"}
    best = min(home_made or designs, key=(home_made or designs).get)
    return (
        f"{head}: {len(cheaper)} of the {len(designs)} variant·style rows measured in the "
        f"session of these servers cost less server CPU per "
        f"request than {USER_BASE} ({user[USER_BASE]:.1f} µs); the cheapest"
        + (" home-made design, " if home_made else ", ")
        + f"{best.label}, costs {designs[best]:.1f} µs, ×{designs[best] / user[YARDSTICK]:.2f} "
        f"{YARDSTICK}'s {user[YARDSTICK]:.1f} µs."
    )


def _valid(rendered) -> bool:
    return rendered.summary.status == "ok" and COST.metric in rendered.summary.stats


KIND_COLOURS = {"home-made": "#1f5faa", "reference": "#7a9cc6", "anchor": "#9a9a9a"}


def _median_interval(r, metric: str) -> tuple[float, float]:

    values = r.summary.values.get(metric) or [r.summary.stats[metric].median]
    return median_interval(values)


def draw_cost_chart(rows: list, path: Path) -> bool:
    """Bars of server CPU per request at the fixed load, cheapest on top, coloured by kind
    (home-made, reference, anchor: a legend says which), each with its value and its median's
    interval from order statistics as an error bar, and a labelled dashed line at each of the two
    servers users write (asyncio-protocol, uvloop-protocol). False if there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    # Here, as matplotlib above: charts loads matplotlib at its top, and the text needs neither.
    from bench.render.charts import LABEL_STYLE

    wanted = [r for r in rows if _valid(r) and (not r.row.anchor or r.row in USER_ROWS)]
    if not wanted:
        return False
    wanted.sort(key=lambda r: r.summary.stats[COST.metric].median, reverse=True)
    values = [r.summary.stats[COST.metric].median for r in wanted]
    spans = [_median_interval(r, COST.metric) for r in wanted]
    errors = [
        [v - low for v, (low, _) in zip(values, spans, strict=True)],
        [high - v for v, (_, high) in zip(values, spans, strict=True)],
    ]
    figure, axis = plt.subplots(figsize=(10, 0.34 * len(wanted) + 1.8))
    colours = [KIND_COLOURS[r.kind] for r in wanted]
    labels = [r.label for r in wanted]
    axis.barh(labels, values, color=colours, xerr=errors, ecolor="#333333", capsize=2)
    for y, (value, (_, high)) in enumerate(zip(values, spans, strict=True)):
        axis.text(high, y, f" {value:.1f}", va="center", fontsize=8)
    for r, value in zip(wanted, values, strict=True):
        if r.row.variant in (USER_BASE, YARDSTICK):
            axis.axvline(value, color="#555555", linestyle="--", linewidth=0.8)
            axis.text(
                value, len(wanted) - 0.4, f" {r.row.variant}", rotation=90, va="top",
                fontsize=7, color="#555555",
            )  # fmt: skip
    for label, r in zip(axis.get_yticklabels(), wanted, strict=True):
        label.set(**LABEL_STYLE[r.row.kind])  # as in every chart: bold for home-made loops
    axis.legend(
        handles=[Patch(color=c, label=k) for k, c in KIND_COLOURS.items()],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        fontsize=8,
    )
    axis.set_xlim(0, max(high for _, high in spans) * 1.15)
    axis.set_xlabel(
        "server CPU per request at a fixed offered load (µs, lower is cheaper)\n"
        "bar: median of the repetitions; whisker: its interval from order statistics "
        f"({CONFIDENCE:.0%} from {MEDIAN_FULL} repetitions up; the range below); "
        "dashed: the servers users write"
    )
    axis.set_title(f"What each design costs, {ECHO_AT}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def draw_cost_against_code(rows: list, conformance: dict, root: Path, path: Path) -> bool:
    """The trade-off a chooser faces: each loop·style's cost per request at the fixed load
    against its loop's code lines, a filled marker where every claimed conformance property
    holds in that style and a hollow one where some do not. False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = []
    for r in rows:
        if r.row.anchor or not _valid(r):
            continue
        lines = code_lines(r.row.variant, root).split(" ")[0].replace(",", "")
        if not lines.isdigit():
            continue
        passing, claimed = conformance.get((r.row.variant, r.row.style), (None, None))
        points.append((int(lines), r.summary.stats[COST.metric].median, r, passing, claimed))
    if not points:
        return False
    figure, axis = plt.subplots(figsize=(8, 5))
    for lines, cost, r, passing, claimed in points:
        holds = claimed is not None and passing == claimed
        colour = KIND_COLOURS[r.kind]
        axis.scatter(
            lines, cost, s=50, color=colour if holds else "white", edgecolors=colour, zorder=3
        )
        note = f" {r.label}" + (f" ({passing}/{claimed})" if claimed else "")
        axis.annotate(note, (lines, cost), fontsize=7, xytext=(3, 2), textcoords="offset points")
    axis.set_xscale("log")
    from matplotlib.ticker import ScalarFormatter

    axis.xaxis.set_major_formatter(ScalarFormatter())
    axis.xaxis.set_minor_formatter(ScalarFormatter())
    axis.tick_params(axis="x", which="minor", labelsize=7)
    axis.set_xlabel("code lines of the loop (log scale; comments and docstrings left out)")
    axis.set_ylabel("server CPU per echo request at the fixed load (µs)")
    axis.set_title(
        "Cost against code: filled, every claimed conformance property holds; hollow, not all",
        fontsize=9,
    )
    axis.grid(True, which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


LATENCIES = (("latency_p50_ms", "p50"), ("latency_p99_ms", "p99"), ("latency_p999_ms", "p99.9"))


def draw_latency_chart(rows: list, path: Path) -> bool:
    """Latency percentiles (p50, p99, p99.9, from each request's scheduled time) of every row at
    the fixed offered load, one marker per percentile, rows sorted by p99, log axis with its
    numbers. False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Here, as matplotlib above: charts loads matplotlib at its top, and the text needs neither.
    from bench.render.charts import LABEL_STYLE

    wanted = [r for r in rows if _valid(r) and all(m in r.summary.stats for m, _ in LATENCIES)]
    if not wanted:
        return False
    wanted.sort(key=lambda r: r.summary.stats["latency_p99_ms"].median, reverse=True)
    figure, axis = plt.subplots(figsize=(10, 0.34 * len(wanted) + 1.8))
    ys = range(len(wanted))
    for (metric, name), marker in zip(LATENCIES, ("o", "s", "^"), strict=True):
        axis.scatter(
            [r.summary.stats[metric].median for r in wanted], ys, marker=marker, label=name
        )
    axis.set_yticks(list(ys), [r.label for r in wanted])
    for label, r in zip(axis.get_yticklabels(), wanted, strict=True):
        label.set(**LABEL_STYLE[r.row.kind])
    axis.set_xscale("log")
    from matplotlib.ticker import ScalarFormatter

    axis.xaxis.set_major_formatter(ScalarFormatter())
    axis.xaxis.set_minor_formatter(ScalarFormatter())
    axis.tick_params(axis="x", which="minor", labelsize=7)
    axis.set_xlabel(
        "latency from each request's scheduled time (ms, log scale)\n"
        "each marker: the median of the row's repetitions"
    )
    axis.set_title(f"Latency percentiles at the fixed offered load, {ECHO_AT}", fontsize=10)
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axis.grid(True, axis="x", which="both", alpha=0.3)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True
