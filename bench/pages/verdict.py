"""The answer first: at most eight items, read off the stored data, that a chooser needs.

The chooser's screen (:mod:`bench.pages.chooser`: the servers users install, a row each, then
the home-made loops and multi-core); how still the headline ratios are; the worst finding of
the conformance suite; where to read next. Every figure comes from ``reports/results/`` (the
bench's stored repetitions and the conformance suite's outcomes); the points are the headline
points (``bench.headline``), so this page and the bench's glance read the same rows.

The items are markdown (``chooser.markdown`` lays them out): bench.md opens with them, and
the HTML site's index shows them.
"""

from __future__ import annotations

from pathlib import Path

from bench.pages import chooser
from bench.studies.reproductions import render as reproduction
from conformance import findings as found
from machine.interpreters import REFERENCE


def lines(reports: Path, mode: str = "quick", link: str = "") -> list[str]:
    """The verdict as markdown lines (at most 8) from one run's stored results (quick or
    full); link prefixes relative links to reports/ (the site is one folder down)."""

    # The chooser's first screen (bench/pages/chooser.py): the servers, then the home-made.
    out = chooser.lines(reports, mode, link)
    still = reproduction.bullet(reports / "results") if mode == "quick" else None
    if still:
        out.append(still)
    stored = found.stored(reports / "results" / "conformance")
    if stored:
        results = stored.get(REFERENCE) or next(iter(stored.values()))
        worst = found.findings(results, found.load_severities(), {})
        if worst:
            f = worst[0]
            loops = ", ".join(f"{v} ({'/'.join(s)})" for v, s in sorted(f.affected.items()))
            out.append(
                f"**Biggest correctness hazard** ([conformance]({link}conformance.md#findings)): "
                f"*{f.severity}* on {loops}: {f.text}."
            )
    # What the table's regimes measure: after the hazard, which must stay on the first screen.
    out.append(chooser.regime(reports, mode, link) or "")
    site = "" if link else ", [the HTML report](site/index.html)"
    out.append(
        f"Read next: [the glance]({link}bench.md#at-a-glance), "
        f"[the full run]({link}bench-full.md), [conformance]({link}conformance.md), "
        f"[timelines]({link}timelines.md){site}, "
        f"[the loops' reading path]({link}../loops/README.md), [the README]({link}../README.md)."
    )
    return [item for item in out if item][:8]
