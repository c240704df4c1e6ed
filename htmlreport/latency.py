"""The bench page's "Latency as the load rises" section: the curves and knees bench.md shows.

The same curves from the same functions (:mod:`bench.studies.latency.render`: a row's steps,
where its climb ended, its knee), drawn with Plotly: a chart per group of rows, p99 solid and p50
dashed against the offered rate on log axes, the knee ringed; and the knee table, sortable.
"""

from __future__ import annotations

from typing import Any

from bench.studies.latency import CEILING, KEPT
from bench.studies.latency.render import GROUPS, HEADERS, curves, table_rows
from htmlreport.markup import chart, esc

PALETTE = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd",
)  # fmt: skip


def _figure(made: list, title: str) -> dict:
    traces = []
    for i, curve in enumerate(made):
        colour = PALETTE[i % len(PALETTE)]
        steps = [s for s in curve.steps if s.state == KEPT and s.p99 is not None]
        rates = [s.rate for s in steps]
        common = {"x": rates, "type": "scatter", "legendgroup": curve.key}
        traces.append(
            common | {
                "y": [s.p99 for s in steps], "name": curve.label, "mode": "lines+markers",
                "line": {"color": colour},
                "hovertemplate": f"{esc(curve.label)}: p99 %{{y}} ms at %{{x}}/s<extra></extra>",
            }
        )  # fmt: skip
        traces.append(
            common | {
                "y": [s.p50 for s in steps], "name": f"{curve.label} p50", "mode": "lines",
                "line": {"color": colour, "dash": "dash"}, "showlegend": False,
                "hovertemplate": f"{esc(curve.label)}: p50 %{{y}} ms at %{{x}}/s<extra></extra>",
            }
        )  # fmt: skip
        point = curve.knee
        if point is not None and point.p99 is not None:
            bounded = curve.ended is None or curve.ended.state == CEILING
            traces.append(
                {
                    "x": [point.rate], "y": [point.p99], "type": "scatter", "mode": "markers",
                    "legendgroup": curve.key, "showlegend": False,
                    "marker": {"symbol": "triangle-right-open" if bounded else "circle-open",
                               "size": 14, "color": colour},
                    "hovertemplate": f"{esc(curve.label)}: knee at %{{x}}/s<extra></extra>",
                }
            )  # fmt: skip
    ladder = sorted({s.rate for c in made for s in c.steps if s.state == KEPT})
    return {
        "data": traces,
        "layout": {
            "title": {"text": f"Latency as the load rises, {esc(title)}: p99 solid, p50 dashed"},
            "xaxis": {
                "title": {"text": "offered load (requests/s)"},
                "type": "log",
                "tickvals": ladder,
                "ticktext": [f"{r:,}" for r in ladder],
            },
            "yaxis": {"title": {"text": "latency from the scheduled send (ms)"}, "type": "log"},
            "legend": {"title": {"text": "rows (click to hide); ringed: the knee"}},
            "height": 520,
        },
    }


def _cell(text: str) -> str:
    """A knee table cell; a figure sorts as a number ("21,083" by 21083, not as text)."""
    plain = text.replace(",", "")
    number = plain.replace(".", "", 1).isdigit()
    return f'<td data-sort="{plain}">{esc(text)}</td>' if number else f"<td>{esc(text)}</td>"


def section(workload: Any, stored: dict, mode: str) -> str:
    """The section's HTML ("" when no curve is stored)."""
    made = curves(workload, stored.get("points", {}), mode == "full")
    if not made:
        return ""
    parts = [f'<h2 id="{esc(workload.name)}">{esc(workload.title)}</h2>']
    parts.append(f"<p>{esc(workload.description.strip())}</p>")
    for name, title, kinds in GROUPS:
        group = [c for c in made if c.kind in kinds and any(s.p99 for s in c.steps)]
        if group:
            parts.append(chart(f"latency-{name}", _figure(group, title)))
    rows = "".join(
        "<tr>" + "".join(_cell(cell) for cell in row) + "</tr>" for row in table_rows(made)
    )
    parts.append(
        '<table class="sortable"><thead><tr>'
        + "".join(f"<th>{esc(h)}</th>" for h in HEADERS)
        + f"</tr></thead><tbody>{rows}</tbody></table>"
    )
    return "\n".join(parts)
