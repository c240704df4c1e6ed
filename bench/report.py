"""Render reports/bench.md (and its charts) from stored results alone: no workload runs here.

One section per workload, one table per point, variants (and styles) as rows, every figure
with its ratio to asyncio from the same session, and under each table a line saying what it
shows, written from the figures (best, worst, the best home-made loop, rows without a valid
figure and why). Then the code-size table, a link to the conformance matrix, and the
environment every session ran in. The quick run renders to ``bench.md``, the full one (when
stored) to ``bench-full.md``.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from tabulate import tabulate

from bench import anatomy, charts, codesize, glance, scale
from bench.environment import ROOT
from bench.plan import BASELINE, Metric, Row, baseline_key, columns
from bench.runner import WORKLOADS, results_path, workload_module
from bench.store import ResultStore, row_fingerprint
from bench.summary import SATURATION, SPREAD_TOLERANCE, RowSummary, ratio, summarize

MODES = {"quick": "bench.md", "full": "bench-full.md"}
KIND_ORDER = {"reference": 1, "home-made": 2, "anchor": 3}
STYLE_ORDER = {"callbacks": 0, "generators": 1, "coroutines": 2, "native": 3}


@dataclass
class RenderedRow:
    """A stored row with its figures and its same-session baseline's figures."""

    row: Row
    kind: str  # "reference", "home-made" or "anchor"
    session: str
    summary: RowSummary
    baseline: RowSummary | None
    stale: bool
    earlier: bool  # measured in an earlier session than this point's newest

    @property
    def label(self) -> str:
        if self.row.anchor:
            return f"{self.row.variant} (anchor)"
        return self.row.label

    def ratio(self, metric: Metric) -> float | None:
        if not metric.ratio:
            return None
        stat = self.summary.stats.get(metric.name)
        base = self.baseline.stats.get(metric.name) if self.baseline else None
        if stat is None or base is None:
            return None
        return ratio(stat.median, base.median)


def _kind(entry: dict) -> str:
    if "kind" in entry:
        return entry["kind"]
    return Row(entry["variant"], entry["style"], entry.get("anchor", False)).kind


def rendered_rows(
    module: ModuleType, workload: str, point: dict, expected: tuple[Row, ...] | None = None
) -> list[RenderedRow]:
    """A point's stored rows with their summaries and same-session baselines, in table order.

    With `expected` (the rows the current matrix has at this point), stored rows of variants
    that are gone are left out, and expected rows with nothing stored say "not measured".
    """
    newest = max((entry["session"] for entry in point["rows"].values()), default="")
    rows = []
    for entry in point["rows"].values():
        row = Row(entry["variant"], entry["style"], entry.get("anchor", False))
        if expected is not None and row not in expected:
            continue
        baselines = point["baselines"].get(entry["session"], {})
        base_styles = [key.split("/", 1)[1] for key in baselines]
        base_reps = baselines.get(baseline_key(row.style, base_styles))
        summary = summarize(entry["reps"], module.METRICS)
        if hasattr(module, "detail"):
            summary.detail = module.detail(entry["reps"])
        rows.append(
            RenderedRow(
                row=row,
                kind=_kind(entry),
                session=entry["session"],
                summary=summary,
                baseline=summarize(base_reps, module.METRICS) if base_reps else None,
                stale=row_fingerprint(workload, row) != entry["code"],
                earlier=entry["session"] != newest,
            )
        )
    stored = {r.row for r in rows}
    for row in expected or ():
        if row not in stored:
            missing = RowSummary("not measured", "run the bench to measure it")
            rows.append(RenderedRow(row, row.kind, "", missing, None, False, False))
    rows.sort(
        key=lambda r: (
            r.row.variant != BASELINE,
            KIND_ORDER[r.kind],
            r.row.variant,
            STYLE_ORDER.get(r.row.style, 9),
        )
    )
    return rows


def number(value: float, metric: Metric) -> str:
    return f"{value * metric.scale:,.{metric.digits}f}"


