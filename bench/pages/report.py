"""Render reports/bench.md (and its charts) from stored results alone: no study runs here.

The page opens with the verdict (:mod:`bench.pages.verdict`), then the glance. One section per
workload, one table per point, variants (and styles) as rows, every figure
with its ratio to asyncio from the same session, and under each table a line saying what it
shows, written from the figures (best, worst, the best home-made loop, rows without a valid
figure and why). Then the code-size table, a link to the conformance matrix, and the
environment every session ran in. The quick run renders to ``bench.md``, the full one (when
stored) to ``bench-full.md``.
"""

from __future__ import annotations

import importlib
import itertools
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tabulate import tabulate

from bench import registry
from bench.fingerprint import fingerprints_held
from bench.headline import TLS
from bench.pages import chooser, glance, interpreters, scale, twins, verdict
from bench.pages.reading import render_reading
from bench.plan import unavailable_variants
from bench.render import charts, codesize
from bench.render.page import MODES, Page, machine_page
from bench.render.rows import current_points, rendered_rows, stored_points
from bench.render.tables import disturbance, ran_in, table, what_this_shows
from bench.store import ResultStore, load_mode, per_machine
from bench.studies import crawler, sleep
from bench.studies.anatomy.render import load_anatomy
from bench.studies.instructions import render_work as work
from bench.studies.reproductions import render as reproduction
from bench.study import Rendering, SideStudy, Study
from bench.summary import SATURATION, SPREAD_TOLERANCE, summarize
from machine.environment import ROOT, by_machine, identity
from machine.interpreters import PYTHONS, REFERENCE, RUNNING


def rendering_of(study: Study | SideStudy) -> Rendering:
    """A study's rendering side, loaded by the name its declaration gives (none named: a table
    per point and nothing added)."""
    if study.rendering is None:
        return Rendering()
    return importlib.import_module(study.rendering).RENDERING


def study_section(name: str, page: Page) -> list[str]:
    """The lines a study adds to the page, looked up by its name (the site does the same)."""
    study = registry.get(name)
    own = rendering_of(study).section
    return own(study, page) if own is not None else []


def section(workload: Study, page: Page) -> list[str]:
    """The markdown lines of one study's section: a table per point, or a section of its own
    where its rendering side writes one (latency: [] leaves it off the page)."""
    own = rendering_of(workload)
    if own.section is not None:
        return own.section(workload, page)
    stored, mode, chart_dir, out = (
        page.stores.get(workload.name),
        page.mode,
        page.chart_dir,
        page.out,
    )
    lines = [f"## {workload.title}", "", workload.description.strip(), ""]
    if stored is None or not stored.data["points"]:
        command = "nox -s bench" + (" -- --full" if mode == "full" else "")
        lines += [f"No results stored for {workload.name} yet: run `{command}`.", ""]
        return lines
    current = current_points(workload, mode)
    by_key = stored.data["points"]
    order = [k for k in current if k in by_key] + [k for k in by_key if k not in current]
    unmeasured = [k for k in current if k not in by_key]
    if unmeasured:  # a partial run: say what the section lacks before its tables
        command = "nox -s bench" + (" -- --full" if mode == "full" else "")
        lines += [
            f"*Measured so far:* {len(current) - len(unmeasured)} of this run's {len(current)} "
            f"points ({len(unmeasured)} not yet: `{command}` continues where the stored results "
            "stop).",
            "",
        ]
    points = []
    for key in order:
        point = by_key[key]
        rows = rendered_rows(workload, point, current.get(key), own.detail)
        points.append((key, point["params"], rows))  # figures only: for the charts
        aside = "" if key in current else " (not in the current points)"
        lines += [f"### {workload.point_title(point['params'])}{aside}", ""]
        lines += point_lines(workload, own, stored, point, rows)
    lines += own.section_end({key: by_key[key] for key in order}, stored.sessions)
    for path, caption in charts.draw(workload, mode, points, chart_dir):
        lines += [
            f"![{caption.split(' (')[0]}]({path.relative_to(out.parent).as_posix()})",
            "",
            f"*{caption}*",
            "",
        ]
    return lines


