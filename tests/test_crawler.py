"""The crawler end to end: every variant and style, through the CLI, against real servers.

Each case starts the site server (its own process) on a seeded site with every fault, crawls
it with ``python -m workloads.crawler`` and checks the JSON against the truth the site wrote:
exactly the reachable set with each URL's status and error, the errors by kind, the link
counts; then the site's own request log: no URL fetched twice (a reset may be resent once),
nothing asked of another origin, no more connections open than --per-host. The cases are
parametrized from discovery, so a variant that lands is crawled without editing this file.

The comparison with wget: pydoc-generated HTML documentation served by ``http.server`` (a
different server implementation, HTTP/1.0, one connection per request) must give the same
set of URLs as ``wget --recursive --spider``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

import loops
from workloads.crawler.site import FAULTS as FAULT_KINDS

ROOT = Path(__file__).resolve().parent.parent
# What the crawler asks of a loop, by style: the crawl needs sockets, a queue and timeouts.
NEEDS = {
    "callbacks": {"io"},
    "generators": {"io", "queue", "timeouts"},
    "coroutines": {"io", "queue", "timeouts"},
    "blocking": {"io", "queue", "timeouts"},
}


def crawl_cases() -> list:
    cases = []
    for variant in loops.discover().values():
        for style in variant.styles:
            missing = NEEDS[style] - variant.capabilities
            marks = (
                [pytest.mark.skip(reason=f"does not claim {sorted(missing)}")] if missing else []
            )
            cases.append(
                pytest.param(variant.name, style, id=f"{variant.name}-{style}", marks=marks)
            )
    return cases


CASES = crawl_cases()


def start(command: list[str], pattern: str, cwd: Path = ROOT) -> tuple[subprocess.Popen, re.Match]:
    """Start a server process; wait for the line of its stdout matching pattern (its address).

    Its stderr is inherited (pytest captures it): a pipe nobody reads would fill up with
    request logs and block the server.
    """
    process = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, text=True)
    for line in process.stdout:
        match = re.search(pattern, line)
        if match:
            return process, match
    process.wait()
    raise RuntimeError(f"{command} exited ({process.returncode}) without printing its address")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    process.stdout.close()


def start_site(workdir: Path, pages: int, links: int, seed: int, faults: str, *extra: str):
    """A seeded site server process: (process, start URL, truth)."""
    truth_path = workdir / "truth.json"
    command = [sys.executable, "-m", "workloads.crawler.site", "--port", "0"]
    command += ["--pages", str(pages), "--links", str(links), "--seed", str(seed)]
    command += ["--faults", faults, "--truth", str(truth_path), *extra]
    process, match = start(command, r"^site (http://\S+/) ")
    return process, match.group(1), json.loads(truth_path.read_text())


@pytest.fixture
def seeded_site(tmp_path):
    """A 150-page site with two of every fault; yields (start URL, truth). The crawler's
    --max-bytes (1 000 000) is above the 10 000-link page and below the huge one."""
    faults = ",".join(f"{kind}=2" for kind in FAULT_KINDS)
    process, start_url, truth = start_site(tmp_path, 150, 6, 7, faults, "--huge-bytes", "1200000")
    try:
        yield start_url, truth
    finally:
        stop(process)


def run_crawler(*args: str, json_path: Path | None = None, check: bool = True):
    command = [sys.executable, "-m", "workloads.crawler", *args]
    if json_path is not None:
        command += ["--json", str(json_path)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def site_log(start_url: str) -> dict:
    with urllib.request.urlopen(start_url + "_site/log", timeout=10) as answer:
        return json.load(answer)


def assert_matches_truth(result: dict, truth: dict) -> None:
    """The crawl found exactly the site's reachable set, each URL's status and error, the
    errors by kind (every fault kind among them) and the links it did not follow."""
    found = {
        page["url"]: {"status": page["status"], "error": page["error"]} for page in result["pages"]
    }
    assert found == truth["pages"]
    assert [page["url"] for page in result["pages"]] == sorted(found)
    assert result["errors"] == truth["errors"]
    assert set(result["errors"]) == {kind for _, kind in FAULT_KINDS.values() if kind}
    assert result["off_origin_links"] == truth["off_origin_links"]
    assert result["ignored_links"] == truth["ignored_links"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("loop", "style"), CASES)
def test_crawl_finds_exactly_the_reachable_set_and_the_injected_errors(
    seeded_site, tmp_path, loop, style
):
    start_url, truth = seeded_site
    out = tmp_path / "crawl.json"
    run_crawler(
        "--loop", loop, "--style", style, start_url, "--concurrency", "8", "--per-host", "4",
        "--timeout", "1.5", "--max-bytes", "1000000", json_path=out,
    )  # fmt: skip
    result = json.loads(out.read_text())
    assert_matches_truth(result, truth)
    assert (result["loop"], result["style"]) == (loop, style)

    log = site_log(start_url)
    requests = [row for row in log["requests"] if row[2] != "/_site/log"]
    origin_host = start_url.split("://", 1)[1].rstrip("/")
    assert {host for _, host, _, _ in requests} == {origin_host}, "asked another origin"
    assert log["elsewhere_hits"] == 0, "fetched a link to the other origin"
    counts = Counter({target: n for _, _, target, n in requests})
    assert {start_url + t[1:] for t in counts} == set(truth["pages"])
    resent = {t for t, n in counts.items() if n > 1}
    assert all(t.startswith("/fault/reset/") and counts[t] == 2 for t in resent), resent
    assert log["max_open"] <= 4 + 1  # the crawler's four, and this test's own log request


@pytest.mark.timeout(60)
def test_max_pages_stops_admitting(seeded_site, tmp_path):
    start_url, _ = seeded_site
    out = tmp_path / "crawl.json"
    run_crawler(
        "--loop", "asyncio", start_url, "--max-pages", "25", "--timeout", "0.5", json_path=out
    )
    result = json.loads(out.read_text())
    assert result["pages_fetched"] == 25
    assert result["over_budget"] > 0


@pytest.fixture(scope="module")
def thousand_page_site(tmp_path_factory):
    """The issue's site: 1 000 pages, 8 links each, one of every fault (a 2 MiB huge page, over
    the crawler's default --max-bytes)."""
    process, start_url, truth = start_site(tmp_path_factory.mktemp("site"), 1000, 8, 1, "all")
    try:
        yield start_url, truth
    finally:
        stop(process)


