"""At a glance: one table opening each report, a row per variant and style, and who leads.

Each column is one workload's headline at one fixed point, declared by the workload's
registration (``Workload.glance``, a :class:`bench.plan.Glance` each), with its ratio to asyncio
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
from bench.plan import BASELINE, USER_SERVERS, YARDSTICK, Glance, Row, unavailable_variants
from bench.registry import echo
from bench.render.rows import anchor_label
from bench.workload import Workload

ECHO_AT = echo.HEADLINE_AT  # where echo's two columns are read: "1 KiB × 100 connections"


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
    def of(cls, workload: Workload, glance: Glance) -> Column:
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
    declared = [(g, w) for w in registry.WORKLOADS for g in w.glance]
    return [Column.of(w, g) for g, w in sorted(declared, key=lambda pair: pair[0].place)]


# The cost a design adds per request: what the user's servers are read against.
COST = Column.of(echo.WORKLOAD, echo.COST_GLANCE)
USER_ROWS = tuple(Row(name, "native", anchor=True) for name in USER_SERVERS)
USER_BASELINE, USER_BEST = "asyncio-protocol", YARDSTICK  # the columns "× <server>"
BASELINE_MEANS = (
    "**What × asyncio means here**: `asyncio · coroutines` is the lab's contract on asyncio "
    "(`loops/_aio.py`), whose echo server calls `loop.sock_recv` and `loop.sock_sendall`: the "
    "fair twin of every home-made loop's code, not the server an asyncio user writes. Those are "
    "the Protocol and streams servers in the last rows (grey bars in the chart), and the "
    f"*× {USER_BASELINE}* and *× {USER_BEST}* columns read each design's cost per request "
    "against them, measured in the same session (*other session* where they were not)."
)
STYLE_MARK = {"callbacks": "cb", "generators": "gen", "coroutines": "co"}
CELL = re.compile(r"\b(cb|gen|co) (✅|❌|⚠️)")


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
    from bench.render import codesize

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


def cell(column: Column, rendered) -> str:
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
    share = rendered.ratio(metric) if metric is not None else None
    return f"{value} (×{share:.2f})" if share is not None else value


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
    if share is not None and lead.row.variant != BASELINE:
        text += f" (×{share:.2f} asyncio)"
    if len(ranked) > 1:
        runner_up = ranked[1]
        gap = value(lead) / value(runner_up)
        gap = gap if column.higher_is_better else 1 / gap
        if gap < 1.03:
            text += f", level with the next, {runner_up.label} (within 3%)"
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
    where both were measured in the same session ("other session" where not: issue 36)."""
    if rendered is None or server is None or rendered.summary.status != "ok":
        return "—"
    if rendered.session != server.session:
        return "other session"
    mine = rendered.summary.stats.get(COST.metric)
    theirs = server.summary.stats.get(COST.metric) if server.summary.status == "ok" else None
    if mine is None or theirs is None or theirs.median <= 0:
        return "—"
    return f"×{mine.median / theirs.median:.2f}"


def _body(found: dict, conformance: dict, root: Path) -> list[list[str]]:
    """The table's rows: every variant·style, the unavailable variants, the user's servers."""
    cost_rows = found[COST] or []
    servers = {r.row.variant: r for r in cost_rows if r.row in USER_ROWS}

    def cells_for(row: Row) -> list[str]:
        cells = [anchor_label(row)]
        for column in found:
            match = next((r for r in found[column] or () if column.matches(r, row)), None)
            cells.append(cell(column, match))
            if column == COST:
                cells += [_against(match, servers.get(name)) for name in (USER_BASELINE, USER_BEST)]
        return cells

    body = []
    for variant in loops.discover().values():
        lines = code_lines(variant.name, root)
        for style in variant.styles:
            passing, claimed = conformance.get((variant.name, style), (None, None))
            body.append(
                [
                    *cells_for(Row(variant.name, style)),
                    f"{passing}/{claimed}" if claimed else "—",
                    lines,
                ]
            )
    for name in unavailable_variants():  # no style, no figure: the reason under the table
        size = code_lines(name, root)
        words = ["unavailable"] * (len(found) + 2)
        body.append([name, *words, "—", size])
    body.sort(key=lambda cells: (not cells[0].startswith(BASELINE + " "), cells[0]))
    return body + [[*cells_for(row), "—", "—"] for row in USER_ROWS]