def point_lines(
    workload: Study, own: Rendering, stored: ResultStore, point: dict, rows: list
) -> list[str]:
    """Under a point's heading: its notes, its table, what it shows and where it ran."""
    params = point["params"]
    lines = []
    for note in own.point_notes(params, stored.data["points"]):
        lines += [note, ""]
    lines += [table(workload.columns_at(params), rows, own.detail_column(params)), ""]
    lines += controls_moved(workload, point)
    shows = what_this_shows(workload, params, rows, own.observations)
    lines += [f"*What this shows:* {shows}", ""]
    lines += [f"*Ran in:* {ran_in(stored.sessions, point)}", ""]
    return lines


def controls_moved(workload: Study, point: dict) -> list[str]:
    """A flag under a table whose control rows (echo: asyncio-protocol, uvloop-protocol, the
    selectors floor) moved between the sessions its rows come from by more than their stored
    spread: their [min–max] ranges in two sessions do not overlap."""
    metric = workload.columns_at(point["params"])[0]
    sessions = {entry["session"] for entry in point["rows"].values()}
    moved = []
    for key in workload.controls:
        ranges = {}
        for session in sorted(sessions):
            reps = point["baselines"].get(session, {}).get(key)
            entry = point["rows"].get(key)
            if reps is None and entry is not None and entry["session"] == session:
                reps = entry["reps"]
            stat = summarize(reps, workload.metrics).stats.get(metric.name) if reps else None
            if stat is not None:
                ranges[session] = stat
        spans = list(ranges.items())
        for (one, a), (other, b) in itertools.pairwise(spans):
            if a.high < b.low or b.high < a.low:
                moved.append(
                    f"{key.split('/')[0]} {a.median:,.{metric.digits}f} [{a.low:,.{metric.digits}f}"
                    f"–{a.high:,.{metric.digits}f}] in session {one[:15]}, "
                    f"{b.median:,.{metric.digits}f} [{b.low:,.{metric.digits}f}–"
                    f"{b.high:,.{metric.digits}f}] in {other[:15]}"
                )
    if not moved:
        return []
    return [
        f"**Controls moved:** {'; '.join(moved)} ({metric.label}): beyond their stored spread, "
        "so rows from these sessions compare only through ratios to their own session's "
        "servers, never by their figures.",
        "",
    ]


def session_reps(stores: list[ResultStore]) -> dict[str, list[dict]]:
    """Per session, the repetitions it measured."""
    found: dict[str, list[dict]] = {}
    for kept in stores:
        for point in kept.data["points"].values():
            for entry in point["rows"].values():
                found.setdefault(entry["session"], []).extend(entry["reps"])
    return found


def coverage(stores: dict[str, ResultStore | None], mode: str) -> list[str]:
    """How much of the current points is stored, per workload, and how to measure the rest."""
    parts, missing = [], 0
    for workload in registry.STUDIES:
        current = current_points(workload, mode)
        if not current:
            continue
        kept = stores.get(workload.name)
        stored = kept.data["points"] if kept is not None else {}
        expected = sum(len(rows) for rows in current.values())
        done = sum(
            1
            for key, rows in current.items()
            for row in rows
            if row.key in stored.get(key, {}).get("rows", {})
        )
        missing += expected - done
        parts.append(f"{workload.title.lower()} {done:,} of {expected:,}")
    if not missing:
        return []
    command = "nox -s bench" + (" -- --full" if mode == "full" else "")
    return [
        f"*Stored so far:* rows (variant or anchor at a point) {'; '.join(parts)}. The rest "
        f"is not measured yet: `{command}` continues where the stored results stop.",
        "",
    ]


