"""The pages: reports/bench.md (and bench-full.md) and the READMEs' rendered blocks, from stored
data alone, reading across the studies (the verdict, the glance, scale, the interpreters).

Nothing here runs a study or imports the running code; each study's own part of a page comes
from its rendering side, looked up by its name (:func:`bench.pages.report.study_section`).
"""

from __future__ import annotations

from pathlib import Path

from bench.pages.reading import render_reading
from bench.pages.report import render_all


def render_every_page(results: Path) -> list[Path]:
    """Every report and every README's rendered blocks; the files written."""
    return render_all(results) + render_reading(results)
