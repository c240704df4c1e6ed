"""Twins across variants: deliberate copies, held together so that they cannot drift apart.

Each variant is read alone, so a concept two loops share is written in each, with the same
names, on purpose. Such a copy carries a ``# twin of PATH[: NAME]`` marker on both sides
(``MARKER``); this test finds every marker and compares each marked pair: identical twins must
stay identical, and twins that differ must differ only as ``tests/twins/<pair>.diff`` declares,
so an edit made to one side only fails. A meant difference is written anew with
``python3 -m tests.test_twins --write``, committed beside the change.
"""

from __future__ import annotations

import ast
import difflib
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# One <pair>.diff per pair of twins that differ: a line ``why: ...`` and the unified diff between
# them. The test compares the lines that diff adds and removes with today's, so an edit made to
# one side only fails (it adds a changed line, or changes one), while the same edit made to both
# sides passes, wherever it lands outside the declared difference. ``--write`` writes the diffs
# anew, keeping each ``why:`` line; a new pair gets PLACEHOLDER, which fails until someone says
# why; committed beside the change, the review shows how the twins' difference moved.
DECLARED = ROOT / "tests" / "twins"
# A marker, on both sides of a pair, naming the other side; marker lines are left out of the
# comparison:
#     # twin of loops/traps/kernel.py                  the whole file
#     # twin of loops/traps/api.py: timeout_after      one definition: a function, a class, a
#                                                      method (Queue.join) or an assignment
#                                                      (__all__), with the comment block right
#                                                      above it; the marker above them both
MARKER = re.compile(r"^\s*# twin of (?P<path>loops/\S+\.py)(?:: (?P<name>[\w.]+))?\s*$")
PLACEHOLDER = "why: (say why these twins differ)"


@dataclass(frozen=True)
class Pair:
    """Two twins: whole files (name None) or one definition of that name in each."""

    # The diff runs from the path that sorts last to the one that sorts first (traps before
    # completions, roundrobin before futures).
    first: str  # the path the diff runs from
    second: str  # the path it runs to
    name: str | None

    @property
    def slug(self) -> str:
        def flat(path: str) -> str:
            return path.removeprefix("loops/").removesuffix(".py").replace("/", ".")

        tail = f"@{self.name}" if self.name else ""
        return f"{flat(self.first)}--{flat(self.second)}{tail}"

    def __str__(self) -> str:
        what = f"{self.name} in " if self.name else ""
        return f"{what}{self.first} ~ {self.second}"


def markers(root: Path) -> dict[tuple[str, str, str | None], int]:
    """(file, its twin, name) -> the marker's line number, for every marker under loops/."""
    found = {}
    for path in sorted((root / "loops").rglob("*.py")):
        here = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), 1):
            match = MARKER.match(line)
            if match:
                found[here, match["path"], match["name"]] = number
    return found


def pairs(root: Path) -> tuple[list[Pair], list[str]]:
    """Every pair of twins, and what is wrong with the markers (one-sided, dangling, astray)."""
    found = markers(root)
    problems = []
    result = set()
    for (here, there, name), number in found.items():
        if not (root / there).is_file():
            problems.append(f"{here}:{number} names {there}, which does not exist")
            continue
        if (there, here, name) not in found:
            problems.append(
                f"{here}:{number} says it is a twin of {there}"
                + (f" ({name})" if name else "")
                + f", but {there} has no marker '# twin of {here}"
                + (f": {name}'" if name else "'")
            )
            continue
        if name is not None:
            lines = (root / here).read_text().splitlines()
            _, start, _ = _definition(root / here, name) or (None, 0, 0)
            if start == 0:
                problems.append(f"{here}:{number}: {here} defines no {name}")
                continue
            below = number  # the index of the line after the marker
            while below < len(lines) and MARKER.match(lines[below]):
                below += 1  # the markers of its other twins
            if below + 1 != start:
                problems.append(f"{here}:{number}: the marker is not right above {name}")
        first, second = sorted((here, there), reverse=True)
        result.add(Pair(first, second, name))
    return sorted(result, key=lambda pair: pair.slug), problems


def _definition(path: Path, name: str) -> tuple[str, int, int] | None:
    """The source of definition `name` in path (decorators included), its first and last line."""
    tree = ast.parse(path.read_text())
    body = tree.body
    node = None
    for part in name.split("."):
        node = next((n for n in body if part in _names(n)), None)
        if node is None:
            return None
        body = getattr(node, "body", [])
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    lines = path.read_text().splitlines()
    while first > 1 and lines[first - 2].lstrip().startswith("#"):
        if MARKER.match(lines[first - 2]):
            break
        first -= 1  # the comment block right above it is part of it
    return "\n".join(lines[first - 1 : node.end_lineno]), first, node.end_lineno