def section(
    points_of: Callable[[str], list[tuple[dict, list]]],
    root: Path,
    reports: Path,
    chart: Path | None = None,
) -> list[str]:
    """The markdown lines of the at-a-glance table, its chart (drawn to `chart`), sentences."""
    found = {column: find(column, points_of(column.workload)) for column in columns()}
    conformance = conformance_counts(reports / "conformance.md")
    body = _body(found, conformance, root)
    unavailable = unavailable_variants()
    headers = [
        "variant · style",
        *(
            header
            for c in found
            for header in (
                (c.header, f"× {USER_BASELINE}", f"× {USER_BEST}") if c == COST else (c.header,)
            )
        ),
        "conformance (holding / claimed)",
        "code lines",
    ]
    text = [
        "## At a glance",
        "",
        "Each loop's headline figures, each with its ratio to asyncio from the same session "
        "(×1.00 = asyncio; above 1 is more, which is better for throughput and worse for cost). "
        "A word instead of a figure says why there is none (see the workload's table); "
        "† and ‡ mark a figure as in those tables (an earlier session; code changed since). "
        "Conformance counts the properties that pass over those claimed in that style "
        "([conformance.md](conformance.md)); code lines leave out comments and docstrings.",
        "",
        tabulate(body, headers=headers, tablefmt="github", disable_numparse=True),
        "",
    ]
    if chart is not None and draw_cost_chart(found[COST] or [], chart):
        text += [
            f"![{_capital(COST.point_text)}: server CPU per request](charts/{chart.name})",
            "",
        ]
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
    text += [f"- **{name}**: {why}." for name, why in unavailable.items()]
    text.append("")
    return text


def against_sentence(rows: list | None) -> str:
    """How the designs stand against the servers a user would write instead (from the data)."""
    head = f"**Against what you would write instead** ({COST.point_text})"
    figures = {r.row: r.summary.stats[COST.metric].median for r in rows or () if _valid(r)}
    user = {row.variant: figures.get(row) for row in USER_ROWS}
    designs = {row: v for row, v in figures.items() if not row.anchor}
    if not designs or user[USER_BASELINE] is None or user[USER_BEST] is None:
        return f"{head}: not measured in this run."
    sessions = {r.row: r.session for r in rows or ()}
    anchors = {sessions[row] for row in USER_ROWS if row in sessions}
    designs = {row: v for row, v in designs.items() if sessions[row] in anchors}
    if len(anchors) != 1 or not designs:  # a comparison is made within one session only
        return f"{head}: the servers and the designs were not measured in one session."
    cheaper = [row for row, v in designs.items() if v < user[USER_BASELINE]]
    kinds = {r.row: r.kind for r in rows or ()}
    home_made = {row: v for row, v in designs.items() if kinds[row] == "home-made"}
    best = min(home_made or designs, key=(home_made or designs).get)
    return (
        f"{head}: {len(cheaper)} of the {len(designs)} variant·style rows measured in the "
        f"session of these servers cost less server CPU per "
        f"request than {USER_BASELINE} ({user[USER_BASELINE]:.1f} µs); the cheapest"
        + (" home-made design, " if home_made else ", ")
        + f"{best.label}, costs {designs[best]:.1f} µs, ×{designs[best] / user[USER_BEST]:.2f} "
        f"{USER_BEST}'s {user[USER_BEST]:.1f} µs."
    )


def _valid(rendered) -> bool:
    return rendered.summary.status == "ok" and COST.metric in rendered.summary.stats


def draw_cost_chart(rows: list, path: Path) -> bool:
    """Bars of server CPU per request at the fixed load, cheapest on top, the user's servers
    in grey with a dashed line at each of the two the columns read against; row labels as in
    every chart (bold home-made, italic anchors). False if there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.render.charts import LABEL_STYLE

    wanted = [r for r in rows if _valid(r) and (not r.row.anchor or r.row in USER_ROWS)]
    if not wanted:
        return False
    wanted.sort(key=lambda r: r.summary.stats[COST.metric].median, reverse=True)
    values = [r.summary.stats[COST.metric].median for r in wanted]
    figure, axis = plt.subplots(figsize=(8, 0.32 * len(wanted) + 1.2))
    colours = ["#9a9a9a" if r.row.anchor else "#1f5faa" for r in wanted]
    axis.barh([r.label for r in wanted], values, color=colours)
    for r, value in zip(wanted, values, strict=True):
        if r.row.variant in (USER_BASELINE, USER_BEST):
            axis.axvline(value, color="#555555", linestyle="--", linewidth=0.8)
    for label, r in zip(axis.get_yticklabels(), wanted, strict=True):
        label.set(**LABEL_STYLE[r.row.kind])  # as in every chart: bold for home-made loops
    axis.set_xlabel("server CPU per request at a fixed offered load (µs, lower is cheaper)")
    axis.set_title(f"What each design costs, {ECHO_AT}", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True
