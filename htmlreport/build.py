"""The site's pages, each rendered from stored data, and the files copied beside them.

One function per page (:data:`PAGES`), each returning its HTML body from what is stored; the
frame (navigation, the vendored script, the stylesheet) is the same on every page. Figures are
computed here, not in the browser: the medians and intervals, and every ratio against each
selectable base, are written into the page as data attributes, and the script only shows
the one the selector names. Output is deterministic (sorted, seeded), so re-rendering the same
data writes the same bytes.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import registry
from bench.pages import verdict
from bench.plan import (  # the workloads' declarations (their running side is never loaded)
    FLOOR,
    USER_BASE,
    YARDSTICK,
)
from bench.render import intervals as stats  # one method for intervals and their words
from bench.render.page import MODES, machine_page
from bench.store import load_mode, per_machine
from bench.summary import by_round, summarize, valid_reps  # the bench's rules for a row's figures
from conformance import findings as found
from htmlreport import latency as latency_section
from htmlreport import timelines as timeline_pages
from htmlreport.markup import chart, esc, fmt, markdown_code
from machine.interpreters import PYTHONS, REFERENCE

ASSETS = Path(__file__).resolve().parent / "assets"
PLOTLY = "plotly.min.js"

# The bases a bench page's selector offers (bench/README.md, "Words": a base is a row a ratio
# divides by; the baseline is asyncio alone): (key, label, the row it reads). The default is
# the first: the server an asyncio user writes, what a ratio should be read against.
BASES = (
    (USER_BASE, f"{USER_BASE} (what asyncio users write)", f"{USER_BASE}/native"),
    (YARDSTICK, f"{YARDSTICK} (the C anchor)", f"{YARDSTICK}/native"),
    ("floor", "the selectors floor (no design at all)", f"{FLOOR}/native"),
    ("adapter", "asyncio · coroutines (the contract adapter)", "asyncio/coroutines"),
)
# The site's own rendering of a study whose bench.md section is its own
# (bench.study.Rendering.section), looked up by the study's name: section(workload, stored
# results, mode) -> HTML, "" when it has nothing to show.
SECTIONS = {"latency": latency_section.section}
KIND_ORDER = {"home-made": 0, "reference": 1, "anchor": 2}
KIND_COLOUR = {"home-made": "#1f77b4", "reference": "#7f7f7f", "anchor": "#ff7f0e"}


@dataclass(frozen=True)
class Page:
    """One page of the site: its file, its title in the navigation, and its renderer."""

    file: str
    title: str
    render: Callable[[Path], str]  # reports folder -> the page's body (HTML)


# --- figures -------------------------------------------------------------------------------


def stat(reps: list[dict], metric: str) -> list[float] | None:
    """[median, low, high, n] of one figure over a row's repetitions (None: no value)."""
    values = _values(reps, metric)
    if not values:
        return None
    low, high = stats.median_interval(values)
    return [statistics.median(values), low, high, len(values)]


def _values(reps: list[dict], metric: str) -> list[float]:
    return [r[metric] for r in reps if isinstance(r.get(metric), int | float)]


# --- the bench pages -----------------------------------------------------------------------


def _row_label(key: str, row: dict) -> str:
    return key.split("/")[0] if row.get("style") == "native" else key.replace("/", " · ")


def _base_values(point: dict, metric: Any) -> dict[str, dict[str, dict[int, float]]]:
    """base key -> session -> the base's valid repetitions of metric in that session, under
    their rounds (bench.summary.by_round: a ratio pairs them with the row's)."""
    found: dict[str, dict[str, dict[int, float]]] = {}
    for key, _, row_key in BASES:
        by_session: dict[str, dict[int, float]] = {}
        row = point["rows"].get(row_key)
        # A base has a figure where the bench's table gives it one (its summary is "ok").
        summary = summarize(row["reps"], [metric]) if row else None
        if summary and summary.status == "ok" and (values := summary.rounds.get(metric.name)):
            by_session[row["session"]] = values
        for session, rows in sorted(point.get("baselines", {}).items()):
            values = by_round(rows.get(row_key, []), metric.name)
            if values and session not in by_session:
                by_session[session] = values
        found[key] = by_session
    return found


