"""A recorded page is never older than the code it describes.

``reports/conformance.md`` names the commit its suite ran at, ``reports/timelines.md`` the
commits its records were traced at; once a later commit changes the loops, the suite or the
tracer, the page describes code that is gone and must be recorded again (the commands are in
each page's header: ``nox -s conformance``, ``nox -s timeline``). Documentation is aside: a
README, a module's comments and docstrings, and the page's own renderer, none of which changes
what was recorded.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# page -> (how it names its commits, the code it describes)
PAGES = {
    "reports/conformance.md": (r"\bcommit ([0-9a-f]{7,40})\b", ["loops", "conformance"]),
    "reports/timelines.md": (r"^Commit ([0-9a-f, ]+);", ["loops", "timeline"]),
}
NOT_CODE = [":(exclude)*.md"]  # a README changes no outcome
# Nor does a page's renderer: it changes how the page words what was recorded, not what was
# (its own tests hold its sentences; tests/test_prose.py, that it types no figure).
NOT_CODE += [":(exclude)conformance/matrix.py", ":(exclude)timeline/render.py"]


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def recorded_at(page: str) -> list[str]:
    """The commits page says it was recorded at."""
    pattern, _ = PAGES[page]
    found = re.search(pattern, (ROOT / page).read_text(), re.MULTILINE)
    if found is None:
        raise AssertionError(f"{page} names no commit (pattern {pattern!r})")
    return [commit.strip() for commit in found.group(1).split(",")]


def changed_since(commit: str, paths: list[str]) -> list[str]:
    """Commits after commit that change paths (documentation aside: a README, and a module's
    comments and docstrings, which change no outcome), newest first."""
    found = []
    for line in _git(
        "log", "--no-merges", "--format=%h %s", f"{commit}..HEAD", "--", *paths, *NOT_CODE
    ).splitlines():
        sha = line.split()[0]
        files = _git(
            "diff-tree", "--no-commit-id", "--name-only", "-r", sha, "--", *paths, *NOT_CODE
        ).splitlines()
        if not all(_documentation_only(sha, name) for name in files):
            found.append(line)
    return found


def _documentation_only(sha: str, name: str) -> bool:
    """Whether commit sha changed only the comments and docstrings of module `name` (its syntax
    tree without docstrings, the one the bench's row fingerprints read, is the same)."""
    from bench.store import _strip_docstrings

    if not name.endswith(".py"):
        return False
    try:
        before, after = (_git("show", f"{rev}:{name}") for rev in (f"{sha}^", sha))
        return _strip_docstrings(ast.parse(before)) == _strip_docstrings(ast.parse(after))
    except (subprocess.CalledProcessError, SyntaxError):  # added, removed, or not Python
        return False


@pytest.fixture(scope="module", autouse=True)
def _history():
    try:
        _git("rev-parse", "HEAD")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("no git history here (an unpacked source tree)")


def test_recorded_at_reads_each_pages_commit():
    for page in PAGES:
        for commit in recorded_at(page):
            assert _git("cat-file", "-t", commit) == "commit", (page, commit)


@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_is_no_older_than_its_code(page):
    _, paths = PAGES[page]
    stale = {commit: changed_since(commit, paths)[:5] for commit in recorded_at(page)}
    assert stale == {commit: [] for commit in stale}, f"{page}: record it again"
