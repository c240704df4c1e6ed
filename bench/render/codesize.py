"""Lines of code of every loop and every workload style file: what each design costs to read.

Counted from the source tree when the report is rendered (sizes are not measurements). Two
figures per file: all lines, and code lines, which leave out blank lines, comments and
docstrings, so a well-documented loop is not charged for its explanations. A loop's
``essence.py`` (its idea alone, the file to read first) is not counted in the loop's size. A
loop that can also serve as asyncio's event loop (its variant's ``asyncio_loop``) has the code
lines of the modules only that factory loads in a column of their own: the loop alone is the
code lines less those.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import subprocess
import sys
import tokenize
from pathlib import Path

from tabulate import tabulate

import loops
from bench.plan import READING_ONLY
from machine.environment import ROOT

NOT_CODE = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}


def docstring_lines(source: str) -> set[int]:
    """Line numbers taken by module, class and function docstrings."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                lines.update(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    return lines


def count(path: Path) -> tuple[int, int]:
    """(all lines, code lines) of one Python file."""
    stat = path.stat()
    return _count(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _count(path: Path, mtime_ns: int, size: int) -> tuple[int, int]:
    """count, kept per version of a file (the report counts a loop's files for several tables):
    a file written since has another mtime or size, so it is counted again."""
    source = path.read_text()
    skip = docstring_lines(source)
    code: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in NOT_CODE:
            code.update(
                line for line in range(token.start[0], token.end[0] + 1) if line not in skip
            )
    return len(source.splitlines()), len(code)


def count_tree(paths: list[Path]) -> tuple[int, int, int]:
    """(files, all lines, code lines) over several files."""
    totals = [count(p) for p in paths]
    return len(paths), sum(t[0] for t in totals), sum(t[1] for t in totals)


def python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def loop_files(folder: Path) -> list[Path]:
    """A loop's own code: its folder's Python files but ``essence.py``.

    essence.py is the idea alone, written to be read first: not part of the loop's size.
    """
    return [p for p in python_files(folder) if p.name not in READING_ONLY]


def loop_rows(root: Path = ROOT) -> list[list]:
    rows = []
    for variant in loops.discover().values():
        folder = root / "loops" / variant.name
        files, lines, code = count_tree(loop_files(folder))
        kind = "reference adapter" if variant.reference else "home-made loop"
        if not variant.available:  # its folder is read, not run: the size still counts
            kind = "unavailable here (see the top of the page)"
        api_code = loop_and_asyncio_api(folder, root)[1]
        rows.append(
            [
                f"`loops/{variant.name}/`",
                kind,
                files,
                lines,
                code,
                f"{api_code:,}" if api_code else "–",
            ]
        )
    shared = sorted(p for p in (root / "loops").glob("*.py") if p.name not in READING_ONLY)
    files, lines, code = count_tree(shared)
    rows.append(["`loops/*.py`", "contract, discovery, shared adapters", files, lines, code, "–"])
    return rows


# Run apart, so that what the factory loads is not already loaded by whoever renders.
_LOADED_BY_FACTORY = """
import json, sys
import loops

def loaded():
    return {m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)}

found = []
for variant in loops.discover().values():
    if variant.available and variant.asyncio_loop is not None:
        before = loaded()
        variant.asyncio_loop().close()
        found += sorted(loaded() - before)
print(json.dumps(found))
"""


def loop_and_asyncio_api(folder: Path, root: Path = ROOT) -> tuple[int, int]:
    """Code lines of a loop folder: the loop alone, and the modules only its asyncio_loop
    factory loads (0 for a loop that is not asyncio's event loop)."""
    files = loop_files(folder)
    for_asyncio = [p for p in files if p.resolve() in asyncio_api_files(root)]
    api = count_tree(for_asyncio)[2] if for_asyncio else 0
    return count_tree(files)[2] - api, api


@functools.cache
def asyncio_api_files(root: Path = ROOT) -> frozenset[Path]:
    """The files that only a variant's asyncio_loop factory loads, not importing the variant:
    what it takes to be asyncio's event loop beyond the loop itself."""
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_BY_FACTORY],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        raise RuntimeError(f"listing the asyncio_loop factories' modules failed:\n{done.stderr}")
    return frozenset(Path(path).resolve() for path in json.loads(done.stdout))


def workload_rows(root: Path = ROOT) -> list[list]:
    rows = []
    for folder in sorted(p for p in (root / "workloads").glob("*") if p.is_dir()):
        if folder.name.startswith(("_", ".")):
            continue
        for path in python_files(folder):
            relative = path.relative_to(root).as_posix()
            rows.append([f"`{relative}`", role_of(path, folder), *count(path)])
    return rows


def role_of(path: Path, folder: Path) -> str:
    """What a workload file is for, from its place and name."""
    if "native" in path.relative_to(folder).parts:
        return "anchor server"
    if path.parent != folder:
        return "helper"
    if path.stem in loops.STYLES:
        return f"{path.stem} style"
    return {
        "__init__": "package (docstring)",
        "__main__": "CLI",
        "common": "loop-free common logic",
        "load": "peer: load generator process",
        "site": "peer: site server process",
    }.get(path.stem, "helper")


def section(root: Path = ROOT) -> list[str]:
    lines = ["## Code size", "", __doc__.split("\n\n")[1].replace("\n", " ").strip(), ""]
    lines.append(
        tabulate(
            loop_rows(root),
            headers=["loop", "kind", "files", "lines", "code lines", "of which asyncio's API"],
            tablefmt="github",
            intfmt=",",
        )
    )
    lines.append("")
    workloads = workload_rows(root)
    if workloads:
        lines.append(
            tabulate(
                workloads,
                headers=["workload file", "role", "lines", "code lines"],
                tablefmt="github",
                intfmt=",",
            )
        )
        lines.append("")
    return lines


if __name__ == "__main__":
    print("\n".join(section()))
