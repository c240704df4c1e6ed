"""A stored row's code fingerprint: what marks it stale, and what a run measures again.

Beyond its point's parameters (durations, counts: changing them makes new points), a row's
fingerprint covers its loop's folder, the shared loop files, its study's program folder in
``workloads/`` and the other workload packages it imports (echo's TLS layers), the bench's
process handling, the study's running module (and the bench modules it runs as CLIs), and the
value of every setting that module reads from the study's declaration (http's ``SECONDS``, the
crawler's ``SEED``, micro's ``PYPERF_CAP_S``); Python as syntax trees without docstrings, so
reworded prose stales nothing, and without the module paths of the lab's imports, so a module
moved unchanged stales nothing either.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import functools
import hashlib
import importlib
import importlib.util
import inspect
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

from bench.plan import READING_ONLY, Row
from bench.study import Study
from machine.environment import ROOT


def fingerprint(workload: Study, row: Row) -> str:
    """The code fingerprint of one of a study's rows: what marks a stored row stale."""
    own = row_fingerprint(workload.name, workload.running, row)
    if workload.runs_on is None:
        return own
    theirs = row_fingerprint(*workload.runs_on, row)
    return hashlib.sha256(f"{own} {theirs}".encode()).hexdigest()[:16]


# Files no measurement runs: what conformance expects of a loop, and the reading path.
NOT_MEASURED = {"deviations.toml", *READING_ONLY}


# Fingerprints held while the code cannot change (one render reads them for every stored row of
# every table); None while measuring, where a file may be edited between rows.
_HELD: dict[tuple, str] | None = None


@contextlib.contextmanager
def fingerprints_held() -> Iterator[None]:
    """Within the block, each row's fingerprint is computed once: for a render, which reads the
    code's state once and writes pages from it."""
    global _HELD
    outer, _HELD = _HELD, {} if _HELD is None else _HELD
    try:
        yield
    finally:
        _HELD = outer


def row_fingerprint(workload: str, running: str, row: Row, root: Path = ROOT) -> str:
    """A hash of the code and settings one row's measurement depends on: `workload` is the
    workload's name, `running` its running module (:attr:`bench.study.Study.running`)."""
    if _HELD is None:
        return _row_fingerprint(workload, running, row, root)
    key = (workload, running, row.variant, row.anchor, root)
    if key not in _HELD:
        _HELD[key] = _row_fingerprint(workload, running, row, root)
    return _HELD[key]


def _row_fingerprint(workload: str, running: str, row: Row, root: Path) -> str:
    paths: list[Path] = []
    loops_dir = root / "loops"
    paths += [p for p in loops_dir.glob("*.py")]
    if not row.anchor:
        paths += [p for p in (loops_dir / row.variant).rglob("*") if p.is_file()]
    workload_dir = root / "workloads" / workload
    paths += [p for p in workload_dir.rglob("*") if p.is_file()]
    paths += [p for p in (root / "workloads").glob("*.py")]
    for package in _workload_packages_used(workload_dir):  # echo's TLS layers: workloads/tls
        paths += [p for p in package.rglob("*") if p.is_file()]
    paths.append(root / "bench" / "procs.py")
    digest = hashlib.sha256()
    for path in sorted(set(paths)):
        # Code only: a README or any prose beside the code changes nothing a row measured,
        # nor does a loop's deviations.toml (what conformance expects of it).
        if (
            path.suffix in {".pyc", ".md"}
            or path.name in NOT_MEASURED
            or "__pycache__" in path.parts
        ):
            continue
        if path.exists():
            digest.update(str(path.relative_to(root)).encode())
            digest.update(_code_of(path))
    digest.update(running_code(running))
    return digest.hexdigest()[:16]


WORKLOAD_IMPORT = re.compile(r"^\s*(?:from|import) workloads\.(\w+)", re.M)


def _workload_packages_used(workload_dir: Path) -> list[Path]:
    """The other packages of workloads/ that a workload's own files import: code its rows run
    as surely as their own (the echo server's TLS layers live in workloads/tls/)."""
    names = set()
    for path in workload_dir.rglob("*.py"):
        stat = path.stat()
        names.update(_workload_imports(path, stat.st_mtime_ns, stat.st_size))
    root = workload_dir.parent
    return [
        root / name
        for name in sorted(names)
        if (root / name).is_dir() and root / name != workload_dir
    ]


