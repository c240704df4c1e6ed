"""The timelines page: every stored record as a zoomable chart, and as trace-event JSON.

Rows are the record's tasks, callbacks and thread work; a bar is one run slice. Colour means
one thing on every chart: the kind of row (task, callback, thread work). The time axis is in
the unit of the record's events (:func:`timeline.readings.time_unit`). Drag to zoom, scroll to
zoom, double-click to reset; each chart links to its trace-event file, which Perfetto opens.
"""

from __future__ import annotations

import json
from pathlib import Path

from htmlreport.markup import chart, esc
from timeline import readings, store  # the reading side of the timelines: no tracer, no loop
from timeline.traceevents import trace_events

KIND_COLOUR = {"task": "#1f77b4", "callback": "#2ca02c", "thread": "#d62728"}


def _name(record: dict) -> str:
    return f"{record['scenario']}-{record['loop']}-{record['style']}"


def _figure(record: dict) -> dict:
    unit, factor = readings.time_unit(record)
    names = {row["id"]: row["name"] for row in record["rows"]}
    kinds = {row["id"]: row["kind"] for row in record["rows"]}
    traces = []
    for kind in sorted({kinds[s["row"]] for s in record["slices"]}):
        pieces = [s for s in record["slices"] if kinds[s["row"]] == kind]
        traces.append(
            {
                "type": "bar",
                "orientation": "h",
                "name": kind,
                "y": [names[s["row"]] for s in pieces],
                "base": [round(s["start"] * factor, 3) for s in pieces],
                "x": [round((s["end"] - s["start"]) * factor, 3) for s in pieces],
                "customdata": [s.get("mark", "") for s in pieces],
                "marker": {"color": KIND_COLOUR.get(kind, "#7f7f7f")},
                "hovertemplate": (
                    f"%{{y}}: from %{{base}} {unit} for %{{x}} {unit}"
                    "<br>resumed by %{customdata}<extra>" + kind + "</extra>"
                ),
            }
        )
    order = [row["name"] for row in record["rows"]]
    return {
        "data": traces,
        "layout": {
            "title": {
                "text": f"{record['loop']} · {record['style']} · {record['scenario']} "
                f"(Python {record.get('python', '?')})"
            },
            "barmode": "overlay",
            "xaxis": {"title": {"text": f"time since the run started ({unit})"}},
            "yaxis": {
                "title": {"text": "row"},
                "automargin": True,
                "categoryorder": "array",
                "categoryarray": order[::-1],
            },
            "showlegend": True,
            "legend": {"title": {"text": "colour: kind of row"}},
            "height": 160 + 22 * len(order),
            "dragmode": "zoom",
        },
    }


def render(reports: Path) -> str:
    stored = store.load_all(reports / "timelines")
    if not stored:
        return "<p>No timelines are recorded yet: <code>nox -s timeline</code>.</p>"
    pythons = sorted({r.get("python", "?") for r in stored})
    parts = [
        "<p>Each chart is one traced run (the least disturbed of its repeats). Colour: the "
        "kind of row. Drag across a chart to zoom, scroll to zoom, double-click to reset. "
        "Each chart's trace-event file opens in Perfetto or chrome://tracing. "
        + (
            f"<strong>Records come from different interpreters ({esc(', '.join(pythons))})"
            "</strong>: each title names its own.</p>"
            if len(pythons) > 1
            else f"All records on Python {esc(pythons[0])}.</p>"
        )
    ]
    for record in stored:
        name = _name(record)
        parts.append(
            f'<h3 id="{esc(name)}">{esc(name)}</h3>'
            f'<p><a href="traces/{esc(name)}.json">trace-event JSON</a></p>'
            + chart(f"timeline-{name}", _figure(record), zoom=True)
        )
    return "\n".join(parts)


def write_traces(reports: Path, out: Path) -> None:
    """Every stored record as trace-event JSON in out/<scenario>-<loop>-<style>.json."""
    out.mkdir(parents=True, exist_ok=True)
    for record in store.load_all(reports / "timelines"):
        text = json.dumps(trace_events(record), sort_keys=True, separators=(",", ":")) + "\n"
        path = out / f"{_name(record)}.json"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
