"""Crawler, the rendering side: after its tables, why a crawl finds more URLs than the site
has pages, from the site's own seeded graph (drawn as the site server draws it)."""

from __future__ import annotations

import re

from bench.studies.crawler import SEED
from bench.study import Rendering

# The site server's module loads uvloop and httptools: the rendering side reads the site's own
# graph, the declaration never does.
from workloads.crawler.site import SeededSite


def pages_found(stored_points: dict, sessions: dict | None = None) -> list[str]:
    """Why a crawl of the 1,000-page site finds more than 1,000 URLs, from the site's own truth
    (the seeded graph, drawn here as the site server draws it: no server is started)."""
    sizes = sorted({point["params"]["pages"] for point in stored_points.values()})
    lines = []
    for pages in sizes:
        site = SeededSite(pages=pages, links=8, seed=SEED)
        site.build("http://site", "http://elsewhere")
        redirects = sum(bool(re.search(r"go/\d+$", url)) for url in site.truth["pages"])
        lines += [
            f"*Why more than {pages:,} pages are found:* the count is every URL a correct "
            f"crawl fetches, and on this seeded site (seed {SEED}, 8 links a page) that is "
            f"{len(site.truth['pages']) - redirects:,} of its {pages:,} pages (the rest are "
            f"reachable from nowhere) and {redirects:,} redirect URLs (`/go/<i>`), "
            f"{len(site.truth['pages']):,} in all (computed from the site's truth, "
            "`workloads/crawler/site.py`).",
            "",
        ]
    return lines


RENDERING = Rendering(
    section_end=pages_found,
)