@pytest.mark.skipif(
    os.environ.get("LAB_CRAWL_1000") != "1",
    reason="set LAB_CRAWL_1000=1 for the 1 000-page crawl on every variant (about a minute on "
    "this 2-core machine; the bench checks every 1 000-page crawl against the truth too)",
)
@pytest.mark.timeout(120)
@pytest.mark.parametrize(("loop", "style"), CASES)
def test_thousand_page_site_with_faults(thousand_page_site, tmp_path, loop, style):
    start_url, truth = thousand_page_site
    out = tmp_path / "crawl.json"
    run_crawler("--loop", loop, "--style", style, start_url, "--timeout", "2", json_path=out)
    assert_matches_truth(json.loads(out.read_text()), truth)


def test_unknown_loop_and_style_are_clear_errors():
    done = run_crawler("--loop", "nope", "http://127.0.0.1:9/", check=False)
    assert done.returncode == 2
    assert "unknown loop 'nope'" in done.stderr and "asyncio" in done.stderr
    done = run_crawler(
        "--loop", "asyncio", "--style", "generators", "http://127.0.0.1:9/", check=False
    )
    assert done.returncode == 2
    assert "does not speak generators" in done.stderr
    done = run_crawler(
        "--loop", "asyncio", "--style", "threads", "http://127.0.0.1:9/", check=False
    )
    assert done.returncode == 2
    assert "unknown style 'threads'" in done.stderr


def test_unfetchable_start_urls_are_clear_errors():
    for url, message in [("https://127.0.0.1/", "TLS"), ("ftp://x/", "not an http(s) URL")]:
        done = run_crawler("--loop", "asyncio", url, check=False)
        assert done.returncode == 2
        assert message in done.stderr


def test_a_refused_connection_is_an_error_not_a_crash(tmp_path):
    out = tmp_path / "crawl.json"
    run_crawler("--loop", "asyncio", "http://127.0.0.1:9/", json_path=out)  # nothing listens on 9
    result = json.loads(out.read_text())
    assert result["errors"] == {"connect": 1}