def _ratio_attributes(
    values: dict[int, float] | None,
    key: str,
    session: str,
    bases: dict,
    metric: Any,
) -> str:
    """Each base's ratio of this row's figure (values by round), its word, or why none."""
    attributes = []
    for name, _, _ in BASES:
        base = bases[name].get(session)
        if not values or not base or statistics.median(base.values()) == 0:
            why = (
                "this row has no valid figure"
                if not values
                else f"{name} is not a row of this point"
                if not bases[name]
                else f"{name} was not measured in this row's session"
            )
            attributes.append(f'data-ratio-{name}="" data-why-{name}="{esc(why)}"')
            continue
        ratio = stats.ratio_interval(values, base)
        if ratio is None:  # one repetition a side (pyperf's micro rows): no interval, no word
            share = statistics.median(values.values()) / statistics.median(base.values())
            attributes.append(
                f'data-ratio-{name}="{share:.3f}" data-shown-{name}="×{share:.2f}" '
                f'data-verdict-{name}="" data-interval-{name}="one repetition: no interval"'
            )
            continue
        said = stats.word(ratio, metric.higher_is_better)
        # Printed once here, as bench.md prints it (two decimals), so no page rounds twice.
        attributes.append(
            f'data-ratio-{name}="{ratio[0]:.3f}" data-shown-{name}="×{ratio[0]:.2f}" '
            f'data-kind-{name}="{stats.kind(said)}" data-verdict-{name}="{esc(said)}" '
            f'data-interval-{name}="{ratio[1]:.2f}–{ratio[2]:.2f}"'
        )
    return " ".join(attributes)


def _point_html(workload: Any, point_id: str, point: dict) -> str:
    params = point["params"]
    columns = workload.columns_at(params)[:4]  # at most 8 columns in all
    headline = columns[0]
    bases = _base_values(point, headline)
    rows = sorted(
        point["rows"].items(),
        key=lambda item: (KIND_ORDER.get(item[1].get("kind"), 3), item[0]),
    )
    body, traces = [], []
    for key, row in rows:
        label = _row_label(key, row)
        kind = row.get("kind", "")
        summary = summarize(row["reps"], columns)  # the bench's rules: valid, invalid, failed
        bound = summary.status == "invalid" and summary.costs is not None  # the peer saturated
        reps = _usable(row["reps"]) if summary.status == "ok" or bound else []
        cells = [f'<td data-sort="{esc(label)}">{esc(label)}</td>', f"<td>{esc(kind)}</td>"]
        head_stat = None
        for metric in columns:
            s = stat(reps, metric.name) if reps else None
            if metric is headline and not bound:
                head_stat = s
            if s is None:
                text = summary.status if summary.status != "ok" else "—"
                cells.append(f'<td data-sort="" title="{esc(summary.reason)}">{esc(text)}</td>')
                continue
            value, low, high, n = (
                s[0] * metric.scale,
                s[1] * metric.scale,
                s[2] * metric.scale,
                s[3],
            )
            span = f"{fmt(low, metric.digits)}–{fmt(high, metric.digits)}"
            covers = stats.median_coverage(n)
            title = f"median of {n}; its interval from order statistics, {covers:.0%}: {span}"
            shown = fmt(value, metric.digits)
            if bound:  # client-bound: the server did at least this; the figure is the peer's
                title = f"client-bound (the figure measures the peer): {summary.reason}"
                shown = f"≥ {shown}" if metric.higher_is_better else shown  # rates: at least
            cells.append(
                f'<td class="num" data-sort="{value:.6g}" title="{esc(title)}">{shown}</td>'
            )
        head_values = by_round(row["reps"], headline.name) if head_stat else None
        attributes = _ratio_attributes(head_values, key, row["session"], bases, headline)
        cells.append(f'<td class="ratio num" data-sort="" {attributes}>—</td>')
        cells.append(f"<td>{esc(row['session'][:15])}</td>")
        body.append(f'<tr class="{esc(kind)}">{"".join(cells)}</tr>')
        trace = _bar(label, kind, headline, head_stat or (bound and stat(reps, headline.name)))
        if trace is not None and bound:  # drawn hatched, labelled as a lower bound
            trace["marker"]["pattern"] = {"shape": "/"}
            trace["text"] = ["≥ " + trace["text"][0]]
            trace["hovertemplate"] = f"{esc(label)}: ≥ %{{y}} (client-bound)<extra></extra>"
            trace.pop("error_y")
        if trace is not None:
            traces.append(trace)
    headers = [
        "loop · style",
        "kind",
        *[esc(m.label) for m in columns],
        f"{esc(headline.short)} × <span class=base-name>base</span>",
        "session",
    ]
    figure = {
        "data": traces,
        "layout": {
            "title": {"text": f"{workload.title}: {esc(workload.point_title(params))}"},
            "yaxis": {"title": {"text": headline.label}},
            "xaxis": {"tickangle": -40},
            "barmode": "overlay",
            "uniformtext": {"mode": "show", "minsize": 9},
            "showlegend": True,
            "legend": {"title": {"text": "rows (click to hide)"}},
            "margin": {"b": 140},
            "height": 460,
        },
    }
    return "\n".join(
        [
            f'<h3 id="{point_id}">{esc(workload.point_title(params))}</h3>',
            '<table class="sortable"><thead><tr>'
            + "".join(f"<th>{h}</th>" for h in headers)
            + "</tr></thead><tbody>",
            *body,
            "</tbody></table>",
            chart(point_id + "-chart", figure),
        ]
    )


