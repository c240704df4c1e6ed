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

import json
import re
import subprocess
import tempfile
from pathlib import Path

from bench.plan import Chart, Metric, Point, Row, implemented_styles, variant_rows
from bench.procs import Child, ChildFailed, cpu_seconds, mib, python

NAME = "crawler"
TITLE = "Crawler"
PEER = "site server"
PAGES = 1000
SEED = 1
FULL = {"delays": (0, 20), "concurrency": (1, 10, 100)}
QUICK_POINTS = ((20, 10), (20, 100))  # (delay ms, concurrency)
SITE = re.compile(r"site http://[^\s/]+:(\d+)/")
# Full run: a crawl past this many seconds is stored as "did not finish"; at least 3
# repetitions, up to 5 where the spread asks for it (2 to 3 for the crawls that wait on
# latency one page at a time, about 20 s each).
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


class SitePool:
    """One site server per site, started on first use and stopped when the site changes."""

    def __init__(self) -> None:
        self.key: tuple | None = None
        self.child: Child | None = None
        self.port = 0
        self.truth: dict = {}
        self.workdir: tempfile.TemporaryDirectory | None = None

    def get(self, params: dict, cores) -> SitePool:
        key = (params["pages"], params["delay_ms"])
        if self.key == key and self.child is not None and self.child.proc.poll() is None:
            return self
        self.close()
        self.workdir = tempfile.TemporaryDirectory(prefix="lab-site-")
        workdir = Path(self.workdir.name)
        truth_path = workdir / "truth.json"
        self.child = Child(
            python(
                "-m",
                "workloads.crawler.site",
                "--port",
                "0",
                "--pages",
                str(params["pages"]),
                "--seed",
                str(SEED),
                "--delay-ms",
                str(params["delay_ms"]),
                "--truth",
                str(truth_path),
            ),
            cores.peer,
            stdout=subprocess.PIPE,
            stderr_path=workdir / "site.err",
        )
        self.port = self.child.read_port(timeout=60, announcement=SITE)
        self.truth = json.loads(truth_path.read_text())
        self.key = key
        return self

    def close(self) -> None:
        if self.child is not None:
            try:
                self.child.stop(timeout=10)
            except ChildFailed:
                pass  # it is killed below either way; a site server's exit is not measured
            finally:
                self.child.kill()
        if self.workdir is not None:
            self.workdir.cleanup()
        self.child, self.key, self.workdir = None, None, None


SITES = SitePool()


def finish() -> None:
    """Stop the site server left running by the last point (the runner calls this)."""
    SITES.close()


def measure(point: Point, row: Row, cores, workdir: Path, full: bool) -> dict:
    """One repetition: a fresh crawler process crawling the point's site server."""
    params = point.args
    site = SITES.get(params, cores)
    out = workdir / "crawl.json"
    url = f"http://127.0.0.1:{site.port}/"
    argv = python("-m", "workloads.crawler", "--loop", row.variant, "--style", row.style, url)
    argv += ["--concurrency", str(params["concurrency"]), "--json", str(out)]
    site_before = cpu_seconds(site.child.pid)
    crawler = Child(argv, cores.subject, stderr_path=workdir / "crawl.err")
    try:
        usage = crawler.wait(timeout=point.cap_s or 600)
    finally:
        crawler.kill()
    site_after = cpu_seconds(site.child.pid)
    crawler.check(usage)
    result = json.loads(out.read_text())
    mismatch = compare(result, site.truth)
    if mismatch:
        raise ChildFailed(mismatch)
    share = None
    if site_before is not None and site_after is not None and usage.wall_seconds > 0:
        share = (site_after - site_before) / result["wall_s"]
    fetched = result["pages_fetched"]
    return {
        "pages_per_s": result["pages_per_s"],
        "cpu_ms_per_page": result["cpu_s"] / fetched * 1000 if fetched else None,
        "peak_rss_mib": mib(usage.peak_rss_bytes),
        "pages_found": len(result["pages"]),
        "peer_cpu_share": share,
        "peer": PEER,
        "wall_s": result["wall_s"],
        "crawl_errors": result["error_count"],
    }


def compare(result: dict, truth: dict) -> str:
    """Why a crawl's pages differ from the site's reachable set ('' when they are the same)."""
    found = {p["url"]: (p["status"], p["error"]) for p in result["pages"]}
    expected = {url: (p["status"], p["error"]) for url, p in truth["pages"].items()}
    if found == expected:
        return ""
    missing = sorted(set(expected) - set(found))
    extra = sorted(set(found) - set(expected))
    differing = sorted(u for u in set(found) & set(expected) if found[u] != expected[u])
    parts = [f"found {len(found)} pages; the site has {len(expected)} reachable"]
    for name, urls in (("missing", missing), ("extra", extra), ("different status", differing)):
        if urls:
            parts.append(f"{name} {len(urls)} (e.g. {urls[0]})")
    return "; ".join(parts)
