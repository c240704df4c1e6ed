"""A ratio prints one interval and one word wherever it appears: bench.md and the HTML site
compute it by the same method from the same stored repetitions (bench/uncertainty.py), and no
page falls back on a word the method does not say ("level")."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from bench.render import intervals

REPORTS = Path(__file__).resolve().parent.parent / "reports"
PAGES = {"site/bench.html": "bench.md", "site/bench-full.html": "bench-full.md"}
# The bases bench.md's tables print a ratio to; the site offers two more of its own.
PRINTED = ("asyncio-protocol", "uvloop-protocol")
CELL = re.compile(
    r'data-shown-(?P<base>[a-z-]+)="×(?P<r>[0-9.]+)" data-kind-[a-z-]+="(?P<kind>[^"]*)" '
    r'data-verdict-[a-z-]+="(?P<said>[^"]*)" '
    r'data-interval-[a-z-]+="(?P<lo>[0-9.]+)–(?P<hi>[0-9.]+)"'
)


@pytest.mark.parametrize("site, page", sorted(PAGES.items()))
def test_the_site_prints_every_ratio_as_the_page_does(site, page):
    if not (REPORTS / site).exists():
        pytest.skip(f"{site} is not rendered here (python -m htmlreport)")
    text = (REPORTS / page).read_text()
    cells = [m for m in CELL.finditer((REPORTS / site).read_text()) if m["base"] in PRINTED]
    assert cells, f"{site} prints no ratio"
    missing = [
        f"×{m['r']} [{m['lo']}–{m['hi']}]"
        for m in cells
        if f"×{m['r']} [{m['lo']}–{m['hi']}]" not in text
    ]
    assert missing == [], f"{len(missing)} of {len(cells)} ratios of {site} not in {page}"
    for m in cells:  # the cell's short word is its full word's kind
        assert m["kind"] == intervals.kind(html.unescape(m["said"])) in intervals.KINDS


def test_no_page_says_level():
    pages = [*PAGES.values(), *PAGES]
    said = re.compile(
        r"\], level\b|\blevel \(the interval|data-verdict-[a-z-]+=\"level\"|\blevel here\b"
    )
    for page in pages:
        if (REPORTS / page).exists():
            assert not said.search((REPORTS / page).read_text()), page


def test_a_word_follows_its_interval_as_printed():
    assert intervals.worded((1.2, 1.1, 1.3)).endswith("dearer")
    assert intervals.worded((0.8, 0.7, 0.9), higher_is_better=True).endswith("slower")
    assert intervals.worded((1.0, 0.97, 1.04)).endswith("within ±5%")
    assert "can't tell (a difference under" in intervals.worded((1.1, 0.9, 1.4))
    assert intervals.worded((1.1, 0.9, 1.4), brief=True).endswith("], can't tell")