def times(value: float | None) -> str:
    return "" if value is None else f"×{value:.2f}"


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
    body = []
    for r in rows:
        mark = ("†" if r.earlier else "") + ("‡" if r.stale else "")
        label = f"{r.label}{mark}"
        reps = f"{r.summary.valid}/{r.summary.total}"
        if r.summary.status == "ok" and r.summary.valid < r.summary.total:
            reps += " §"  # some repetitions saturated the peer: the figure may understate
        if r.summary.status != "ok":
            why = r.summary.reason.splitlines()[0] if r.summary.reason else r.summary.status
            why = why.replace("|", "/")[:120]
            body.append(
                [
                    label,
                    f"**{r.summary.status}**: {why}",
                    "",
                    *("—" for _ in others),
                    *([r.summary.detail or "—"] if detail else []),
                    reps,
                ]
            )
            continue
        cells = [label]
        stat = r.summary.stats.get(headline.name)
        if headline.name in r.summary.errors:
            cells += ["**failed**", ""]
        elif stat is None:
            cells += ["n/a", ""]
        elif r.summary.valid == 1:  # one repetition (pyperf repeats inside it): no range
            cells += [number(stat.median, headline), times(r.ratio(headline))]
        else:
            cells += [
                f"{number(stat.median, headline)} [{number(stat.low, headline)}–"
                f"{number(stat.high, headline)}]",
                times(r.ratio(headline)),
            ]
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
        body.append(cells)
    align = ("left", "right", "right", *("right" for _ in others), *(["left"] * len(extra)))
    align += ("right",)
    return tabulate(body, headers=headers, tablefmt="github", colalign=align)


def what_this_shows(module: ModuleType, params: dict, rows: list[RenderedRow]) -> str:
    """One or two sentences about a table, from its figures."""
    headline = columns(module, params)[0]
    valid = [r for r in rows if r.summary.status == "ok" and headline.name in r.summary.stats]
    sentences = []
    if valid:

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
        sentences.append(
            f"{headline.short}: {word} {describe(ranked[0])}, "
            f"{'lowest' if headline.higher_is_better else 'highest'} {describe(ranked[-1])}."
        )
        home = [r for r in ranked if r.kind == "home-made"]
        if home:
            sentences.append(f"Best home-made loop: {describe(home[0])}.")
        extra = getattr(module, "observations", None)
        if extra:
            sentences += extra(params, rows)
    failed = [r.label for r in rows if r.summary.status == "failed"]
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
        for name, why in r.summary.errors.items():
            sentences.append(f"{r.label}: {name} failed: {why}.")
    if not sentences:
        sentences.append("No row has a figure at this point.")
    return " ".join(sentences)


def ran_in(sessions: dict[str, dict], point: dict) -> str:
    """The environment of a table's rows: session, machine, Python, commit, load."""
    described = []
    for name in sorted({entry["session"] for entry in point["rows"].values()}):
        env = sessions.get(name, {}).get("environment")
        if env is None:
            continue
        loads = [
            rep["load_average"]
            for entry in point["rows"].values()
            if entry["session"] == name
            for rep in entry["reps"]
            if rep.get("load_average") is not None
        ]
        commit = env.get("commit") or {}
        dirty = " with uncommitted changes" if commit.get("dirty") else ""
        load = f"; load average {statistics.median(loads):.1f} (median)" if loads else ""
        described.append(
            f"session {name} on {env['host']} ({env['cpu']}, {len(env['usable_cores'])} cores), "
            f"{env['python_implementation']} {env['python']}, "
            f"commit `{(commit.get('hash') or '?')[:10]}`{dirty}{load}"
        )
    return "; ".join(described) + " (details under [Environment](#environment))."


def current_matrix(module: ModuleType, mode: str) -> dict[str, tuple[Row, ...]]:
    """The rows the current matrix has at each point, by point key ({} if it cannot be known)."""
    unavailable = getattr(module, "unavailable", lambda: None)()
    if unavailable:
        return {}
    return {point.key: point.rows for point in module.points(mode == "full")}


