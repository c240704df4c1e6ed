"""Crawler: pages per second through every loop and style, against the embedded site server.

One point is one site (1 000 seeded pages, with or without added latency per answer) and one
crawler concurrency. The site server (``python -m workloads.crawler.site``, on uvloop) is the
fixed peer: one fresh process per site (pages and latency) on the peer core, serving every
row's crawls, so all rows meet the same warmed-up server. Each repetition is a fresh crawler process
(``python -m workloads.crawler``) on the subject core. A crawl counts only if it found exactly
the site's reachable set, with the same status for every page, as the site's own truth file
says; anything else fails the row. The site server's CPU share over the crawl decides whether
the repetition is valid (a saturated site would be measuring itself).
"""

from __future__ import annotations

from bench.plan import Chart, Glance, Metric, Point, implemented_styles, variant_rows
from bench.workload import Workload

NAME = "crawler"
TITLE = "Crawler"
PAGES = 1000
SEED = 1
FULL = {"delays": (0, 20), "concurrency": (1, 10, 100)}
QUICK_POINTS = ((20, 10), (20, 100))  # (delay ms, concurrency)
HEADLINE_POINT = {"delay_ms": 20, "concurrency": 100}  # the point the glance reads
GLANCE = (
    Glance(
        "crawl pages/s",
        tuple(HEADLINE_POINT.items()),
        "pages_per_s",
        "pages/s",
        "crawler, 20 ms latency × 100 workers",
        place=50,
    ),
)
# Full run: a crawl past this many seconds is stored as "did not finish"; at least 3
# repetitions, up to 5 where the spread asks for it (2 to 3 for the crawls that wait on
# latency one page at a time, the longest).
CAP_S = 180.0
REPETITIONS = (3, 5)
SLOW_REPETITIONS = (2, 3)

METRICS = (
    Metric("pages_per_s", "pages/s", higher_is_better=True, digits=0),
    Metric("cpu_ms_per_page", "crawler CPU (ms / page)", higher_is_better=False, digits=3),
    Metric("peak_rss_mib", "crawler peak RSS (MiB)", higher_is_better=False, digits=1),
    Metric("pages_found", "pages found (= reachable)", higher_is_better=True, ratio=False),
    Metric(
        "peer_cpu_share", "site CPU (% of a core)", higher_is_better=False, scale=100, ratio=False
    ),
)
HEADLINE = "pages_per_s"
CHARTS = (
    Chart(
        name="pages",
        metric="pages_per_s",
        x="concurrency",
        panels="delay_ms",
        title="Crawler: pages per second by concurrency",
        x_label="concurrent workers",
    ),
)
DESCRIPTION = f"""\
The crawler of the "500 Lines or Less" chapter made real (a queue, N workers, keep-alive
HTTP/1.1 parsed by httptools, links extracted with selectolax, URLs de-duplicated) crawls a
seeded site of {PAGES:,} pages served by the embedded site server, with no added latency and
with 20 ms per answer. **pages/s** is pages fetched per wall second of the crawl; **crawler
CPU** is per page fetched; **pages found** must equal the site's reachable set, page by page
(a crawl that differs fails its row). The site server runs in its own process on the other
core, one per point, shared by every row's crawls; its CPU share over each crawl decides
validity. Quick run: {", ".join(f"{d} ms × {c}" for d, c in QUICK_POINTS)} (latency ×
concurrency); full run: every pair of {FULL["delays"]} ms and {FULL["concurrency"]} workers.
""".replace("\n", " ")


def unavailable() -> str | None:
    if not implemented_styles("workloads.crawler"):
        return "workloads/crawler is not in this tree yet"
    return None


def points(full: bool) -> list[Point]:
    rows = tuple(variant_rows(implemented_styles("workloads.crawler")))
    pairs = [(d, c) for d in FULL["delays"] for c in FULL["concurrency"]] if full else QUICK_POINTS
    found = []
    for delay, concurrency in pairs:
        params = (("pages", PAGES), ("delay_ms", delay), ("concurrency", concurrency))
        if not full:
            found.append(Point(NAME, params, rows, 3))
            continue
        least, most = SLOW_REPETITIONS if delay and concurrency == 1 else REPETITIONS
        found.append(Point(NAME, params, rows, most, least, CAP_S))
    return found


def point_title(params: dict) -> str:
    latency = f"{params['delay_ms']} ms per answer" if params["delay_ms"] else "no added latency"
    workers = params["concurrency"]
    return f"{params['pages']:,} pages, {latency}, {workers} worker{'s' * (workers != 1)}"


def panel_title(parameter: str, value) -> str:
    return f"{value} ms per answer" if value else "no added latency"


def pages_found(stored_points: dict) -> list[str]:
    """Why a crawl of the 1,000-page site finds more than 1,000 URLs, from the site's own truth
    (the seeded graph, drawn here as the site server draws it: no server is started)."""
    import re

    # Only here: the site server's module loads uvloop and httptools, which no declaration needs.
    from workloads.crawler.site import SeededSite

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


WORKLOAD = Workload(
    section_end=pages_found,
    name=NAME,
    title=TITLE,
    description=DESCRIPTION,
    metrics=METRICS,
    headline=HEADLINE,
    points=points,
    point_title=point_title,
    running="bench.measure.crawler",
    charts=CHARTS,
    glance=GLANCE,
    panel_title=panel_title,
    unavailable=unavailable,
)