@functools.lru_cache(maxsize=256)
def _workload_imports(path: Path, mtime_ns: int, size: int) -> tuple[str, ...]:
    """The workloads packages one file imports, per version of the file (a report
    fingerprints every stored row, and each would read the workload's files again)."""
    return tuple(WORKLOAD_IMPORT.findall(path.read_text(encoding="utf-8")))


# The package of the workloads' declarations: a value the running side reads from a module in
# it is a setting of the measurement. Its other imports are not followed: bench.procs is hashed
# by path above; bench.plan, bench.summary and bench.study serve both rooms, and an edit
# there stales no row.
DECLARATION = re.compile(r"^bench\.studies\.\w+$")  # a study's folder is its declaration
# A bench module the running module starts as a CLI (micro runs
# "-m bench.studies.micro.pyperf_micro").
RUN_AS_CLI = re.compile(r"^bench\.studies\.\w+\.\w+$")


def running_code(module: str) -> bytes:
    """What a workload's running side contributes to its rows' fingerprint, read without
    importing it (rendering never loads the running code): the code of its module and of the
    bench modules it starts as CLIs, and the value of every setting it imports from a
    workload's declaration. Paths are left out, so a module moved unchanged stales no row."""
    path = _source(module)
    if path is None:  # no source to read (a module made in memory, as a test's fake is)
        return module.encode()
    found = [_code_of(path)]
    stat = path.stat()
    cli_modules, settings = _references(path, stat.st_mtime_ns, stat.st_size)
    found += [_code_of(other) for other in map(_source, cli_modules) if other is not None]
    for declaration, names in settings:
        declared = importlib.import_module(declaration)
        found += [f"{name}={_setting(getattr(declared, name))}".encode() for name in names]
    return b"\n".join(found)


@functools.lru_cache(maxsize=256)
def _references(path: Path, mtime_ns: int, size: int) -> tuple[tuple, tuple]:
    """What a running module refers to, per version of the file: the bench modules it starts
    as CLIs, and the names it imports from workloads' declarations, by module."""
    tree = ast.parse(path.read_bytes())
    module = inspect.getmodulename(path)
    cli_modules = sorted(
        {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and RUN_AS_CLI.match(node.value)
            and node.value.rsplit(".", 1)[-1] != module
        }
    )
    settings = [
        (node.module, tuple(alias.name for alias in node.names))
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and DECLARATION.match(node.module or "")
    ]
    return tuple(cli_modules), tuple(settings)


def _source(module: str) -> Path | None:
    """The source file of a module, found as import would find it (None: no source)."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def _setting(value: object) -> str:
    """A setting's value as text that is the same in every process: a function by its code,
    a set sorted (its order follows string hashing, which differs between processes)."""
    if inspect.isfunction(value):
        return _strip_docstrings(ast.parse(textwrap.dedent(inspect.getsource(value)))).decode()
    if isinstance(value, set | frozenset):
        return "{" + ", ".join(sorted(_setting(v) for v in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_setting(k)}: {_setting(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "(" + ", ".join(_setting(v) for v in value) + ")"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = (f"{f.name}={_setting(getattr(value, f.name))}" for f in dataclasses.fields(value))
        return f"{type(value).__name__}({', '.join(fields)})"
    return repr(value)


def _code_of(path: Path) -> bytes:
    """What a file contributes to a fingerprint: a Python module's syntax tree without its
    docstrings (comments are not in the tree), so rewording prose stales no row; other
    files (the http workload's Lua script) byte for byte."""
    stat = path.stat()
    return _read_code(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _read_code(path: Path, mtime_ns: int, size: int) -> bytes:
    """_code_of, kept per version of a file (a report fingerprints every stored row, and rows
    share their files): a file written since has another mtime or size, so it is read again."""
    if path.suffix != ".py":
        return path.read_bytes()
    try:
        tree = ast.parse(path.read_bytes())
    except SyntaxError:
        return path.read_bytes()
    return _strip_docstrings(tree)


# The lab's own packages: where an import of them says the code lives, not what it does.
LAB_PACKAGES = ("loops", "machine", "workloads", "conformance", "bench", "timeline", "htmlreport")


def _strip_docstrings(tree: ast.AST) -> bytes:
    """A syntax tree dumped without its docstrings, and without the module paths of its
    imports from the lab's own packages (the names imported stay), so a module moved to
    another room unchanged stales no row."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in LAB_PACKAGES:
            node.module = None
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            del body[0]  # a function of a docstring alone dumps as an empty body: fine here
    return ast.dump(tree).encode()