def load_line(stores: list[ResultStore]) -> list[str]:
    """One line on what else the machine did while these figures were measured."""
    reps = [
        rep
        for kept in stores
        for point in kept.data["points"].values()
        for entry in point["rows"].values()
        for rep in entry["reps"]
    ]
    busy = disturbance(reps)
    if busy is None:
        return []
    redone = sum(1 for rep in reps if rep.get("redone"))
    return [
        f"*Disturbance while measuring*, over {len(reps):,} repetitions (per session under "
        f"[Environment](#environment)): {busy}. "
        + (
            f"{redone} repetitions were measured again, disturbed or stalled (each kept in the "
            "store with its reason, in no figure)."
            if redone
            else "No repetition was disturbed or stalled."
        )
        + " The load average is left out: it counts the bench's own threads.",
        "",
    ]


def machines_line(
    stores: dict[str, ResultStore | None], others: dict[str, dict | None]
) -> list[str]:
    """Where the page's figures were measured, when that is more than one machine: which
    studies (and which of the anatomy and the instruction counts) ran on each. A table holds
    one study's store, and a store one machine (the runner starts afresh on another)."""
    where = by_machine(
        [
            *((name, s["environment"]) for name, kept in stores.items() if kept
              for s in kept.sessions.values()),
            *((name, (data or {}).get("environment", {})) for name, data in others.items()),
        ]
    )  # fmt: skip
    if len(where) < 2:
        return []
    return [
        f"*Machines:* this page holds figures from {len(where)} machines: "
        + "; ".join(f"{machine} ({', '.join(names)})" for machine, names in where.items())
        + ". A workload's tables hold one machine each; a table that sets figures of two side "
        "by side says so.",
        "",
    ]


def environment_section(stores: list[ResultStore]) -> list[str]:
    """The sessions these results come from, one column each."""
    sessions: dict[str, dict] = {}
    for kept in stores:
        sessions.update(kept.sessions)
    reps = session_reps(stores)
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
            "disturbance during repetitions",
        )
    }
    for name in sorted(sessions):
        for field, value in session_column(sessions[name], reps.get(name, [])).items():
            fields[field].append(value)
    # One row per session, its fields in two tables of at most 6 columns (no table wider than
    # 8, whatever the number of sessions: a wider one does not fit a screen).
    names = sorted(sessions)
    lines = ["## Environment", ""]
    for group in (list(fields)[:4], list(fields)[4:]):
        body = [
            [name, *(fields[field][i].replace("|", "/") for field in group)]
            for i, name in enumerate(names)
        ]
        lines += [tabulate(body, headers=["session", *group], tablefmt="github"), ""]
    lines.pop()
    lines += [
        "",
        "The disturbance is what each repetition recorded of the rest of the machine "
        "(machine/activity.py): other processes' CPU, the share of time some task waited for "
        "a CPU (pressure), and the hypervisor's steal. The load average at the session's start "
        "and end is there for the record only: it counts the bench's own processes and "
        "threads (thousands of them in the thread rows). This machine is shared with other "
        "engineers' test runs, so "
        "absolute figures wander from run to run and understate what an idle machine does; "
        "ratios to asyncio, measured in the same session with interleaved repetitions, are the "
        "steadier reading.",
        "",
    ]
    return lines


def session_column(session: dict, reps: list[dict]) -> dict[str, str]:
    """One session's column of the environment table, by field."""
    env = session["environment"]
    commit = env.get("commit") or {}
    dirty = " + uncommitted changes" if commit.get("dirty") else ""
    loads = [env.get("load_average"), session.get("load_average_end")]
    pinning = env.get("pinning", "pinning not recorded")
    subject = commit.get("subject") or ""
    return {
        "machine": f"{env['host']} · {env['platform']}"
        + (
            f" · {env['kernel_build']}"
            if env.get("kernel_build")
            else " · kernel build not recorded"
        ),
        "CPU": f"{env['cpu']} ({identity(env) or 'family, stepping, microcode not recorded'})",
        "cores": f"{len(env['usable_cores'])} usable · {pinning}",
        "Python": f"{env['python_implementation']} {env['python']}",
        "libraries": ", ".join(f"{k} {v}" for k, v in (env.get("libraries") or {}).items() if v),
        "commit": f"`{(commit.get('hash') or '?')[:10]}`{dirty} {subject}".strip(),
        "load average": " at start; ".join(
            ", ".join(f"{x:.2f}" for x in load) for load in loads if load is not None
        )
        + (" at end" if loads[1] is not None else " at start"),
        "disturbance during repetitions": f"{disturbance(reps)} over {len(reps):,} repetitions"
        if disturbance(reps)
        else "not recorded",
    }


