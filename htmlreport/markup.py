"""The site's small HTML parts, shared by every page: escaping, numbers, a chart's slot.

A chart is its Plotly figure as JSON in the page, beside the element the script draws it in,
so a page holds its data and renders from the file with no network.
"""

from __future__ import annotations

import html
import json
import re


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def markdown_code(text: str) -> str:
    """Escaped text with markdown's `code` spans as <code> (the severities file is markdown)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", esc(text))


def fmt(value: float, digits: int) -> str:
    return f"{value:,.{digits}f}"


def chart(chart_id: str, figure: dict, zoom: bool = False) -> str:
    """A chart's element and its figure, sorted so the same data writes the same bytes."""
    data = json.dumps(figure, sort_keys=True, separators=(",", ":")).replace("</", "<\\/")
    extra = ' data-zoom="scroll"' if zoom else ""
    return (
        f'<div class="chart" id="{chart_id}"{extra}></div>'
        f'<script type="application/json" id="{chart_id}-figure">{data}</script>'
    )
