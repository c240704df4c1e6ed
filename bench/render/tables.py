"""One point's table and the sentences under it ("What this shows"), from its rendered rows.

The table leads with the point's headline figure, its [min–max] and its ratio to the
baseline, then every other figure the workload shows there with its ratio. The sentences are
written from the same figures: best and worst, the best home-made loop, what the workload adds
(:attr:`bench.workload.Workload.observations`), then every row without a figure and why.
"""

from __future__ import annotations

from tabulate import tabulate

from bench.plan import BASELINE, Metric
from bench.render.rows import RenderedRow
from bench.summary import SATURATION
from bench.workload import Workload


def number(value: float, metric: Metric) -> str:
    return f"{value * metric.scale:,.{metric.digits}f}"


def times(value: float | None) -> str:
    return "" if value is None else f"×{value:.2f}"


# -- the table -------------------------------------------------------------------------------


def table(metrics: list[Metric], rows: list[RenderedRow], detail: str | None = None) -> str:
    """The markdown table of one point: the headline with min-max, then every other figure.

    With `detail` (a workload's detail_column, e.g. echo's "generator"), a column of that name holds
    each row's detail note.
    """
    headline, *others = metrics
    extra = [detail] if detail else []
    headers = [
        "variant · style",
        f"{headline.label} median [min–max]",
        "× asyncio",
        *(m.label for m in others),
        *extra,
        "reps",
    ]
    body = [table_row(r, headline, others, detail) for r in rows]
    align = ("left", "right", "right", *("right" for _ in others), *(["left"] * len(extra)))
    align += ("right",)
    return tabulate(body, headers=headers, tablefmt="github", colalign=align)


def table_row(
    r: RenderedRow, headline: Metric, others: list[Metric], detail: str | None
) -> list[str]:
    """One row's cells: its figures, or its status and why it has none."""
    mark = ("†" if r.earlier else "") + ("‡" if r.stale else "")
    label = f"{r.label}{mark}"
    reps = f"{r.summary.valid}/{r.summary.total}"
    if r.summary.status == "ok" and r.summary.valid < r.summary.total:
        reps += " §"  # some repetitions saturated the peer: the figure may understate
    if r.summary.status != "ok":
        why = r.summary.reason.splitlines()[0] if r.summary.reason else r.summary.status
        why = why.replace("|", "/")[:120]
        said = f"**{r.summary.status}**: {why}"
        if r.summary.status == "unavailable":  # "unavailable on Python 3.12"; why: under the table
            said, reps = f"**{r.summary.reason.partition(': ')[0]}**", "—"
        return [
            label,
            said,
            "",
            *("—" for _ in others),
            *([r.summary.detail or "—"] if detail else []),
            reps,
        ]
    cells = [label, *headline_cells(r, headline)]
    for metric in others:
        stat = r.summary.stats.get(metric.name)
        if metric.name in r.summary.errors:
            cells.append("**failed**")
        elif stat is None:
            cells.append("n/a")
        else:
            cells.append(f"{number(stat.median, metric)} {times(r.ratio(metric))}".strip())
    if detail:
        cells.append(r.summary.detail or "—")
    cells.append(reps)
    return cells


def headline_cells(r: RenderedRow, headline: Metric) -> list[str]:
    """The headline's median [min–max] and its ratio to the baseline."""
    stat = r.summary.stats.get(headline.name)
    if headline.name in r.summary.errors:
        return ["**failed**", ""]
    if stat is None:
        return ["n/a", ""]
    if r.summary.valid == 1:  # one repetition (pyperf repeats inside it): no range
        return [number(stat.median, headline), times(r.ratio(headline))]
    return [
        f"{number(stat.median, headline)} [{number(stat.low, headline)}–"
        f"{number(stat.high, headline)}]",
        times(r.ratio(headline)),
    ]


# -- what this shows -------------------------------------------------------------------------


def what_this_shows(workload: Workload, params: dict, rows: list[RenderedRow]) -> str:
    """One or two sentences about a table, from its figures."""
    headline = workload.columns_at(params)[0]
    sentences = ranking(headline, rows)
    if sentences:
        sentences += workload.observations(params, rows)
    sentences += without_figures(rows)
    if not sentences:
        sentences.append("No row has a figure at this point.")
    return " ".join(sentences)