METHOD = """\
The bench (`nox -s bench`): every repetition runs the loop or server under test
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
more) reads "limit"; and a row stops after {least} repetitions when its headline's spread,
(max − min) / median, is within {tolerance:.0%}, otherwise it runs up to {most} ({echo} for an
echo row, whose run has the most points, {headline} at its headline point ({tls} over TLS) and
{key} for the key rows there (`bench.plan.key_row`: the anchors and the home-made loops
discovery finds); {slow[0]} and {slow[1]} where one repetition takes minutes: {tasks:,}
sleepers, a crawl one page at a time).
"""


@dataclass(frozen=True)
class Section:
    """One registered section of the report, in page order: its headings for the index line,
    and its lines."""

    titles: tuple[str, ...] | None  # None: the registered studies' titles
    lines: Callable[[Page], list[str]]


def workload_sections(page: Page) -> list[str]:
    lines = []
    for workload in registry.STUDIES:
        lines += section(workload, page)
    return lines


def conformance_section(page: Page) -> list[str]:
    conformance = page.out.parent / "conformance.md"
    return [
        "## Conformance",
        "",
        (
            "What each loop does correctly, property by property: "
            "[reports/conformance.md](conformance.md) (`nox -s conformance`)."
        )
        + ("" if conformance.exists() else " Not generated yet in this tree."),
        "",
    ]


def method_section(page: Page) -> list[str]:
    echo = registry.get("echo").points(True)  # its repetitions, as its folder declares them
    return [
        "## How these were measured",
        "",
        METHOD.format(
            saturation=SATURATION,
            tolerance=SPREAD_TOLERANCE,
            least=crawler.REPETITIONS[0],
            most=crawler.REPETITIONS[1],
            echo=min(point.repetitions for point in echo),
            headline=max(point.repetitions for point in echo),
            tls=min(point.repetitions for point in echo if point.args.get(TLS)),
            key=max(point.key_repetitions or 0 for point in echo),
            slow=crawler.SLOW_REPETITIONS,
            tasks=sleep.LONG_TASKS,
        ).replace("\n", " "),
        "",
    ]


# The report's sections after its opening, in page order: a new section is one entry here.
SECTIONS = (
    Section(None, workload_sections),  # titled by the registered studies, read at render
    Section(
        # The fixed load's anatomy, the closed loop's where stored, then instructions per
        # request by part: each study's own part, looked up by its name.
        ("Cost anatomy",),
        lambda page: study_section("anatomy", page) + study_section("instructions", page),
    ),
    Section(("Twins",), twins.section),
    Section(
        ("Scale",),
        lambda page: scale.section(
            page.points_of,
            page.mode,
            page.chart_dir,
            page.out,
            {n: s for kept in page.stores.values() if kept for n, s in kept.sessions.items()},
        ),
    ),
    Section((interpreters.TITLE,), interpreters.section),
    Section(("Code size",), lambda page: codesize.section()),
    Section(("Conformance",), conformance_section),
    Section(("How these were measured",), method_section),
    Section(
        ("Environment",),
        lambda page: environment_section([s for s in page.stores.values() if s is not None]),
    ),
)


