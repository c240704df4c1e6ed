"""Crawler, the running side: a site server per site, kept across rows; a crawler per repetition.

What is measured and why is the study's description (:mod:`bench.studies.crawler`).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

from bench.plan import Point, Row
from bench.procs import Child, ChildFailed, mib, peer_python, python
from bench.studies.crawler import SEED
from bench.study import Measuring
from machine.proc import cpu_seconds

PEER = "site server"
SITE = re.compile(r"site http://[^\s/]+:(\d+)/")


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
            peer_python(
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


MEASURING = Measuring(measure=measure, finish=finish)
