"""Charts of stored results (matplotlib, PNG): one line per row, a panel per parameter value.

Each workload module lists its charts as :class:`bench.plan.Chart` specs; this module draws
them from the rows the report has already summarised, so a chart never shows a figure the
tables do not (invalid and failed rows are left out of the lines and named in the caption).
Colours follow the variant, markers the style, and line styles the kind: solid for home-made
loops, dashed for reference loops, dotted for anchor servers.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from types import ModuleType

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

MARKERS = {"callbacks": "o", "generators": "s", "coroutines": "^", "native": "D"}
LINESTYLES = {"home-made": "-", "reference": "--", "anchor": ":"}


def _colours(labels: list[str]) -> dict[str, tuple]:
    palette = plt.get_cmap("tab20").colors
    return {name: palette[(i * 2) % 20 + (i // 10) % 2] for i, name in enumerate(sorted(labels))}


def draw(module: ModuleType, mode: str, points: list, chart_dir: Path) -> list[tuple[Path, str]]:
    """Draw every chart of a workload; (file, caption) for each one drawn."""
    drawn = []
    for spec in getattr(module, "CHARTS", ()):
        metric = next(m for m in module.METRICS if m.name == spec.metric)
        # panel value -> row label -> [(x, median, low, high)]
        series: dict[object, dict[str, list[tuple]]] = defaultdict(lambda: defaultdict(list))
        styles: dict[str, object] = {}
        missing: set[str] = set()
        for _key, params, rows in points:
            if spec.x not in params or any(params.get(k) != v for k, v in spec.where):
                continue
            panel = params.get(spec.panels) if spec.panels else None
            for r in rows:
                stat = r.summary.stats.get(metric.name) if r.summary.status == "ok" else None
                if stat is None:
                    missing.add(r.label)
                    continue
                series[panel][r.label].append(
                    (
                        params[spec.x],
                        *(v * metric.scale for v in (stat.median, stat.low, stat.high)),
                    )
                )
                styles[r.label] = r
        if not series:
            continue
        colours = _colours(sorted({r.row.variant for r in styles.values()}))
        panels = sorted(series, key=lambda v: (v is None, v))
        figure, axes = plt.subplots(
            1, len(panels), figsize=(6.5 * len(panels) + 2.5, 5.2), squeeze=False, sharey=False
        )
        for axis, panel in zip(axes[0], panels, strict=True):
            for label, values in sorted(series[panel].items()):
                values.sort()
                r = styles[label]
                xs = [v[0] for v in values]
                medians = [v[1] for v in values]
                errors = [[v[1] - v[2] for v in values], [v[3] - v[1] for v in values]]
                axis.errorbar(
                    xs,
                    medians,
                    yerr=errors,
                    label=label,
                    color=colours[r.row.variant],
                    marker=MARKERS.get(r.row.style, "x"),
                    linestyle=LINESTYLES[r.kind],
                    linewidth=1.6,
                    markersize=5,
                    capsize=2,
                    elinewidth=0.8,
                )
            if spec.log_x:
                axis.set_xscale("log")
            if spec.log_y:
                axis.set_yscale("log")
            axis.set_xlabel(spec.x_label)
            axis.set_ylabel(metric.label)
            if spec.panels:
                axis.set_title(module.panel_title(spec.panels, panel), fontsize=10)
            axis.grid(True, which="major", alpha=0.3)
            xs_all = sorted({v[0] for values in series[panel].values() for v in values})
            axis.set_xticks(xs_all, [f"{x:,}" for x in xs_all])
            axis.minorticks_off()
        handles, labels = axes[0][0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="center right", fontsize=8, frameon=False)
        figure.suptitle(
            f"{spec.title} ({mode} run)\nmedian of the repetitions, bars from min to max; "
            "solid: home-made, dashed: reference, dotted: anchor",
            fontsize=11,
        )
        figure.tight_layout(rect=(0, 0, 1 - 2.4 / figure.get_figwidth(), 0.93))
        chart_dir.mkdir(parents=True, exist_ok=True)
        path = chart_dir / f"{mode}-{module.NAME}-{spec.name}.png"
        figure.savefig(path, dpi=110)
        plt.close(figure)
        caption = spec.title
        if missing:
            caption += f" (no valid figure, not drawn: {', '.join(sorted(missing))})"
        drawn.append((path, caption))
    return drawn