def _names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {target.id for target in node.targets if isinstance(target, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    return set()


def side(root: Path, path: str, name: str | None) -> list[str]:
    """One twin's lines, its markers left out."""
    text = (root / path).read_text() if name is None else _definition(root / path, name)[0]
    return [line for line in text.splitlines() if not MARKER.match(line)]


def diff(root: Path, pair: Pair) -> list[str]:
    """The unified diff from the pair's first twin to its second (empty: identical)."""
    return list(
        difflib.unified_diff(
            side(root, pair.first, pair.name),
            side(root, pair.second, pair.name),
            fromfile=pair.first,
            tofile=pair.second,
            lineterm="",
        )
    )


def changed(lines: list[str]) -> list[str]:
    """The lines a unified diff removes and adds, in order: what the twins' difference is.
    Context and line numbers are left out, so an edit made to both sides changes nothing."""
    body = lines[2:] if lines[:1] and lines[0].startswith("--- ") else lines
    return [line for line in body if line[:1] in ("-", "+")]


def check(root: Path, pair: Pair) -> str | None:
    """What is wrong with one pair (None: it holds)."""
    today = diff(root, pair)
    declared_path = root / "tests" / "twins" / f"{pair.slug}.diff"
    if not today:
        if declared_path.exists():
            return f"{pair} are identical now: delete {declared_path.relative_to(root)}"
        return None
    if not declared_path.exists():
        return (
            f"{pair} differ, and no tests/twins/{pair.slug}.diff says how and why:\n"
            + "\n".join(today)
        )
    why, *declared = declared_path.read_text().splitlines()
    if not why.startswith("why: ") or why == PLACEHOLDER or not why[5:].strip():
        return f"{declared_path.relative_to(root)}: its first line must say why (why: ...)"
    if changed(declared) != changed(today):
        moved = difflib.unified_diff(
            changed(declared), changed(today), "declared", "today", lineterm="", n=1
        )
        return (
            f"{pair} drifted apart: one side changed without the other, or their difference "
            f"moved without tests/twins/{pair.slug}.diff saying so. Edit the other side too, "
            "or, if the difference is meant, run `python3 -m tests.test_twins --write` and "
            "commit the new diff. The difference, declared against today's:\n" + "\n".join(moved)
        )
    return None


def write(root: Path) -> list[Path]:
    """Write every pair's declared diff anew (keeping its why), delete the stale ones."""
    found, problems = pairs(root)
    if problems:
        raise SystemExit("\n".join(problems))
    folder = root / "tests" / "twins"
    folder.mkdir(exist_ok=True)
    written = []
    keep = set()
    for pair in found:
        today = diff(root, pair)
        path = folder / f"{pair.slug}.diff"
        if not today:
            continue
        keep.add(path)
        why = PLACEHOLDER
        if path.exists():
            why = path.read_text().splitlines()[0]
        path.write_text("\n".join([why, *today]) + "\n")
        written.append(path)
    for stale in set(folder.glob("*.diff")) - keep:
        stale.unlink()
    return written


# ---------------------------------------------------------------------- the tree's twins

PAIRS, PROBLEMS = pairs(ROOT)


def test_every_marker_has_its_twin_marker_and_stands_above_what_it_names():
    assert not PROBLEMS, "\n".join(PROBLEMS)


def test_the_twins_the_lab_declares_are_found():
    found = {str(pair) for pair in PAIRS}
    assert "loops/traps/kernel.py ~ loops/completions/kernel.py" in found
    assert "loops/traps/queues.py ~ loops/completions/queues.py" in found
    assert len(PAIRS) >= 10


@pytest.mark.parametrize("pair", PAIRS, ids=lambda pair: pair.slug)
def test_twins_change_together(pair):
    problem = check(ROOT, pair)
    assert problem is None, problem


def test_no_declared_difference_is_left_without_its_pair():
    slugs = {pair.slug for pair in PAIRS}
    stale = [p.name for p in DECLARED.glob("*.diff") if p.stem not in slugs]
    assert not stale, f"declared differences of twins no marker names any more: {stale}"


def test_the_completions_readme_gives_the_size_of_the_kernels_diff():
    """loops/completions/README.md walks `diff -u` of the two kernels and says how long it is:
    the figure must be today's (GNU diff, as the README's command runs it)."""
    if shutil.which("diff") is None:
        pytest.skip("no diff command here")
    readme = (ROOT / "loops" / "completions" / "README.md").read_text()
    stated = re.search(r"\| grep -c '\^\[-\+\]\[\^-\+\]'` counts (\d+)", readme)
    assert stated, "the README no longer states the size of the kernels' diff"
    done = subprocess.run(
        ["diff", "-u", "loops/traps/kernel.py", "loops/completions/kernel.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    count = sum(1 for line in done.stdout.splitlines() if re.match(r"[-+][^-+]", line))
    assert int(stated[1]) == count, f"the README says {stated[1]}, diff -u counts {count}"


def test_the_two_io_sides_offer_the_kernel_the_same_calls():
    """The traps and completions kernels are one scheduler over two I/O sides, each a module
    of its own: loops/traps/poller.py (readiness) and loops/completions/proactor.py
    (completion). The kernels call both the same way, so each side must offer every call the
    kernels make (read from the modules' syntax trees: no ring is set up here)."""
    shared = {"__init__", "wait", "wake", "open_wake_up", "close"}
    sides = {
        "loops/traps/poller.py": "Poller",
        "loops/completions/proactor.py": "Proactor",
    }
    for path, name in sides.items():
        tree = ast.parse((ROOT / path).read_text())
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
        assert shared <= methods.keys(), f"{path}: {name} lacks {sorted(shared - methods.keys())}"
        arguments = {m: [a.arg for a in methods[m].args.args] for m in shared}
        assert arguments == {
            "__init__": ["self", "ready"],
            "wait": ["self", "timeout"],
            "wake": ["self"],
            "open_wake_up": ["self", "on_wake"],
            "close": ["self"],
        }, f"{path}: {name}'s calls take other arguments than the kernels pass"
    for kernel, name in (
        ("loops/traps/kernel.py", "Poller"),
        ("loops/completions/kernel.py", "Proactor"),
    ):
        text = (ROOT / kernel).read_text()
        assert f"self._io = {name}(self._ready)" in text
        for call in (
            "self._io.wait",
            "self._io.wake()",
            "self._io.open_wake_up(",
            "self._io.close()",
        ):
            assert call in text, f"{kernel} no longer calls {call}"


# ---------------------------------------------------------------------- the mechanism itself


def _tree(tmp_path: Path, a: str, b: str) -> Path:
    for name, text in (("one", a), ("two", b)):
        folder = tmp_path / "loops" / name
        folder.mkdir(parents=True)
        (folder / "mod.py").write_text(text)
    (tmp_path / "tests" / "twins").mkdir(parents=True)
    return tmp_path


SHARED = "def shared():\n    return 1\n\n\ndef also():\n    return 2\n"


def test_a_one_sided_edit_fails_and_the_same_edit_on_both_sides_passes(tmp_path):
    root = _tree(
        tmp_path,
        "# twin of loops/two/mod.py\n" + SHARED + "\n\ndef mine():\n    return 'one'\n",
        "# twin of loops/one/mod.py\n" + SHARED + "\n\ndef mine():\n    return 'two'\n",
    )
    (pair,), problems = pairs(root)
    assert not problems and pair.first == "loops/two/mod.py"
    assert check(root, pair) is not None  # they differ, and nothing says why yet
    write(root)
    declared = root / "tests" / "twins" / f"{pair.slug}.diff"
    assert check(root, pair) is not None  # the placeholder says nothing
    declared.write_text(declared.read_text().replace(PLACEHOLDER, "why: each its own name"))
    assert check(root, pair) is None
    one, two = root / "loops/one/mod.py", root / "loops/two/mod.py"
    one.write_text(one.read_text().replace("return 1", "return 10"))
    assert "drifted apart" in check(root, pair)  # one side only
    two.write_text(two.read_text().replace("return 1", "return 10"))
    assert check(root, pair) is None  # both sides: the difference is what it was
    two.write_text(two.read_text().replace("'two'", "'deux'"))
    assert "drifted apart" in check(root, pair)  # the declared difference itself moved
    write(root)
    assert check(root, pair) is None and "why: each its own name" in declared.read_text()


def test_a_marked_definition_is_compared_alone_and_a_one_sided_marker_is_refused(tmp_path):
    root = _tree(
        tmp_path,
        "X = 1\n\n\n# twin of loops/two/mod.py: shared\n" + SHARED,
        "Y = 2\n\n\n# twin of loops/one/mod.py: shared\n" + SHARED.replace("2", "3"),
    )
    (pair,), problems = pairs(root)
    assert not problems and pair.name == "shared" and check(root, pair) is None
    (root / "loops/two/mod.py").write_text("Y = 2\n")
    _, problems = pairs(root)
    assert problems and "has no marker" in problems[0]


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python3 -m tests.test_twins --write")
    for path in write(ROOT):
        print(f"wrote {path.relative_to(ROOT)}")
