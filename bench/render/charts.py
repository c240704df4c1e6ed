"""Charts of stored results (matplotlib, PNG): dot plots, one line of markers per row.

Each workload declares its charts as :class:`bench.plan.Chart` specs (``Workload.charts``);
this module draws them from the rows the report has already summarised, so a chart never
shows a figure the tables do not (invalid, failed and unmeasured rows are left out and named
in the caption).

Twenty rows do not fit as twenty crossing lines, so each chart is a Cleveland dot plot: the
rows down the side, best at the top (by the figure at the largest parameter value), the
figure along the bottom, one marker per value of the chart's parameter (connections,
sleepers, workers) joined by a thin line, with a bar from min to max. Row labels say the kind:
bold for home-made loops, plain for reference loops, italic grey for anchor servers; the
asyncio rows, the baseline (what a ratio divides by where a workload declares no bases), are
underlined by a faint band.
"""

from __future__ import annotations

import hashlib
import textwrap
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bench.plan import BASELINE
from bench.workload import Workload

MARKERS = ("o", "s", "^", "D", "v", "P")
LABEL_STYLE = {
    "home-made": {"fontweight": "bold", "color": "black"},
    "reference": {"color": "#1f3f7f"},
    "anchor": {"fontstyle": "italic", "color": "#666666"},
}


def _series(spec, metric, points) -> tuple[dict, dict, set]:
    """panel -> row label -> {x: (median, low, high)}, the rows by label, what is left out."""
    series: dict = defaultdict(lambda: defaultdict(dict))
    rows_by_label: dict = {}
    missing: set[tuple[str, object]] = set()  # (row label, x) without a valid figure
    bounds: set[tuple[str, object]] = set()  # (row label, x) drawn as "≥": the peer saturated
    for _key, params, rows in points:
        if spec.x not in params or any(params.get(k) != v for k, v in spec.where):
            continue
        panel = params.get(spec.panels) if spec.panels else None
        for r in rows:
            stat = r.summary.stats.get(metric.name) if r.summary.status == "ok" else None
            bound = r.summary.at_least.get(metric.name) if metric.higher_is_better else None
            if stat is None and bound is not None:  # client-bound: at least this much
                series[panel][r.label][params[spec.x]] = (bound * metric.scale,) * 3
                rows_by_label[r.label] = r
                bounds.add((r.label, params[spec.x]))
                continue
            if stat is None:
                missing.add((r.label, params[spec.x]))
                continue
            scaled = tuple(v * metric.scale for v in (stat.median, stat.low, stat.high))
            series[panel][r.label][params[spec.x]] = scaled
            rows_by_label[r.label] = r
    return series, rows_by_label, missing, bounds


def _panel(axis, workload, spec, metric, panel, by_row, rows_by_label, xs_colours, bounds=()):
    largest = max(x for values in by_row.values() for x in values)

    def rank(label: str) -> tuple[bool, float]:
        values = by_row[label]
        x = largest if largest in values else max(values)
        value = values[x][0]
        # a client-bound row is at least its figure: it goes to the top, never last
        return ((label, x) in bounds, value if metric.higher_is_better else -value)

    labels = sorted(by_row, key=rank)  # best ends up at the top
    for y, label in enumerate(labels):
        if rows_by_label[label].row.variant == BASELINE and not rows_by_label[label].row.anchor:
            axis.axhspan(y - 0.45, y + 0.45, color="#f2e6b3", zorder=0)
        values = by_row[label]
        ordered = sorted(values)
        axis.plot([values[x][0] for x in ordered], [y] * len(ordered), color="#bbbbbb", lw=1)
        for x in ordered:
            median, low, high = values[x]
            colour, marker = xs_colours[x]
            if (label, x) in bounds:
                axis.plot(median, y, marker=">", color=colour, markersize=7, zorder=3)
                axis.annotate(
                    f"≥ {median:,.0f}", (median, y), xytext=(6, -3), textcoords="offset points",
                    fontsize=7, color="#444444",
                )  # fmt: skip
                continue
            axis.errorbar(
                median,
                y,
                xerr=[[median - low], [high - median]],
                fmt=marker,
                color=colour,
                markersize=6,
                elinewidth=0.8,
                capsize=2,
                zorder=3,
            )
    axis.set_yticks(range(len(labels)), labels)
    for tick, label in zip(axis.get_yticklabels(), labels, strict=True):
        tick.set(**LABEL_STYLE[rows_by_label[label].kind])
    everything = [v for values in by_row.values() for t in values.values() for v in t]
    if min(everything) > 0 and max(everything) / min(everything) > 30:
        axis.set_xscale("log")
    else:
        axis.set_xlim(left=0)
    axis.set_xlabel(
        metric.label + (" (higher is better)" if metric.higher_is_better else " (lower is better)")
    )
    axis.set_ylim(-0.6, len(labels) - 0.4)
    axis.grid(True, axis="x", alpha=0.3)
    if spec.panels:
        axis.set_title(workload.panel_title(spec.panels, panel), fontsize=10)


