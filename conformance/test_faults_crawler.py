"""A hostile site: the crawl still ends within its timeouts, with every fault recorded by kind.

One site server process (``python -m workloads.crawler.site``) serves a small seeded site
with one of every fault it knows (``--faults all``): a redirect loop, a redirect to another
origin, a 50 MiB page, a body that drips a byte a second, a malformed status line, invalid
UTF-8 around links, a Content-Length that lies (and one that promises more than comes before
the close), 10 000 links on one page, ``javascript:`` and ``mailto:`` links, resets, 404/500.
Each case crawls it with the lab's crawler (``python -m workloads.crawler``) on the case's
loop and style, in its own process, and checks:

- the crawl ends (the process exits 0; a hung crawl fails the case at its timeout),
- it found exactly what the site's truth file says a correct crawl finds: every URL with its
  status and error kind, the errors by kind, the links it did not follow,
- the site's request log shows no request for another host, and the other origin saw none,
- the crawler's peak memory (VmHWM, watched and self-reported) stayed far below the 50 MiB
  page.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections import Counter

import pytest

from conformance.processes import (
    case_prop,
    loop_args,
    module_command,
    needs_also,
    running,
    spawn,
    wait_watching_memory,
)
from workloads.crawler.site import FAULTS

HUGE = 50 * 2**20
TIMEOUT = 1.5  # the crawler's --timeout: the drip, the lying length and the slow body hit it
# The crawler's peak RSS, bytes: it reads at most --max-bytes (1 MiB) of the huge page, so it
# stays near its start-up size (tens of MiB with a loop and the parsers imported). A crawler that
# read the 50 MiB page whole would hold it at least twice (the chunks, then the joined body).
MEMORY_BOUND = 100 * 2**20
SITE_READY = r"^site http://[^\s/]+:(\d+)/ "


@pytest.fixture(scope="module")
def hostile_site(tmp_path_factory):
    """(server, start URL, truth) of a 40-page site with one of every fault."""
    workdir = tmp_path_factory.mktemp("hostile-site")
    truth_path = workdir / "truth.json"
    command = module_command(
        "workloads.crawler.site", "--port", "0", "--pages", "40", "--links", "6", "--seed", "3",
        "--faults", "all", "--huge-bytes", str(HUGE), "--truth", str(truth_path),
    )  # fmt: skip
    with running(command, SITE_READY, workdir) as site:
        start_url = f"http://127.0.0.1:{site.port}/"
        yield site, start_url, json.loads(truth_path.read_text())


def site_log(start_url: str) -> dict:
    with urllib.request.urlopen(start_url + "_site/log", timeout=10) as answer:
        return json.load(answer)


def requests_made(log: dict) -> Counter:
    return Counter({(method, host, target): n for method, host, target, n in log["requests"]})


def crawl_hostile_site(case, hostile_site, tmp_path, *extra: str, patience: float = 45) -> dict:
    """Crawl the site on the case's loop and style (plus `extra` crawler options): what holds.

    A crawl still running after `patience` seconds is killed (so a hang is a failed case).
    """
    _, start_url, truth = hostile_site
    before = site_log(start_url)
    out = tmp_path / "crawl.json"
    command = module_command("workloads.crawler", *loop_args(case), start_url,
                             "--concurrency", "8", "--timeout", str(TIMEOUT),
                             "--json", str(out), *extra)  # fmt: skip
    crawler = spawn(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    returncode, peak = wait_watching_memory(crawler, timeout=patience)
    errors = crawler.stderr.read()
    crawler.stderr.close()
    if out.exists():
        peak = max(peak, int(json.loads(out.read_text())["peak_rss_mib"] * 2**20))
    memory = peak < MEMORY_BOUND or f"peak RSS {peak >> 20} MiB"
    if returncode != 0 or not out.exists():
        return {
            "crawl ended": f"exit status {returncode}: {errors[-1500:]}",
            "memory bounded": memory,
        }
    result = json.loads(out.read_text())
    after = site_log(start_url)
    asked = requests_made(after) - requests_made(before)
    origin_host = start_url.split("://", 1)[1].rstrip("/")
    found = {page["url"]: {"status": page["status"], "error": page["error"]}
             for page in result["pages"]}  # fmt: skip
    wrong = {url: (found.get(url), truth["pages"].get(url))
             for url in found.keys() | truth["pages"].keys()
             if found.get(url) != truth["pages"].get(url)}  # fmt: skip
    return {
        "crawl ended": True,
        "every page as the truth says": wrong or True,
        "errors by kind": result["errors"] == truth["errors"] or result["errors"],
        "every fault kind recorded": set(result["errors"]) >= FAULT_ERRORS,
        "links not followed": (result["off_origin_links"], result["ignored_links"])
        == (truth["off_origin_links"], truth["ignored_links"]),
        "no request for another host": {host for _, host, _ in asked} == {origin_host},
        "no request to the other origin": after["elsewhere_hits"] == before["elsewhere_hits"],
        "memory bounded": memory,
    }


FAULT_ERRORS = {error for _, error in FAULTS.values() if error is not None}
SURVIVED = {
    "crawl ended": True,
    "every page as the truth says": True,
    "errors by kind": True,
    "every fault kind recorded": True,
    "links not followed": True,
    "no request for another host": True,
    "no request to the other origin": True,
    "memory bounded": True,
}


@case_prop("io", timeout=60)
def test_a_hostile_site_is_crawled_in_time_with_every_fault_recorded(case, hostile_site, tmp_path):
    if case.style != "callbacks":
        needs_also(case, "queue", "timeouts")
    assert crawl_hostile_site(case, hostile_site, tmp_path) == SURVIVED
