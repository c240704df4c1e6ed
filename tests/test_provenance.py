"""Every table of the bench's pages says where its figures came from: the session (or the date
it was counted), the commit, and the machine, under the table or its section's heading."""

import re
import shutil

import pytest

from bench.pages import report
from bench.store import RESULTS

HEADING = re.compile(r"^(#{1,4}) ")
PROVENANCE = re.compile(r"\*(Ran|Counted) in:\*")
COMMIT = re.compile(r"commits? `[0-9a-f?]{7,}")
MACHINE = re.compile(r" on \S+ \(|machine not recorded")
WHEN = re.compile(r"session \S+|\d{4}-\d{2}-\d{2}")
# Sections whose tables are no session's figures, each with why.
EXEMPT = {
    "Environment": "the sessions' own table: each column is one session's provenance",
    "Code size": "lines counted in the tree the page is rendered from, not measured",
}


def blocks(text: str) -> list[tuple[list[str], list[str]]]:
    """(the headings above it, outermost first; its lines) for every block between headings."""
    found, path, lines = [], [], []
    for line in text.splitlines():
        heading = HEADING.match(line)
        if heading:
            found.append((list(path), lines))
            depth = len(heading.group(1))
            path = [*path[: depth - 1], line[depth + 1 :]]
            path += [""] * (depth - len(path))
            lines = []
        else:
            lines.append(line)
    found.append((list(path), lines))
    return found


def provenance(lines: list[str]) -> bool:
    return any(
        PROVENANCE.search(line) and COMMIT.search(line) and MACHINE.search(line)
        and WHEN.search(line)
        for line in lines
    )  # fmt: skip


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, str]:
    reports = tmp_path_factory.mktemp("reports")
    shutil.copy(RESULTS.parent / "conformance.md", reports / "conformance.md")
    written = report.render_all(RESULTS, reports)
    return {path.name: path.read_text() for path in written if path.suffix == ".md"}


def test_every_table_names_its_session_commit_and_machine(pages):
    assert "bench.md" in pages
    missing = []
    for name, text in pages.items():
        found = blocks(text)
        said = {tuple(path) for path, lines in found if provenance(lines)}
        for path, lines in found:
            if not any(line.startswith("|---") for line in lines):
                continue
            if any(title in EXEMPT for title in path):
                continue
            # its own block, or the section above it (a section's tables share its line)
            if not any(tuple(path[:depth]) in said for depth in range(len(path), 0, -1)):
                missing.append(f"{name}: {' / '.join(t for t in path if t)}")
    assert not missing, "\n".join(missing)


MACHINE_OF = re.compile(
    r"(?:session \S+|\d{4}-\d{2}-\d{2}(?: to \d{4}-\d{2}-\d{2})?) on \S+ "
    r"\((.*?)\), (?:CPython|PyPy)"
)


def test_no_page_sets_two_machines_side_by_side(pages):
    """Every page's figures come from one machine: each run's main page, and a page of its own
    (bench-full-machine-N.md) for each other machine a run's stored figures were measured on;
    a side study measured on another machine is left off (said so), not set beside them."""
    assert "bench.md" in pages
    for name, text in pages.items():
        machines = {
            machine
            for line in text.splitlines()
            if PROVENANCE.search(line)
            for machine in MACHINE_OF.findall(line)
        }
        assert len(machines) <= 1, (name, sorted(machines))
        assert "*Machines:*" not in text, name


def test_the_pages_of_a_run_hold_every_stored_row_once():
    """Split by machine, a run loses no row: the rows its pages' tables come from are the rows
    stored, each on one page only."""
    from bench import registry
    from bench.store import load_mode, per_machine

    for mode in ("quick", "full"):
        stores = load_mode(RESULTS, mode, registry.names())
        parts = per_machine(stores)
        counted = [
            (name, key, row)
            for _, part in parts
            for name, kept in part.items()
            if kept
            for key, point in kept.data["points"].items()
            for row in point["rows"]
        ]
        stored = [
            (name, key, row)
            for name, kept in stores.items()
            if kept
            for key, point in kept.data["points"].items()
            for row in point["rows"]
        ]
        assert sorted(counted) == sorted(stored), mode
        for machine, part in parts:
            for kept in part.values():
                assert kept is None or kept.machines() in ([], [machine])