def fingerprint(*inputs: object, drawn_by: str | None = None) -> str:
    """A hash of what a picture plots and of the code and matplotlib that draw it (this module
    and drawn_by, the module that draws the picture where another does): equal fingerprints
    draw equal pictures, so a picture whose fingerprint is unchanged is not redrawn."""
    code = Path(__file__).read_bytes()
    if drawn_by is not None:
        code += Path(drawn_by).read_bytes()
    return hashlib.sha256(repr((matplotlib.__version__, code, inputs)).encode()).hexdigest()


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def current(path: Path, stamp: str) -> bool:
    """Whether the picture at path was drawn from inputs with this fingerprint (stored beside
    it), so drawing it again would write the same picture."""
    stored = _stamp(path)
    return path.exists() and stored.exists() and stored.read_text().strip() == stamp


def save(figure, path: Path, stamp: str, dpi: int) -> None:
    """Write the picture and, beside it, the fingerprint of what it plots."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)
    _stamp(path).write_text(stamp + "\n")


def _count(value: int, noun: str) -> str:
    """'1 connection', '100 connections'."""
    if value == 1 and noun.endswith("s"):
        noun = noun[:-1]
    return f"{value:,} {noun}"


def draw(workload: Workload, mode: str, points: list, chart_dir: Path) -> list[tuple[Path, str]]:
    """Draw every chart of a workload; (file, caption) for each one drawn."""
    drawn = []
    for spec in workload.charts:
        metric = workload.metric(spec.metric)
        series, rows_by_label, missing, bounds = _series(spec, metric, points)
        if not series:
            continue
        path = chart_dir / f"{mode}-{workload.name}-{spec.name}.png"
        caption = _caption(spec, missing)
        panels = sorted(series, key=lambda v: (v is None, v))
        styles = {
            label: (r.kind, r.row.variant, r.row.anchor) for label, r in rows_by_label.items()
        }
        titles = [workload.panel_title(spec.panels, p) for p in panels] if spec.panels else None
        stamp = fingerprint(
            mode, workload.name, spec, metric, _plotted(series), sorted(missing), sorted(bounds),
            sorted(styles.items()), titles,
        )  # fmt: skip
        drawn.append((path, caption))
        if current(path, stamp):
            continue
        xs = sorted({x for panel in series.values() for row in panel.values() for x in row})
        palette = plt.get_cmap("viridis")
        xs_colours = {
            x: (palette(0.85 * i / max(1, len(xs) - 1)), MARKERS[i % len(MARKERS)])
            for i, x in enumerate(xs)
        }
        height = max(3.5, 2.0 + 0.32 * max(len(series[p]) for p in panels))
        figure, axes = plt.subplots(
            1, len(panels), figsize=(3.0 + 5.0 * len(panels), height), squeeze=False
        )
        for axis, panel in zip(axes[0], panels, strict=True):
            _panel(
                axis, workload, spec, metric, panel, series[panel], rows_by_label, xs_colours,
                bounds,
            )  # fmt: skip
        handles = [
            plt.Line2D([], [], color=colour, marker=marker, linestyle="", markersize=6)
            for colour, marker in xs_colours.values()
        ]
        figure.suptitle(f"{spec.title} ({mode} run)", x=0.01, y=1 - 0.1 / height, ha="left")
        # as many legend entries a line as the figure's width holds (2.9 inches each)
        per_line = max(1, min(len(xs), int(figure.get_figwidth() / 2.9)))
        legend_lines = -(-len(xs) // per_line)
        figure.legend(
            handles,
            [_count(x, spec.x_label) for x in xs],
            loc="upper left",
            bbox_to_anchor=(0.0, 1 - 0.45 / height),
            ncol=per_line,
            fontsize=9,
            frameon=False,
        )
        note = textwrap.fill(
            "median of the repetitions, bar from min to max; ▶ ≥ N: the load generator "
            "saturated its core, so the server does at least N; bold: home-made loop, plain: "
            "reference loop, italic: anchor server; shaded: asyncio",
            width=int(figure.get_figwidth() * 15),
        )
        figure.text(0.01, 0.01, note, fontsize=8, color="#444444")
        footer = (0.25 + 0.15 * note.count("\n")) / height
        figure.tight_layout(rect=(0, footer, 1, 1 - (0.4 + 0.22 * legend_lines) / height))
        save(figure, path, stamp, dpi=110)
    return drawn


def _plotted(series: dict) -> list:
    """The series as sorted plain lists, so equal data has one repr."""
    return sorted(
        (repr(panel), sorted((label, sorted(row.items())) for label, row in rows.items()))
        for panel, rows in series.items()
    )


def _caption(spec, missing: set) -> str:
    caption = spec.title
    if missing:
        gaps = defaultdict(list)
        for label, x in sorted(missing):
            gaps[label].append(_count(x, spec.x_label))
        caption += (
            " (not drawn, no valid figure: "
            + "; ".join(f"{label} at {', '.join(at)}" for label, at in gaps.items())
            + ")"
        )
    return caption