def _usable(reps: list[dict]) -> list[dict]:
    """The repetitions a figure is taken from: valid ones (the bench's rule), else all that
    did not fail (a client-bound row, drawn as a lower bound)."""
    return valid_reps(reps) or [r for r in reps if not r.get("error")]


def _bar(label: str, kind: str, metric: Any, s: list[float] | None) -> dict | None:
    """One row's bar in a point's chart: its median, its interval as an error bar."""
    if not s:
        return None
    value, low, high = (v * metric.scale for v in s[:3])
    return {
        "type": "bar",
        "name": label,
        "x": [label],
        "y": [round(value, 6)],
        "marker": {"color": KIND_COLOUR.get(kind, "#2ca02c")},
        "error_y": {
            "type": "data",
            "array": [round(high - value, 6)],
            "arrayminus": [round(value - low, 6)],
        },
        "text": [fmt(value, metric.digits)],
        "textposition": "outside",
        "hovertemplate": f"{esc(label)}: %{{y}} ({esc(kind)})<extra></extra>",
        "legendgroup": kind,
    }


def _other_machines(mode: str, parts: list) -> str:
    """Where the run's figures measured on other machines than this page's are (none: "")."""
    if len(parts) < 2:
        return ""
    links = "; ".join(
        f'<a href="../{esc(name)}">{esc(name)}</a> ({esc(machine)})'
        for index, (machine, _) in enumerate(parts)
        if index and (name := machine_page(MODES[mode], index))
    )
    return (
        f"<p>One machine a page: every figure here was measured on {esc(parts[0][0])}; the "
        f"{mode} run's figures measured on another machine are on their own page: {links}.</p>"
    )