def section(
    module: ModuleType, store: ResultStore | None, mode: str, chart_dir: Path, out: Path
) -> list[str]:
    """The markdown lines of one workload's section."""
    lines = [f"## {module.TITLE}", "", module.DESCRIPTION.strip(), ""]
    if store is None or not store.data["points"]:
        command = "nox -s bench" + (" -- --full" if mode == "full" else "")
        lines += [f"No results stored for {module.NAME} yet: run `{command}`.", ""]
        return lines
    matrix = current_matrix(module, mode)
    stored = store.data["points"]
    order = [key for key in matrix if key in stored] + [key for key in stored if key not in matrix]
    points = []
    for key in order:
        point = stored[key]
        rows = rendered_rows(module, module.NAME, point, matrix.get(key))
        points.append((key, point["params"], rows))
        aside = "" if key in matrix else " (not in the current matrix)"
        lines += [f"### {module.point_title(point['params'])}{aside}", ""]
        if hasattr(module, "point_notes"):
            for note in module.point_notes(point["params"], stored):
                lines += [note, ""]
        detail = module.detail_column(point["params"]) if hasattr(module, "detail_column") else None
        lines += [table(columns(module, point["params"]), rows, detail), ""]
        lines += [f"*What this shows:* {what_this_shows(module, point['params'], rows)}", ""]
        lines += [f"*Ran in:* {ran_in(store.sessions, point)}", ""]
    if hasattr(module, "section_end"):  # what the workload reads across its points
        lines += module.section_end({key: stored[key] for key in order})
    for path, caption in charts.draw(module, mode, points, chart_dir):
        lines += [
            f"![{caption}]({path.relative_to(out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    return lines


def repetition_loads(stores: list[ResultStore]) -> dict[str, list[float]]:
    """Per session, the machine's 1-minute load average as each repetition began."""
    loads: dict[str, list[float]] = {}
    for store in stores:
        for point in store.data["points"].values():
            for entry in point["rows"].values():
                for rep in entry["reps"]:
                    if rep.get("load_average") is not None:
                        loads.setdefault(entry["session"], []).append(rep["load_average"])
    return loads


def coverage(stores: dict[str, ResultStore | None], mode: str) -> list[str]:
    """How much of the matrix is stored, per workload, and how to measure the rest."""
    parts, missing = [], 0
    for name in WORKLOADS:
        module = workload_module(name)
        matrix = current_matrix(module, mode)
        if not matrix:
            continue
        store = stores.get(name)
        stored = store.data["points"] if store is not None else {}
        expected = sum(len(rows) for rows in matrix.values())
        done = sum(
            1
            for key, rows in matrix.items()
            for row in rows
            if row.key in stored.get(key, {}).get("rows", {})
        )
        missing += expected - done
        parts.append(f"{module.TITLE.lower()} {done:,} of {expected:,}")
    if not missing:
        return []
    command = "nox -s bench" + (" -- --full" if mode == "full" else "")
    return [
        f"*Stored so far:* rows (variant or anchor at a point) {'; '.join(parts)}. The rest "
        f"is not measured yet: `{command}` continues where the stored results stop.",
        "",
    ]


def load_line(stores: list[ResultStore]) -> list[str]:
    """One line on how busy the machine was while these figures were measured."""
    loads = [x for session in repetition_loads(stores).values() for x in session]
    if not loads:
        return []
    cores = {
        len(session["environment"]["usable_cores"])
        for store in stores
        for session in store.sessions.values()
    }
    return [
        "*Load while measuring:* the machine's 1-minute load average was "
        f"{statistics.median(loads):.2f} (median; {min(loads):.2f}–{max(loads):.2f}) over "
        f"{len(loads)} repetitions, on "
        f"{'/'.join(str(c) for c in sorted(cores))} usable cores; per session under "
        "[Environment](#environment).",
        "",
    ]


def environment_section(stores: list[ResultStore]) -> list[str]:
    """The sessions these results come from, one column each."""
    sessions: dict[str, dict] = {}
    for store in stores:
        sessions.update(store.sessions)
    rep_loads = repetition_loads(stores)
    fields: dict[str, list[str]] = {
        name: []
        for name in (
            "machine",
            "CPU",
            "cores",
            "Python",
            "libraries",
            "commit",
            "load average",
            "load during repetitions",
        )
    }
    for name in sorted(sessions):
        session = sessions[name]
        env = session["environment"]
        commit = env.get("commit") or {}
        dirty = " + uncommitted changes" if commit.get("dirty") else ""
        loads = [env.get("load_average"), session.get("load_average_end")]
        fields["machine"].append(f"{env['host']} · {env['platform']}")
        fields["CPU"].append(env["cpu"])
        fields["cores"].append(
            f"{len(env['usable_cores'])} usable · {env.get('pinning', 'pinning not recorded')}"
        )
        fields["Python"].append(f"{env['python_implementation']} {env['python']}")
        fields["libraries"].append(
            ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items() if v)
        )
        fields["commit"].append(
            f"`{(commit.get('hash') or '?')[:10]}`{dirty} {commit.get('subject') or ''}".strip()
        )
        fields["load average"].append(
            " at start; ".join(
                ", ".join(f"{x:.2f}" for x in load) for load in loads if load is not None
            )
            + (" at end" if loads[1] is not None else " at start")
        )
        during = rep_loads.get(name)
        fields["load during repetitions"].append(
            f"median {statistics.median(during):.2f} (min {min(during):.2f}, max "
            f"{max(during):.2f}) over {len(during)} repetitions"
            if during
            else "not recorded"
        )
    body = [[name, *(v.replace("|", "/") for v in values)] for name, values in fields.items()]
    lines = ["## Environment", ""]
    lines.append(tabulate(body, headers=["session", *sorted(sessions)], tablefmt="github"))
    lines += [
        "",
        "The load average is the machine's (1, 5 and 15 minutes), the number of processes "
        "running or waiting for a core (the bench itself accounts for up to 2); above the number "
        "of cores, every measured process was "
        "also waiting for its turn. This machine is shared with other engineers' test runs, so "
        "absolute figures wander from run to run and understate what an idle machine does; "
        "ratios to asyncio, measured in the same session with interleaved repetitions, are the "
        "steadier reading.",
        "",
    ]
    return lines