def ranking(headline: Metric, rows: list[RenderedRow]) -> list[str]:
    """Best and worst on the headline, and the best home-made loop ([] if no row has it)."""
    valid = [r for r in rows if r.summary.status == "ok" and headline.name in r.summary.stats]
    if not valid:
        return []

    def goodness(r: RenderedRow) -> float:
        value = r.summary.stats[headline.name].median
        return value if headline.higher_is_better else -value

    ranked = sorted(valid, key=goodness, reverse=True)

    def describe(r: RenderedRow) -> str:
        stat = r.summary.stats[headline.name]
        share = r.ratio(headline)
        against = f", {times(share)} asyncio" if share is not None else ""
        return f"{r.label} ({number(stat.median, headline)}{against})"

    word = "highest" if headline.higher_is_better else "lowest"
    sentences = [
        f"{headline.short}: {word} {describe(ranked[0])}, "
        f"{'lowest' if headline.higher_is_better else 'highest'} {describe(ranked[-1])}."
    ]
    home = [r for r in ranked if r.kind == "home-made"]
    if home:
        sentences.append(f"Best home-made loop: {describe(home[0])}.")
    return sentences


def without_figures(rows: list[RenderedRow]) -> list[str]:
    """Every row without a figure, or with fewer valid repetitions, and why."""
    sentences = []
    no_baseline = [
        r.label
        for r in rows
        if r.row.variant == BASELINE and not r.row.anchor and r.summary.status != "ok"
    ]
    if no_baseline:
        sentences.append(
            f"{' and '.join(no_baseline)} has no valid figure here, so the rows compared to it "
            "have no ratio."
        )
    capped = [
        r.label for r in rows if r.summary.status == "ok" and r.summary.valid < r.summary.total
    ]
    if capped:
        sentences.append(
            f"§ {', '.join(capped)}: some repetitions saturated the peer (or, at a fixed "
            "offered load, fell behind it) and were left out, so the figure may understate "
            "what the loop can do."
        )
    sentences += invalid_rows(rows)
    return sentences + stopped_rows(rows)


def invalid_rows(rows: list[RenderedRow]) -> list[str]:
    """Rows whose peer saturated (with both costs, where recorded), and other invalid rows."""
    sentences = []
    saturated = {
        r.label: r.summary.reason.partition("): ")[2]
        for r in rows
        if r.summary.status == "invalid" and "saturated its core" in r.summary.reason
    }
    if saturated:
        sentences.append(
            "No figure for "
            + ", ".join(
                f"{label} ({costs})" if costs else label for label, costs in saturated.items()
            )
            + f": the peer process saturated its core (≥ {SATURATION:.0%}), so the number would "
            "measure the peer, not the loop."
        )
    for r in rows:
        if r.summary.status == "invalid" and r.label not in saturated:
            sentences.append(f"No figure for {r.label}: {r.summary.reason}.")
    return sentences


def stopped_rows(rows: list[RenderedRow]) -> list[str]:
    """Rows that failed, did not finish, hit a stated limit, are not measured, or lack a figure."""
    sentences = []
    failed = [r.label for r in rows if r.summary.status == "failed"]
    if failed:
        sentences.append(f"Failed: {', '.join(failed)} (reason in the table).")
    unfinished = [r.label for r in rows if r.summary.status == "did not finish"]
    if unfinished:
        sentences.append(
            f"Did not finish within the time cap: {', '.join(unfinished)} (a result: the cost "
            "grew past what the cap allows; see the scale section)."
        )
    limited = [r for r in rows if r.summary.status == "limit"]
    if limited:
        sentences.append(
            f"At a stated limit: {', '.join(r.label for r in limited)} "
            f"({limited[0].summary.reason})."
        )
    unmeasured = [r.label for r in rows if r.summary.status == "not measured"]
    if unmeasured:
        sentences.append(f"Not measured yet: {', '.join(unmeasured)}.")
    for r in rows:
        if r.summary.status == "unavailable":
            sentences.append(f"{r.label}: {r.summary.reason}.")
    for r in rows:
        for name, why in r.summary.errors.items():
            sentences.append(f"{r.label}: {name} failed: {why}.")
    return sentences