def _bench_page(mode: str) -> Callable[[Path], str]:
    def render(reports: Path) -> str:
        sections, index = [], []
        # One machine a page, as the markdown pages: the run's main machine's figures here,
        # each other machine's on its own markdown page (bench.pages.report.machine_page).
        parts = per_machine(load_mode(reports / "results", mode, registry.names()))
        main = parts[0][1]
        for workload in registry.STUDIES:
            kept = main.get(workload.name)
            if kept is None:
                continue
            stored = kept.data
            if workload.name in SECTIONS:  # a section of its own, as in bench.md
                own = SECTIONS[workload.name](workload, stored, mode)
                if own:
                    index.append(f'<a href="#{esc(workload.name)}">{esc(workload.title)}</a>')
                    sections.append(own)
                continue
            points = []
            for number, (_, point) in enumerate(stored["points"].items()):
                point_id = f"{workload.name}-{number}"
                points.append(_point_html(workload, point_id, point))
            index.append(f'<a href="#{esc(workload.name)}">{esc(workload.title)}</a>')
            sections.append(f'<h2 id="{esc(workload.name)}">{esc(workload.title)}</h2>')
            sections.extend(points)
        if not sections:
            return f"<p>No {mode} results are stored yet: <code>nox -s bench</code>.</p>"
        options = "".join(f'<option value="{key}">{esc(label)}</option>' for key, label, _ in BASES)
        intro = (
            "<p>Every figure is the median of a row's stored repetitions; hover a cell for its "
            f"interval from order statistics ({stats.CONFIDENCE:.0%} from {stats.MEDIAN_FULL} "
            "repetitions up; below that, the range, and what it covers). The ratio column "
            "divides the table's first figure by the base's, <em>only where the base was "
            "measured in the same session as the row</em> (otherwise it says why), with the "
            f"ratio's {stats.CONFIDENCE:.0%} interval within that session (the same method and "
            "figures as bench.md, bench/uncertainty.py) and what it says: cheaper, dearer, "
            f"faster or slower where it excludes 1, <em>{stats.WITHIN}</em>, or <em>can't "
            "tell</em>. A client-bound "
            "row (its peer, load generator or site server, saturated) shows ≥ its figure, with no "
            "ratio. Click a "
            "header to sort; click a legend entry to hide a row in the chart.</p>"
            f'<p><label>Ratios to: <select id="base">{options}</select></label></p>'
            f"<p>Workloads: {' · '.join(index)}</p>" + _other_machines(mode, parts)
        )
        return intro + "\n".join(sections)

    return render


# --- the conformance page ------------------------------------------------------------------


def _conformance_page(reports: Path) -> str:
    stored = found.stored(reports / "results" / "conformance")
    if not stored:
        return "<p>No conformance outcomes are stored yet: <code>nox -s conformance</code>.</p>"
    here = stored.get(REFERENCE) or next(iter(stored.values()))
    others = {p: stored.get(p) for p in PYTHONS if p != here.minor}
    severities = found.load_severities()
    rows = []
    for f in found.findings(here, severities, others):
        loops = ", ".join(f"{v} ({'/'.join(s)})" for v, s in sorted(f.affected.items()))
        rank = severities.rank(f.severity)
        text = markdown_code(f.text or "fails with no known deviation")
        rows.append(
            f'<tr><td data-sort="{rank}">{esc(f.severity)}</td>'
            f"<td>{text} <code>{esc(f.pid)}</code></td>"
            f"<td>{esc(loops)}</td>"
            + "".join(f"<td>{esc(f.elsewhere[p])}</td>" for p in others)
            + f"<td><code>{esc(f.command())}</code></td></tr>"
        )
    head = ["severity", "finding", "loops affected", *others, "reproduce"]
    counts = [
        f'<tr><td data-sort="{esc(v)}">{esc(v)}</td><td>{esc(s)}</td>'
        f'<td class="num" data-sort="{p}">{p}</td><td class="num" data-sort="{n}">{n}</td></tr>'
        for (v, s), (p, n) in found.style_counts(here).items()
    ]
    symbol = {"pass": "✅", "fail": "❌", "deviation": "⚠️", "not claimed": "·"}
    variants = sorted({v for _, v, _ in here.outcomes})
    cells: dict[tuple[str, str], list[str]] = {}
    for (pid, variant, style), outcome in sorted(here.outcomes.items()):
        mark = f"{style[:3]} {symbol[outcome]}"
        if outcome == "deviation":
            mark = f'<span title="{esc(here.reasons.get((pid, variant, style), ""))}">{mark}</span>'
        cells.setdefault((pid, variant), []).append(mark)
    matrix = [
        f'<tr><td data-sort="{esc(pid)}">{esc(pid)}</td>'
        + "".join(f"<td>{' '.join(cells.get((pid, v), ['—']))}</td>" for v in variants)
        + "</tr>"
        for pid in sorted({pid for pid, _, _ in here.outcomes})
    ]
    return "\n".join(
        [
            f"<p>Python {esc(here.python)}, commit {esc(here.commit)}. Every property a loop "
            "deviates from, worst first; the severities are declared in "
            "<code>conformance/severities.toml</code>. The full matrix is "
            '<a href="../conformance.md">conformance.md</a>.</p>',
            "<h2>Findings</h2>",
            _table(head, rows),
            "<h2>Properties holding, per loop and style</h2>",
            _table(["loop", "style", "holding", "played"], counts),
            "<h2>Every property</h2><p>One mark per style (cal = callbacks, gen = generators, "
            "cor = coroutines): ✅ pass, ❌ fail, ⚠️ known deviation (hover: its reason), "
            "· not claimed.</p>",
            _table(["property", *variants], matrix),
        ]
    )


