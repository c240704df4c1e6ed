"""The recipes that start in a folder's README, followed as written: a report section that
reaches both the markdown report and the HTML site. (Adding a variant is followed by
tests/test_scaffold.py, adding a study by tests/test_bench_registration.py.)"""

import sys
from pathlib import Path

import htmlreport.build  # noqa: F401  (the module: the package's face names its function)
from bench.pages import report
from bench.store import RESULTS, load_mode

ROOT = Path(__file__).resolve().parent.parent
TITLE = "A new section"
site_pages = sys.modules["htmlreport.build"]


def _lines(page: report.Page) -> list[str]:
    """A section's lines, from the page's stored data as a real section reads them."""
    stored = sum(1 for store in page.stores.values() if store is not None)
    return [f"## {TITLE}", "", f"{stored} workloads stored in the {page.mode} run.", ""]


def test_the_report_section_recipe_reaches_the_markdown_report_and_the_site(tmp_path, monkeypatch):
    # Step 1: a Section in render/report.py's SECTIONS.
    monkeypatch.setattr(report, "SECTIONS", (*report.SECTIONS, report.Section((TITLE,), _lines)))
    stores = load_mode(RESULTS, "quick", [w.name for w in report.registry.STUDIES])
    (tmp_path / "results").mkdir()
    out = tmp_path / "bench.md"
    report.render("quick", stores, out, results=RESULTS)
    text = out.read_text()
    assert f"[{TITLE}](#a-new-section)" in text  # the page's index of sections names it
    held = sum(1 for store in stores.values() if store is not None)
    assert f"## {TITLE}\n\n{held} workloads stored in the quick run." in text
    # Step 2: the same figures on the site, a Page in htmlreport/build.py's PAGES.
    page = site_pages.Page("new.html", TITLE, lambda reports: f"<p>{len(stores)} workloads</p>")
    monkeypatch.setattr(site_pages, "PAGES", (*site_pages.PAGES, page))
    site = tmp_path / "site"
    written = site_pages.build(ROOT / "reports", site)
    assert site / "new.html" in written
    assert f"<p>{len(stores)} workloads</p>" in (site / "new.html").read_text()
    assert f'<a href="new.html">{TITLE}</a>' in (site / "index.html").read_text()