MAX_WORDS = 120  # no paragraph of a report longer: a longer one is skipped, not read
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z*`(\[§†‡])")
CLAUSE_END = re.compile(r"(?<=[.;])\s+")  # within a sentence too long alone


def short_paragraphs(text: str, limit: int = MAX_WORDS) -> str:
    """The text with every prose paragraph over `limit` words cut at sentence ends into
    paragraphs of at most `limit` words (tables, headings, lists and images stay as they are;
    a sentence over the limit alone is cut after its semicolons)."""
    blocks = []
    for block in text.split("\n\n"):
        first = block.lstrip()[:2]
        if first[:1] in "|#!<" or first in ("- ", "* ", "  ") or len(block.split()) <= limit:
            blocks.append(block)
            continue
        parts, current = [], []
        sentences = [
            piece
            for sentence in SENTENCE_END.split(block.replace("\n", " "))
            for piece in (
                CLAUSE_END.split(sentence) if len(sentence.split()) > limit else [sentence]
            )
        ]
        for sentence in sentences:
            if current and len(" ".join([*current, sentence]).split()) > limit:
                parts.append(" ".join(current))
                current = []
            current.append(sentence)
        parts.append(" ".join(current))
        blocks.append("\n\n".join(parts))
    return "\n\n".join(blocks)


def unavailable_line() -> list[str]:
    """Variants this interpreter cannot load, said once for the whole page (no table repeats it:
    their rows are in the tables where they were measured elsewhere, and absent otherwise)."""
    missing = unavailable_variants()
    if not missing:
        return []
    return [
        "*Not in these tables:* "
        + "; ".join(f"{name}, {why}" for name, why in missing.items())
        + ".",
        "",
    ]


def render(
    mode: str,
    stores: dict[str, ResultStore | None],
    out: Path,
    anatomy_data: dict | None = None,
    results: Path | None = None,
    python: str = REFERENCE,
    machine: str | None = None,
    elsewhere: list[tuple[str, Path]] = (),
) -> list[Path]:
    """Write one report (and its charts) whose main tables are `python`'s, every figure of it
    measured on `machine`; `elsewhere`: the pages of the run's figures measured on other
    machines (the first of them the run's main page, when this is not it); the files
    written."""
    main = out.name == MODES[mode]
    # Another machine's page draws into a folder of its own, so neither page's charts (named
    # by the run) overwrite, or clean away, the other's.
    chart_dir = out.parent / "charts" / ("" if main else out.stem)
    points_of = stored_points(stores, mode)
    root = (results or out.parent / "results").parent  # the reports folder the verdict reads
    page = Page(mode, stores, out, chart_dir, points_of, anatomy_data, results, python, machine)
    body = [entry.lines(page) for entry in SECTIONS]
    titles = [
        title
        for entry, written in zip(SECTIONS, body, strict=True)
        for title in (
            entry.titles
            if entry.titles is not None
            # a study whose section is empty (latency with no curve stored) is not indexed
            else [w.title for w in registry.STUDIES if f"## {w.title}" in written]
        )
    ]
    lines = [
        "# The bench: every loop on the same workloads"
        + ("" if main else f", as measured on another machine ({mode} run)"),
        "",
        f"<!-- generated by `nox -s report` from reports/results/{mode}/; do not edit -->",
        "",
        *machine_pages(mode, machine, elsewhere, main),
        # The answer first (bench/pages/verdict.py): at most eight items, from the same data;
        # read from the run's main page only, whose machine it names.
        *(
            chooser.markdown(verdict.lines(root, mode))
            if main and (machine is None or chooser.machine(root, mode) in (None, machine))
            else []
        ),
        "",
        # The ranking no other process can move: instructions per request (the instructions
        # study's render_work.py), set beside the main page's figures, whose machines it names.
        *(work.section(results or out.parent / "results") if mode == "quick" and main else []),
        # The glance reads the run's headline points, which its main page holds.
        *(
            glance.section(
                points_of,
                ROOT,
                out.parent,
                chart_dir / f"{mode}-glance-echo-cost.png",
                {n: s for kept in stores.values() if kept for n, s in kept.sessions.items()},
            )
            if main
            else []
        ),
        *load_line([s for s in stores.values() if s is not None]),
        *(reproduction.line(results or out.parent / "results") if mode == "quick" else []),
        *machines_line(
            stores,
            {
                "the cost anatomy": anatomy_data,
                "the instruction counts": work.load_instructions(results or out.parent / "results"),
            }
            if mode == "quick"
            else {},
        ),
        *(coverage(stores, mode) if main else []),
        *unavailable_line(),
        f"The {mode} run; how it was measured is [below](#how-these-were-measured).",
        "",
        "Sections: "
        + ", ".join(f"[{t}](#{t.lower().replace(' ', '-')})" for t in ["At a glance", *titles])
        + ".",
        "",
    ]
    for written in body:
        lines += written
    text = short_paragraphs("\n".join(lines).rstrip() + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)  # a study without charts made no folder
    out.write_text(text)
    # A chart of this mode the report no longer shows (its results were dropped) is removed,
    # so reports/charts/ holds nothing that the stored results do not draw.
    shown = set(re.findall(r"\]\((charts/[^)]+\.png)\)", text))
    for chart in chart_dir.glob(f"{mode}-*.png"):
        if chart.relative_to(out.parent).as_posix() not in shown:
            chart.unlink()
    return [out, *sorted(chart_dir.glob(f"{mode}-*.png"))]


def render_every_page(results: Path) -> list[Path]:
    """Every report and every README's rendered blocks; the files written."""
    return render_all(results) + render_reading(results)


def render_all(results: Path, reports: Path | None = None) -> list[Path]:
    """Render every mode that has stored results; the files written."""
    reports = reports or results.parent
    with fingerprints_held():
        return _render_all(results, reports)


def _render_all(results: Path, reports: Path) -> list[Path]:
    written = []
    for mode, filename in MODES.items():
        python, stores = main_tables(results, mode)
        if not any(stores.values()):
            continue
        parts = per_machine(stores)
        pages = [(machine, reports / machine_page(filename, index)) for index, (machine, _) in
                 enumerate(parts)]  # fmt: skip
        for (machine, part), (_, out) in zip(parts, pages, strict=True):
            others = [(m, path) for m, path in pages if path != out]
            written += render(
                mode, part, out, load_anatomy(results), results, python, machine, others
            )
    # A page of a machine the stored results no longer hold is not left behind.
    for stale in reports.glob("bench*-machine-*.md"):
        if stale not in written:
            stale.unlink()
            shutil.rmtree(reports / "charts" / stale.stem, ignore_errors=True)
    if not written:
        raise SystemExit(f"no stored results under {results}: run `nox -s bench` first")
    return written


def machine_pages(
    mode: str, machine: str | None, elsewhere: list[tuple[str, Path]], main: bool
) -> list[str]:
    """Where the page's figures ran, and where the run's figures from other machines are."""
    if not elsewhere:
        return []
    links = "; ".join(f"[{path.name}]({path.name}) ({other})" for other, path in elsewhere)
    if main:
        return [
            f"*One machine a page:* every figure here was measured on {machine}; the {mode} "
            f"run's figures measured on another machine are on their own page: {links}.",
            "",
        ]
    return [
        f"*One machine a page:* the {mode} run's figures measured on {machine}, apart from "
        f"its main page's, measured on another machine: {links}. A figure here is compared "
        "only with rows of its own session.",
        "",
    ]


def main_tables(results: Path, mode: str) -> tuple[str, dict[str, ResultStore | None]]:
    """The interpreter whose results make a mode's main tables, with its stores: the reference
    interpreter's where stored; else (a lab run only on, say, 3.13) the running one's, else the
    newest that has any. Never two interpreters in one table."""
    stores: dict[str, ResultStore | None] = {}
    for python in dict.fromkeys([REFERENCE, RUNNING, *reversed(PYTHONS)]):
        stores = load_mode(results, mode, registry.names(), python)
        if any(stores.values()):
            return python, stores
    return REFERENCE, stores