METHOD = """\
How these were measured (`nox -s bench`): every repetition runs the loop or server under test
in a fresh process on one core and its peer on another where the machine has two (the echo
load generator, fresh for every repetition; the crawler's site server, one per site, serving
every row's crawls alike). Repetitions are interleaved across rows (every row once, then every
row again, in a rotating order) so load from elsewhere spreads over all rows. A figure is the
median of the repetitions, the headline figure with its [min–max]; **× asyncio** is the figure
divided by asyncio's from the same session and point (asyncio in the same style where it
speaks it, otherwise its coroutines style): above 1 means more, which is better for throughput
and worse for latency, CPU and memory. A repetition whose peer used ≥ {saturation:.0%} of its
core is invalid, and a row with fewer than half its repetitions valid shows why instead of a
number. **reps** counts valid repetitions over all; § marks a row whose figure comes from its
valid repetitions only (in the others the peer saturated: the loop may be faster than shown).
† measured in an earlier session than the rest of its table (its ratio is to that session's
asyncio); ‡ measured on code that has changed since (run the bench again to refresh it).
The full run fits the machine: each repetition is stored as it ends, so an interrupted run
continues where it stopped (`nox -s bench -- --full`); a repetition over its point's time cap
is stopped and its row reads "did not finish in N s" (a result: cost grew past the cap); a
failure that is a loop's stated limit (`select()` cannot watch a descriptor numbered 1 024 or
more) reads "limit"; and a row stops after 3 repetitions when its headline's spread,
(max − min) / median, is within {tolerance:.0%}, otherwise it runs up to 5 (4 for an echo
row, whose matrix is the largest; 2 and 3 where one repetition takes minutes: a million
sleepers, a crawl one page at a time).
"""