def test_site_rejects_bad_arguments():
    base = [sys.executable, "-m", "workloads.crawler.site", "--port", "0"]
    for extra, message in [
        (["--pages", "5", "--faults", "bogus"], "unknown fault 'bogus'"),
        (["--root", ".", "--faults", "404"], "need a seeded site"),
        ([], "one of the arguments --pages --root is required"),
    ]:
        done = subprocess.run(base + extra, cwd=ROOT, capture_output=True, text=True, timeout=30)
        assert done.returncode == 2
        assert message in done.stderr


# --- against wget, on a real documentation site served by another server ------------------

DOC_MODULES = ["json", "json.decoder", "json.encoder", "json.scanner", "http", "http.client"]
DOC_MODULES += ["urllib", "urllib.parse", "urllib.request", "email", "email.message", "html"]


@pytest.fixture(scope="module")
def docs_site(tmp_path_factory):
    """pydoc's HTML for some standard modules, served by http.server: yields the start URL."""
    docs = tmp_path_factory.mktemp("docs")
    subprocess.run(
        [sys.executable, "-m", "pydoc", "-w", *DOC_MODULES],
        cwd=docs,
        check=True,
        capture_output=True,
    )
    command = [sys.executable, "-u", "-m", "http.server", "--bind", "127.0.0.1", "0"]
    process, match = start(command, r"port (\d+)", cwd=docs)
    try:
        yield f"http://127.0.0.1:{match.group(1)}/json.html"
    finally:
        stop(process)


def wget_urls(start_url: str, workdir: Path) -> set[str]:
    """The URLs `wget --recursive --spider` requests, from its log."""
    log = workdir / "wget.log"
    command = ["wget", "--recursive", "--spider", "--level=inf", "-e", "robots=off"]
    command += ["--verbose", "--output-file", str(log), start_url]
    subprocess.run(command, cwd=workdir, timeout=120)  # exit 8 means it found broken links
    request_line = re.compile(r"^--\S+ \S+--\s+(?:\(try:\s*\d+\)\s+)?(\S+)$", re.M)
    return set(request_line.findall(log.read_text()))


@pytest.fixture(scope="module")
def wget_found(docs_site, tmp_path_factory):
    if shutil.which("wget") is None:
        pytest.skip("wget is not installed here: the comparison needs it")
    return wget_urls(docs_site, tmp_path_factory.mktemp("wget"))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("loop", "style"), CASES)
def test_same_page_set_as_wget_on_a_documentation_site(
    docs_site, wget_found, tmp_path, loop, style
):
    out = tmp_path / "crawl.json"
    run_crawler("--loop", loop, "--style", style, docs_site, json_path=out)
    result = json.loads(out.read_text())
    found = {page["url"] for page in result["pages"]}
    assert len(wget_found) > 20, "the documentation site is too small to compare"
    assert found == wget_found, result["errors"]
    assert result["errors"].get("http-4xx", 0) > 0  # pydoc links to modules not generated


@pytest.mark.timeout(60)
def test_site_serves_a_directory(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "index.html").write_text('<a href="sub">sub</a> <a href="notes.txt">notes</a>')
    (tmp_path / "notes.txt").write_text("plain")
    (tmp_path / "sub" / "page.html").write_text('<a href="../">up</a><a href="missing.html">x</a>')
    command = [
        sys.executable,
        "-m",
        "workloads.crawler.site",
        "--port",
        "0",
        "--root",
        str(tmp_path),
    ]
    process, match = start(command, r"^site (http://\S+/) ")
    try:
        out = tmp_path / "crawl.json"
        run_crawler("--loop", "asyncio", match.group(1), json_path=out)
    finally:
        stop(process)
    pages = {
        p["url"].split("/", 3)[3]: (p["status"], p["error"])
        for p in json.loads(out.read_text())["pages"]
    }
    assert pages == {
        "": (200, None),
        "sub": (301, None),
        "sub/": (200, None),
        "sub/page.html": (200, None),
        "sub/missing.html": (404, "http-4xx"),
        "notes.txt": (200, "not-html"),
    }
