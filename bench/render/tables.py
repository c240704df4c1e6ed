"""One point's table and the sentences under it ("What this shows"), from its rendered rows.

The table leads with the point's headline figure, its [min–max] and its ratio to the
baseline, then every other figure the study shows there with its ratio. The sentences are
written from the same figures: best and worst, the best home-made loop, what the study adds
(:attr:`bench.study.Study.observations`), then every row without a figure and why.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

from tabulate import tabulate

from bench.plan import BASELINE, Metric
from bench.render.intervals import CONFIDENCE, word
from bench.render.rows import RenderedRow
from bench.study import Study
from bench.summary import SATURATION
from machine import environment


def number(value: float, metric: Metric) -> str:
    return f"{value * metric.scale:,.{metric.digits}f}"


def times(value: float | None) -> str:
    return "" if value is None else f"×{value:.2f}"


# -- the table -------------------------------------------------------------------------------

MAX_COLUMNS = 8  # no table wider: the figures past it go to a detail table under it
GROUPS = {
    "reference": "reference loops",
    "home-made": "home-made loops",
    "anchor": "anchor servers",
}


def base_names(rows: list[RenderedRow]) -> list[str]:
    """The denominators a table's ratio columns name: the study's declared ones, else
    asyncio (the same style's row)."""
    for r in rows:
        if r.bases:
            return list(r.bases)
    return [BASELINE]


def table(metrics: list[Metric], rows: list[RenderedRow], detail: str | None = None) -> str:
    """The markdown tables of one point, each at most MAX_COLUMNS wide.

    The first: the headline's median [min–max], its ratio to each declared denominator from the
    row's own session with its interval and its word (faster, slower, cheaper, dearer, within
    ±5% or can't tell), the figures that still fit, and the repetitions. The rest of the
    figures (and, with `detail`, echo's "generator" column) in detail tables under it, rows in
    the same order.
    Rows are grouped under a label per kind: reference loops, home-made loops, anchor servers.
    """
    headline, *others = metrics
    bases = base_names(rows)
    room = MAX_COLUMNS - 3 - len(bases)  # label, headline, reps, one column per denominator
    first, rest = others[:room], others[room:]
    # One repetition a row (pyperf repeats inside it): no range; an interval only where the
    # harness gives each figure's spread.
    single = all(r.summary.valid <= 1 for r in rows)
    spread = any(headline.name in r.summary.relative_error for r in rows)
    headers = [
        "variant · style",
        headline.label if single else f"{headline.label} median [min–max]",
        *(
            f"× {name}"
            if single and not spread
            else f"× {name} [{CONFIDENCE:.0%} within its session]"
            for name in bases
        ),
        *(m.label for m in first),
        "reps",
    ]
    body = []
    for group, members in grouped(rows):
        if group:
            body.append([f"**{group}**", *("" for _ in headers[1:])])
        body += [main_row(r, headline, first, bases) for r in members]
    align = ("left", "right", *("right" for _ in bases), *("right" for _ in first), "right")
    out = [tabulate(body, headers=headers, tablefmt="github", colalign=align)]
    extra = [*rest, *([detail] if detail else [])]
    step = MAX_COLUMNS - 1
    for start in range(0, len(extra), step):
        chunk = extra[start : start + step]
        heads = ["variant · style", *(m if isinstance(m, str) else m.label for m in chunk)]
        detail_body = [
            [
                label_of(r),
                *((r.summary.detail or "—") if isinstance(m, str) else plain(r, m) for m in chunk),
            ]
            for r in rows
            if r.summary.status == "ok"
        ]
        if detail_body:
            out += ["", "*Detail:*", "", tabulate(detail_body, headers=heads, tablefmt="github")]
    return "\n".join(out)


def grouped(rows: list[RenderedRow]) -> list[tuple[str, list[RenderedRow]]]:
    """Rows by kind, in table order, each group with its label ("" for unavailable rows)."""
    groups: dict[str, list[RenderedRow]] = {}
    for r in rows:
        groups.setdefault(GROUPS.get(r.kind, ""), []).append(r)
    return list(groups.items())


def label_of(r: RenderedRow) -> str:
    return f"{r.label}{'†' if r.earlier else ''}{'‡' if r.stale else ''}"


def plain(r: RenderedRow, metric: Metric) -> str:
    """A figure's median, without a ratio (the ratios are the headline's alone)."""
    stat = r.summary.stats.get(metric.name)
    if metric.name in r.summary.errors:
        return "**failed**"
    return "n/a" if stat is None else number(stat.median, metric)


def main_row(r: RenderedRow, headline: Metric, others: list[Metric], bases: list[str]) -> list:
    """One row's cells in the first table: its figures, or its status and why it has none."""
    reps = f"{r.summary.valid}/{r.summary.total}"
    if r.summary.status == "ok" and r.summary.valid < r.summary.total:
        reps += " §"  # some repetitions saturated the peer: the figure may understate
    if r.summary.status != "ok":
        why = r.summary.reason.splitlines()[0] if r.summary.reason else r.summary.status
        why = why.replace("|", "/")[:120]
        said = f"**{r.summary.status}**: {why}"
        if r.summary.status == "unavailable":  # said once, under the table
            said, reps = "**unavailable**", "—"
        return [label_of(r), said, *("" for _ in bases), *("—" for _ in others), reps]
    cells = [label_of(r), headline_cell(r, headline)]
    cells += [ratio_cell(r, headline, name if r.bases else None) for name in bases]
    cells += [plain(r, m) for m in others]
    return [*cells, reps]


def ratio_cell(r: RenderedRow, metric: Metric, which: str | None) -> str:
    """×r [low–high] and its word, against the denominator measured in the row's own session;
    a row from an earlier session prints that session's denominator beside it."""
    if not metric.ratio:
        return ""
    base = r.base(which)
    if r.row.key == f"{which}/native" or (which is None and r.ratio(metric) == 1.0):
        return "(the base)" if base is not None else ""
    if base is None or metric.name not in base.stats:
        return "not in this session"
    found = r.ratio_interval(metric, which)
    if found is None:
        return times(r.ratio(metric, which))
    value, low, high = found
    said = word(found, metric.higher_is_better)
    text = f"×{value:.2f} [{low:.2f}–{high:.2f}] {said}"
    if r.earlier:
        text += f" (of {number(base.stats[metric.name].median, metric)}†)"
    return text


def headline_cell(r: RenderedRow, headline: Metric) -> str:
    """The headline's median [min–max]."""
    stat = r.summary.stats.get(headline.name)
    if headline.name in r.summary.errors:
        return "**failed**"
    if stat is None:
        return "n/a"
    if r.summary.valid == 1:  # one repetition (pyperf repeats inside it): no range
        return number(stat.median, headline)
    return (
        f"{number(stat.median, headline)} [{number(stat.low, headline)}–"
        f"{number(stat.high, headline)}]"
    )


def disturbance(reps: list[dict]) -> str | None:
    """What else the machine did during these repetitions, as each recorded it
    (machine/activity.py): other processes' CPU, the share of time some task waited for a CPU,
    and the hypervisor's steal. The load average is no such signal: it counts the bench's own
    threads (thousands of them in the thread rows). None where no repetition recorded them."""
    others = [rep["others_cpus"] for rep in reps if rep.get("others_cpus") is not None]
    if not others:
        return None
    said = f"others' CPU {statistics.median(others):.2f} (median; at most {max(others):.2f})"
    pressure = [rep["cpu_pressure"] for rep in reps if rep.get("cpu_pressure") is not None]
    if pressure:
        said += f", CPU pressure {statistics.median(pressure):.0%} (median)"
    steal = [rep["steal_cpus"] for rep in reps if rep.get("steal_cpus") is not None]
    if steal:
        said += f", steal {statistics.median(steal):.2f} of a CPU (at most {max(steal):.2f})"
    return said


def session_said(name: str, env: dict) -> str:
    """One session as every table's provenance names it: its name, the machine (as
    ``machine.environment`` describes it: CPU identity, kernel build), Python and commit."""
    commit = env.get("commit") or {}
    dirty = " with uncommitted changes" if commit.get("dirty") else ""
    return (
        f"session {name} on {env.get('host', '?')} ({environment.describe(env)}), "
        f"{env.get('python_implementation', 'CPython')} {env.get('python', '?')}, "
        f"commit `{(commit.get('hash') or '?')[:10]}`{dirty}"
    )


def ran_in(sessions: dict[str, dict], point: dict) -> str:
    """The environment of a table's rows: each session they come from (session_said), and what
    else ran on the machine then."""
    described = []
    for name in sorted({entry["session"] for entry in point["rows"].values()}):
        env = sessions.get(name, {}).get("environment")
        if env is None:
            continue
        reps = [
            rep
            for entry in point["rows"].values()
            if entry["session"] == name
            for rep in entry["reps"]
        ]
        busy = disturbance(reps)
        described.append(session_said(name, env) + (f"; {busy}" if busy else ""))
    return "; ".join(described) + " (details under [Environment](#environment))."


def sessions_line(sessions: dict[str, dict], names) -> list[str]:
    """A table's provenance where it reads figures, not repetitions: each session named once
    (session_said), as a paragraph; [] where none of `names` is known."""
    said = [
        session_said(name, sessions[name]["environment"])
        for name in sorted(set(names))
        if "environment" in sessions.get(name, {})
    ]
    if not said:
        return []
    return [f"*Ran in:* {'; '.join(said)} (details under [Environment](#environment)).", ""]


def ran_in_all(found: list[tuple[dict[str, dict], dict]]) -> str:
    """ran_in over several points, each with its store's sessions: each session said once."""
    sessions: dict[str, dict] = {}
    rows: dict[str, dict] = {}
    for i, (kept, point) in enumerate(found):
        sessions.update(kept)
        rows.update({f"{i} {key}": entry for key, entry in point["rows"].items()})
    return ran_in(sessions, {"rows": rows})


# -- what this shows -------------------------------------------------------------------------


def what_this_shows(
    workload: Study,
    params: dict,
    rows: list[RenderedRow],
    observations: Callable[[dict, list], list[str]] = lambda params, rows: [],
) -> str:
    """One or two sentences about a table, from its figures, and the study's own
    (:attr:`bench.study.Rendering.observations`)."""
    headline = workload.columns_at(params)[0]
    sentences = ranking(headline, rows)
    if sentences:
        sentences += observations(params, rows)
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
        against = f", {times(share)} {r.base_name}" if share is not None else ""
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
