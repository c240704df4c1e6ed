"""The tree's prose stays where a reader finds it: short module docstrings, no tracker numbers.

A module docstring says what the module is and why in a few lines and points to its folder's
README for the rest; and no file cites the lab's own tracker, which a reader of the repository
does not have (an upstream project's issue, "CPython issue N", stays: anyone can look it up).
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_DOCSTRING_LINES = 20

# Modules whose docstring is long on purpose, with the reason.
LONG_ON_PURPOSE = {
    "loops/why_a_loop.py": "step 0 of the reading path: the docstring is the lesson itself",
}

# "issue" followed by a number, unless an upstream project names it ("CPython issue N").
UPSTREAM = r"CPython|Python|uvloop|libuv|trio|curio|asyncio|liburing|Linux|uvicorn|nox|pytest"
TRACKER = re.compile(r"\b(?P<cited>[Ii]ssues? ?#?\d+)")
CITED_UPSTREAM = re.compile(rf"\b({UPSTREAM})(['’]s)? $")


def tree_files(*suffixes: str) -> list[Path]:
    """The tree's files with those suffixes, generated reports and tool directories left out."""
    return [
        path
        for path in sorted(ROOT.rglob("*"))
        if path.suffix in suffixes
        and path.is_file()
        and not any(
            part.startswith(".") or part in ("reports", "__pycache__")
            for part in path.relative_to(ROOT).parts
        )
    ]


def tracker_numbers(text: str) -> list[str]:
    """The lab's tracker numbers a text cites, an upstream project's issues left out."""
    found = []
    for match in TRACKER.finditer(text):
        before = re.sub(r"\s+", " ", text[max(0, match.start() - 20) : match.start()])
        if not CITED_UPSTREAM.search(before):
            found.append(match["cited"])
    return found


def test_tracker_numbers_are_told_from_upstream_issues():
    # The numbers are spliced in so that this file cites no tracker number itself.
    one, two = f"issue {12}", f"Issues #{3}"
    assert tracker_numbers(f"as {one} asks; {two}") == [one, two]
    assert tracker_numbers("the CPython issue 78976 class, uvloop's issue 5, gh-153761") == []


@pytest.mark.parametrize("path", tree_files(".py"), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_a_module_docstring_is_a_few_lines(path):
    where = path.relative_to(ROOT).as_posix()
    docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
    lines = len(docstring.splitlines())
    if where in LONG_ON_PURPOSE:
        return
    assert lines <= MAX_DOCSTRING_LINES, (
        f"{where}: a module docstring of {lines} lines; say what the module is and why in a "
        "few, and move the rest to the folder's README or beside the code it explains"
    )


def test_every_long_docstring_on_purpose_is_still_there():
    for where in LONG_ON_PURPOSE:
        assert (ROOT / where).is_file(), f"{where} is gone: drop it from LONG_ON_PURPOSE"


def test_no_file_cites_the_labs_tracker():
    cited = [
        f"{path.relative_to(ROOT)}: {found}"
        for path in tree_files(".py", ".md", ".toml")
        for found in tracker_numbers(path.read_text())
    ]
    assert cited == [], "say the reason instead of the tracker number:\n" + "\n".join(cited)
