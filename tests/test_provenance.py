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


def test_the_quick_page_sets_no_two_machines_side_by_side(pages):
    """bench.md's figures all come from one machine: a study, side study or interpreter
    measured on another is left off (said so), not set beside them. (bench-full.md holds the
    sessions of two builds of the VM until the full run is measured again on one; its
    Machines line says which figures ran where.)"""
    text = pages["bench.md"]
    machines = {
        machine
        for line in text.splitlines()
        if PROVENANCE.search(line)
        for machine in MACHINE_OF.findall(line)
    }
    assert len(machines) == 1, sorted(machines)
    assert "*Machines:*" not in text
