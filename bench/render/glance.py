"""At a glance: one table opening each report, a row per variant and style, and who leads.

Each column is one workload's headline at one fixed point, with its ratio to asyncio from the
same session (as in the tables below it): echo throughput (closed loop) and server CPU per
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
from bench import matrix
from bench.matrix import crawler, echo, micro, sleep
from bench.plan import BASELINE, Row, unavailable_variants

# Where echo's two columns are read, in words: "1 KiB × 100 connections".
ECHO_AT = (
    f"{echo.size_text(echo.HEADLINE_POINT['size'])} × "
    f"{echo.HEADLINE_POINT['connections']:,} connections"
)


@dataclass(frozen=True)
class Column:
    """One headline figure at one point of one workload."""

    header: str
    workload: str
    where: tuple[tuple[str, object], ...]  # the point: these parameter values
    metric: str
    factor: float  # displayed value = stored value × factor
    digits: int
    higher_is_better: bool
    noun: str  # for the sentence: "requests/s", "ns per switch"
    point_text: str  # for the sentence: "1 KiB × 100 connections"


COLUMNS = (
    Column(
        "echo requests/s",
        "echo",
        (("measure", None), *echo.HEADLINE_POINT.items()),  # closed loop
        "requests_per_s",
        1.0,
        0,
        True,
        "requests/s",
        f"echo throughput (closed loop), {ECHO_AT}",
    ),
    Column(
        "echo server CPU per request at fixed load (µs)",
        "echo",
        (("measure", echo.PACED), *echo.HEADLINE_POINT.items()),
        "server_cpu_us",
        1.0,
        1,
        False,
        "µs of server CPU per request",
        f"echo cost at a fixed offered load, {ECHO_AT}",
    ),
    Column(
        "switch (ns)",
        "micro",
        tuple(micro.HEADLINE_POINT.items()),
        "switch",
        1.0,
        0,
        False,
        "ns per switch",
        "micro, one trip through the loop (pyperf)",
    ),
    Column(
        "sleep CPU per sleeper (µs)",
        "sleep",
        tuple(sleep.HEADLINE_POINT.items()),
        "cpu_per_sleeper_us",
        1.0,
        1,
        False,
        "µs of CPU per sleeper",
        "sleep, 10 000 sleepers",
    ),
    Column(
        "crawl pages/s",
        "crawler",
        tuple(crawler.HEADLINE_POINT.items()),
        "pages_per_s",
        1.0,
        0,
        True,
        "pages/s",
        "crawler, 20 ms latency × 100 workers",
    ),
)
STYLE_MARK = {"callbacks": "cb", "generators": "gen", "coroutines": "co"}
CELL = re.compile(r"\b(cb|gen|co) (✅|❌|⚠️)")


def conformance_counts(path: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(variant, style) -> (properties passing, properties claimed) from the matrix file."""
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


def code_lines(variant: str, root: Path) -> int | None:
    from bench.render import codesize

    folder = root / "loops" / variant
    if not folder.is_dir():
        return None
    return codesize.count_tree(codesize.loop_files(folder))[2]


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
    return matrix.get(workload).metrics


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


def section(
    points_of: Callable[[str], list[tuple[dict, list]]], root: Path, reports: Path
) -> list[str]:
    """The markdown lines of the at-a-glance table and its sentences."""
    found = {column: find(column, points_of(column.workload)) for column in COLUMNS}
    conformance = conformance_counts(reports / "conformance.md")
    body = []
    for variant in loops.discover().values():
        lines = code_lines(variant.name, root)
        for style in variant.styles:
            row = Row(variant.name, style)
            cells = [row.label]
            for column in COLUMNS:
                rows = found[column]
                match = next((r for r in rows or () if r.row == row), None)
                cells.append(cell(column, match))
            passing, claimed = conformance.get((variant.name, style), (None, None))
            cells.append(f"{passing}/{claimed}" if claimed else "—")
            cells.append(f"{lines:,}" if lines is not None else "—")
            body.append(cells)
    unavailable = unavailable_variants()
    for name in unavailable:  # no style, no figure: a word here, the reason under the table
        size = code_lines(name, root)
        body.append(
            [name, *("unavailable" for _ in COLUMNS), "—", f"{size:,}" if size is not None else "—"]
        )
    body.sort(key=lambda cells: (not cells[0].startswith(BASELINE + " "), cells[0]))
    headers = [
        "variant · style",
        *(c.header for c in COLUMNS),
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
    text += [f"- {sentence(column, found[column])}" for column in COLUMNS]
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
