"""The HTML report (htmlreport/) opened in headless Chromium, as a reader opens it: from files.

The site is rendered from the committed data into a temporary folder, then each page is loaded
from ``file://`` with no network. Checked: no page logs a console error, every chart renders,
a table sorts on a header click, the base selector changes the ratios, a timeline zooms.
Chromium and its driver are Debian's (``.ci/run`` installs them); selenium drives them.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from htmlreport import PAGES, build

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
# Root, no display, no network: the flags a headless run in CI needs (and nothing fetched).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
)

BROWSER = pytest.mark.timeout(600)  # the hang guard: a loaded 2-core machine draws slowly


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build(ROOT / "reports", out)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        pytest.skip(
            "Chromium and chromedriver are not installed (apt-get install chromium "
            "chromium-driver, as .ci/run does)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium')}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def _open(browser, site: Path, page: str) -> list[dict]:
    """Load a page, wait until every chart has drawn, and return what it logged."""
    browser.get((site / page).as_uri())
    while browser.execute_script(
        "return document.readyState !== 'complete' || "
        "document.querySelectorAll('div.chart:not([data-rendered])').length > 0"
    ):
        time.sleep(0.2)  # charts draw asynchronously; the module's timeout guards a hang
    return browser.get_log("browser")


@pytest.mark.parametrize("page", ["index.html", *[p.file for p in PAGES]])
@BROWSER
def test_every_page_loads_without_a_console_error_and_draws_every_chart(browser, site, page):
    log = _open(browser, site, page)
    assert [entry for entry in log if entry["level"] == "SEVERE"] == []
    charts = browser.execute_script("return document.querySelectorAll('div.chart').length")
    drawn = browser.execute_script(
        "return Array.from(document.querySelectorAll('div.chart'))"
        ".filter(d => d.querySelector('svg.main-svg g.trace')).length"
    )
    assert drawn == charts
    if page.startswith(("bench", "timelines")) and (site / page).stat().st_size > 5000:
        assert charts > 0


def _column(browser, table: int, column: int) -> list[str]:
    return browser.execute_script(
        "const t = document.querySelectorAll('table.sortable')[arguments[0]];"
        "return Array.from(t.tBodies[0].rows).map(r => r.cells[arguments[1]]"
        ".getAttribute('data-sort'));",
        table,
        column,
    )


@BROWSER
def test_a_table_sorts_on_a_header_click(browser, site):
    _open(browser, site, "bench.html")
    header = browser.find_elements("css selector", "table.sortable")[0].find_elements(
        "css selector", "th"
    )[2]  # the headline figure
    header.click()
    values = [float(v) for v in _column(browser, 0, 2) if v]
    assert len(values) > 2 and values == sorted(values)
    header.click()
    values = [float(v) for v in _column(browser, 0, 2) if v]
    assert values == sorted(values, reverse=True)


@BROWSER
def test_the_base_selector_changes_the_ratios(browser, site):
    from selenium.webdriver.support.ui import Select

    _open(browser, site, "bench.html")
    script = "return Array.from(document.querySelectorAll('td.ratio')).map(c => c.textContent)"
    before = browser.execute_script(script)
    Select(browser.find_element("id", "base")).select_by_value("adapter")
    after = browser.execute_script(script)
    assert before != after
    assert any(text.startswith("×") for text in after)
    assert "asyncio · coroutines" in browser.find_element("css selector", ".base-name").text


@BROWSER
def test_a_timeline_zooms(browser, site):
    from selenium.webdriver.common.action_chains import ActionChains

    _open(browser, site, "timelines.html")
    chart = browser.find_element("css selector", "div.chart")
    browser.execute_script("arguments[0].scrollIntoView()", chart)
    script = "return arguments[0]._fullLayout.xaxis.range.slice()"
    before = browser.execute_script(script, chart)
    area = chart.find_element("css selector", ".nsewdrag")  # plotly's drag-to-zoom layer
    width = area.size["width"]
    (
        ActionChains(browser)
        .move_to_element_with_offset(area, -width // 4, 0)
        .click_and_hold()
        .move_by_offset(width // 5, 0)
        .move_by_offset(width // 10, 0)
        .release()
        .perform()
    )
    after = browser.execute_script(script, chart)
    assert after[1] - after[0] < (before[1] - before[0]) / 2


def test_the_site_opens_with_the_answer_and_lists_the_findings(site):
    index = (site / "index.html").read_text()
    # the chooser's screen: a row per server users install, then the home-made loops
    assert "Choosing a server" in index and "<table><tr><th>server</th>" in index
    assert "<td><code>uvloop-protocol</code></td>" in index and "Home-made loops" in index
    assert (site / "plotly.min.js").stat().st_size > 1_000_000  # vendored, not fetched
    assert "cdn" not in index.lower() and "https://" not in (site / "bench.html").read_text()
    if (ROOT / "reports" / "results" / "conformance").is_dir():
        assert "loses data" in (site / "conformance.html").read_text()
    traces = sorted((site / "traces").glob("*.json"))
    assert traces and all(json.loads(t.read_text())["traceEvents"] for t in traces)