def stored_points(
    stores: dict[str, ResultStore | None], mode: str
) -> Callable[[str], list[tuple[dict, list[RenderedRow]]]]:
    """A function giving a workload's stored points as (params, rendered rows), cached."""
    cache: dict[str, list[tuple[dict, list[RenderedRow]]]] = {}

    def points_of(name: str) -> list[tuple[dict, list[RenderedRow]]]:
        if name not in cache:
            store = stores.get(name)
            found = []
            if store is not None and name in WORKLOADS:
                module = workload_module(name)
                matrix = current_matrix(module, mode)
                for key, point in store.data["points"].items():
                    rows = rendered_rows(module, module.NAME, point, matrix.get(key))
                    found.append((point["params"], rows))
            cache[name] = found
        return cache[name]

    return points_of


def render(
    mode: str,
    stores: dict[str, ResultStore | None],
    out: Path,
    anatomy_data: dict | None = None,
) -> list[Path]:
    """Write one report (and its charts); return the files written."""
    chart_dir = out.parent / "charts"
    points_of = stored_points(stores, mode)
    lines = [
        "# The bench: every loop on the same workloads",
        "",
        f"<!-- generated by `nox -s report` from reports/results/{mode}/; do not edit -->",
        "",
        *glance.section(points_of, ROOT, out.parent),
        *load_line([s for s in stores.values() if s is not None]),
        *coverage(stores, mode),
        f"The {mode} matrix. "
        + METHOD.format(saturation=SATURATION, tolerance=SPREAD_TOLERANCE).replace("\n", " "),
        "",
        "Sections: "
        + ", ".join(
            f"[{workload_module(n).TITLE}](#{workload_module(n).TITLE.lower()})" for n in WORKLOADS
        )
        + ", [Scale](#scale), [Code size](#code-size), [Conformance](#conformance), "
        "[Environment](#environment).",
        "",
    ]
    for name in WORKLOADS:
        lines += section(workload_module(name), stores.get(name), mode, chart_dir, out)
    lines += anatomy.section(anatomy_data)  # the echo rows' cost anatomy, its own section
    lines += scale.section(points_of, mode, chart_dir, out)
    lines += codesize.section()
    conformance = out.parent / "conformance.md"
    lines += [
        "## Conformance",
        "",
        (
            "What each loop does correctly, property by property: "
            "[reports/conformance.md](conformance.md) (`nox -s conformance`)."
        )
        + ("" if conformance.exists() else " Not generated yet in this tree."),
        "",
    ]
    lines += environment_section([s for s in stores.values() if s is not None])
    text = "\n".join(lines).rstrip() + "\n"
    out.write_text(text)
    # A chart of this mode the report no longer shows (its results were dropped) is removed,
    # so reports/charts/ holds nothing that the stored results do not draw.
    shown = set(re.findall(r"\]\(charts/([^)]+\.png)\)", text))
    for chart in chart_dir.glob(f"{mode}-*.png"):
        if chart.name not in shown:
            chart.unlink()
    return [out, *sorted(chart_dir.glob(f"{mode}-*.png"))]


def render_all(results: Path, reports: Path | None = None) -> list[Path]:
    """Render every mode that has stored results; the files written."""
    reports = reports or results.parent
    written = []
    for mode, filename in MODES.items():
        stores = {}
        for name in WORKLOADS:
            path = results_path(results, mode, name)
            stores[name] = ResultStore.load(path, name, mode) if path.exists() else None
        if any(stores.values()):
            written += render(mode, stores, reports / filename, anatomy.load(results))
    if not written:
        raise SystemExit(f"no stored results under {results}: run `nox -s bench` first")
    return written
