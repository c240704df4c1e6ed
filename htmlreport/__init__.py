"""The HTML report: a static site under ``reports/site/``, rendered from stored data alone.

``python -m htmlreport`` (run by ``nox -s report``) reads what the other rooms stored (the
bench's results in ``reports/results/<mode>/``, the conformance suite's outcomes in
``reports/results/conformance/``, the timelines' records in ``reports/timelines/``) and writes
an index (opening with the verdict of :mod:`bench.pages.verdict`, as bench.md does) and one
page per report. It imports declarations and readers (the bench's workload registry, its
summary rules and intervals, the conformance findings, the timelines' record reader) and never
the code that runs loops, so it re-renders without measuring anything.

The site opens from ``file://`` with no network: the one JavaScript library, plotly.js, comes
from PyPI's ``plotly`` package (the bench dependency group) and is copied into the site;
tables sort on a header click, a selector of the base changes every ratio on a bench page,
charts show values on hover and toggle rows from their legend, and timelines zoom.
``tests/test_site.py`` checks all of that in headless Chromium.
"""

from htmlreport.build import PAGES, build

__all__ = ["PAGES", "build"]