def _table(head: list[str], rows: list[str]) -> str:
    return (
        '<table class="sortable"><thead><tr>'
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "\n".join(rows)
        + "</tbody></table>"
    )


# --- the frame -----------------------------------------------------------------------------

PAGES = (
    Page("bench.html", "Bench (quick)", _bench_page("quick")),
    Page("bench-full.html", "Bench (full)", _bench_page("full")),
    Page("conformance.html", "Conformance", _conformance_page),
    Page("timelines.html", "Timelines", timeline_pages.render),
)


def _frame(title: str, body: str, current: str) -> str:
    nav = " · ".join(
        f'<a href="{p.file}"{" class=current" if p.file == current else ""}>{esc(p.title)}</a>'
        for p in (Page("index.html", "Index", lambda _: ""), *PAGES)
    )
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>{esc(title)} · the event loop lab</title>"
        '<link rel=stylesheet href="site.css">'
        f'<script src="{PLOTLY}"></script><script src="site.js" defer></script>'
        f"</head><body><nav>{nav}</nav><h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


def _index(reports: Path) -> str:
    items = "".join(f'<li><a href="{p.file}">{esc(p.title)}</a></li>' for p in PAGES)
    return (
        "<h2>The answer first</h2>"
        + _markdown_list(verdict.lines(reports, link="../"))
        + "<h2>The reports</h2>"
        "<p>The event loop lab's reports as a site: rendered by <code>nox -s report</code> "
        "from the stored data in <code>reports/</code>; opens from a file, with no network. "
        "The markdown reports beside it hold the same figures with their prose: "
        '<a href="../bench.md">bench.md</a>, <a href="../conformance.md">conformance.md</a>, '
        '<a href="../timelines.md">timelines.md</a>.</p>'
        f"<ul>{items}</ul>"
    )


def _inline(line: str) -> str:
    """A markdown line's bold, emphasis, code spans and links as HTML (the rest escaped)."""
    text = esc(line)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    text = re.sub(r"\*([^*]+)\*", r"<em>\1</em>", text)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r'<a href="\2">\1</a>', text)


def _markdown_list(lines: list[str]) -> str:
    """Markdown items as an HTML list; an item that is a markdown table (its lines joined)
    as a table in its own item, its first line the header."""
    items = []
    for line in lines:
        if not line.startswith("|"):
            items.append(f"<li>{_inline(line)}</li>")
            continue
        rows = [r.strip().strip("|").split("|") for r in line.splitlines()]
        head = "".join(f"<th>{_inline(c.strip())}</th>" for c in rows[0])
        body = "".join(
            "<tr>" + "".join(f"<td>{_inline(c.strip())}</td>" for c in row) + "</tr>"
            for row in rows[2:]  # the second line is the markdown separator
        )
        items.append(f"<li><table><tr>{head}</tr>{body}</table></li>")
    return "<ul class=verdict>" + "".join(items) + "</ul>"


def build(reports: Path, out: Path) -> list[Path]:
    """Write the site into out from the data stored under reports; the pages written."""
    from plotly.offline import get_plotlyjs  # the vendored library, from PyPI's plotly

    out.mkdir(parents=True, exist_ok=True)
    _write(out / PLOTLY, get_plotlyjs())
    for asset in sorted(ASSETS.iterdir()):
        _write(out / asset.name, asset.read_text())
    written = [out / "index.html"]
    _write(written[0], _frame("The event loop lab", _index(reports), "index.html"))
    for page in PAGES:
        written.append(out / page.file)
        _write(written[-1], _frame(page.title, page.render(reports), page.file))
    timeline_pages.write_traces(reports, out / "traces")
    return written


def _write(path: Path, text: str) -> None:
    """Write only when the bytes change, so an unchanged page keeps its file untouched."""
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
