"""Results as data: one JSON file per workload and mode, reused where it still holds.

``reports/results/<mode>/<workload>.json`` holds, per point, per row, every repetition's raw
record (not a summary: medians are computed when rendering), the session that measured it and
the fingerprint of the code it depends on. Each session (one ``bench run``) stores its
environment, and keeps a copy of the asyncio rows it measured as that session's baseline, so
a row's ratio is always to asyncio measured in the same session, even after later sessions
re-measured asyncio.

Reuse: a stored row is skipped by a later run when it was measured on the same machine (host,
CPU, Python, library versions) and its code fingerprint is unchanged. Beyond its point's
parameters (durations, counts: changing them makes new points), the fingerprint covers its
loop's folder, the shared loop files, its workload's folder and the other workload packages it
imports (echo's TLS layers), the bench's process handling, the workload's running module (and
the bench modules it runs as CLIs), and the value of every
setting that module reads from the workload's declaration (http's ``SECONDS``, the crawler's
``SEED``, micro's ``PYPERF_CAP_S``); Python as syntax trees without docstrings, so reworded
prose stales nothing. A point's time cap shapes one result, "did not finish": such a row,
stopped under another cap than the point's, is measured again. A file from another machine is
not mixed with this one's: the run starts it afresh (the old one stays in git history).
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
import json
import os
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.plan import BASELINE, READING_ONLY, Point, Row
from bench.summary import complete
from machine.environment import ROOT, machine_key
from machine.interpreters import REFERENCE

FORMAT = 1
RESULTS = ROOT / "reports" / "results"  # where a run stores and a report reads, by default
ANATOMY = "anatomy.json"  # the cost anatomy at echo's fixed offered load, beside the modes' folders
# The cost anatomy in the closed loop (`bench anatomy --closed-loop`): a file of its own, so the
# two points never mix.
ANATOMY_CLOSED = "anatomy-closed.json"
# Instructions per request of every echo row at the headline point, both regimes, counted under
# callgrind (`bench instructions`).
INSTRUCTIONS = "instructions.json"
# The committed headline ratios measured again in new sessions (`bench reproduce`).
REPRODUCTIONS = "reproductions.json"


def results_dir(results: Path, mode: str, python: str = REFERENCE) -> Path:
    """The folder of one interpreter's stored results in one mode: the reference interpreter's
    in ``<mode>/``, another's beside them in ``<mode>/python-3.13/``, so no table mixes two."""
    return results / mode if python == REFERENCE else results / mode / f"python-{python}"


def results_path(results: Path, mode: str, workload: str, python: str = REFERENCE) -> Path:
    """The file holding one workload's results in one mode (quick or full) on one interpreter
    (by default the reference interpreter's, the report's main tables)."""
    return results_dir(results, mode, python) / f"{workload}.json"


@dataclass
class StoredRow:
    """A row's stored repetitions and where they come from."""

    row: Row
    session: str
    code: str
    reps: list[dict]


# A point's key for how far its ratios move between sessions (the reproductions study writes
# it: bench.studies.reproductions.measure).
BETWEEN_SESSIONS = "between_sessions"

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
    workload's name, `running` its running module (:attr:`bench.workload.Workload.running`)."""
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
# by path above; bench.plan, bench.summary and bench.workload serve both rooms, and an edit
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


class ResultStore:
    """The stored results of one workload in one mode (quick or full)."""

    def __init__(self, path: Path, data: dict, kept: frozenset[str] = frozenset()) -> None:
        self.path = path
        self.data = data
        # The rows each session keeps a copy of (the workload's baselines and controls), so a
        # later session re-measuring them leaves each earlier session its own denominator.
        self.kept = kept

    @classmethod
    def empty(
        cls, path: Path, workload: str, mode: str, kept: frozenset[str] = frozenset()
    ) -> ResultStore:
        data = {"format": FORMAT, "workload": workload, "mode": mode, "sessions": {}, "points": {}}
        return cls(path, data, kept)

    @classmethod
    def load(
        cls, path: Path, workload: str, mode: str, kept: frozenset[str] = frozenset()
    ) -> ResultStore:
        """The stored results at path, or an empty store if there are none."""
        if not path.exists():
            return cls.empty(path, workload, mode, kept)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise StoreError(f"{path} is not readable results JSON: {error}") from error
        if data.get("format") != FORMAT or data.get("workload") != workload:
            raise StoreError(
                f"{path} holds format {data.get('format')!r} results of "
                f"{data.get('workload')!r}; expected format {FORMAT} of {workload!r}"
            )
        data["points"] = split_by_rate(data["points"])
        return cls(path, data, kept)

    # -- sessions --------------------------------------------------------------------------

    @property
    def sessions(self) -> dict[str, dict]:
        return self.data["sessions"]

    def machine_matches(self, env: dict) -> bool:
        """True if every stored session ran on the machine described by env.

        Same host, CPU, cores and Python, and the same version of every library both records
        name (a library the lab stopped listing, or started to, is no reason to start over).
        """
        return all(same_machine(session["environment"], env) for session in self.sessions.values())

    def add_session(self, session: str, env: dict, argv: list[str]) -> None:
        self.sessions[session] = {"environment": env, "argv": argv}

    def end_session(self, session: str, load_average: list[float] | None) -> None:
        """Record the machine's load at the end of a session, then save."""
        if session in self.sessions:
            self.sessions[session]["load_average_end"] = load_average
            self.save()

    # -- rows ------------------------------------------------------------------------------

    def _point(self, point: Point) -> dict:
        return self.data["points"].setdefault(
            point.key, {"params": point.args, "rows": {}, "baselines": {}}
        )

    def stored(self, point: Point, row: Row) -> StoredRow | None:
        entry = self.data["points"].get(point.key, {}).get("rows", {}).get(row.key)
        if entry is None:
            return None
        return StoredRow(row, entry["session"], entry["code"], entry["reps"])

    def needs(self, point: Point, row: Row, code: str, headline: str | None = None) -> bool:
        """True if the row has no complete, current result stored at this point.

        A row that failed (or overran its cap) is complete: it stops at its first failed
        repetition, and is measured again when its code changes (or with --redo). With the
        point's headline figure, a row may be complete before its maximum repetitions (see
        :func:`bench.summary.complete`).
        """
        reps = self.resumable(point, row, code)
        minimum = point.min_repetitions if headline else None
        return reps is None or not complete(reps, point.repetitions, minimum, headline or "")

    def resumable(self, point: Point, row: Row, code: str) -> list[dict] | None:
        """The stored repetitions a run may continue from (None: start this row afresh).

        Repetitions are saved one by one, so an interrupted run continues a row where it
        stopped, provided they were measured on the same code. A row that did not finish under
        a time cap other than the point's now starts afresh: the cap shapes that result.
        """
        stored = self.stored(point, row)
        if stored is None or stored.code != code or stored.session not in self.sessions:
            return None
        if any(rep.get("point_cap_s", point.cap_s) != point.cap_s for rep in stored.reps):
            return None  # it did not finish under another cap: under this one, it may
        return stored.reps

    def put(self, point: Point, row: Row, session: str, code: str, reps: list[dict]) -> None:
        entry = self._point(point)
        entry["rows"][row.key] = {
            "variant": row.variant,
            "style": row.style,
            "anchor": row.anchor,
            "kind": row.kind,
            "session": session,
            "code": code,
            "reps": reps,
        }
        if (row.variant == BASELINE and not row.anchor) or row.key in self.kept:
            entry["baselines"].setdefault(session, {})[row.key] = reps

    def save(self) -> None:
        """Write atomically, so an interrupted run leaves the previous file whole."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        used = {
            entry["session"]
            for point in self.data["points"].values()
            for entry in point["rows"].values()
        }
        for point in self.data["points"].values():
            point["baselines"] = {s: b for s, b in point["baselines"].items() if s in used}
        self.data["sessions"] = {s: v for s, v in self.sessions.items() if s in used}
        temporary = self.path.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(self.data, indent=1, sort_keys=False) + "\n")
        os.replace(temporary, self.path)


# A point stored before its offered rate was a parameter (echo chose it from the slowest row,
# per session) is split by the rate its repetitions record, each part marked with this.
DERIVED_RATE = "rate_derived"


def split_by_rate(points: dict[str, dict]) -> dict[str, dict]:
    """Stored points with a repetition's offered rate made part of its point.

    A point whose parameters name no ``rate`` but whose repetitions record one (echo's fixed
    load before the rate was declared) becomes one point per rate, its parameters given that
    ``rate`` and ``rate_derived``: no median pools two rates, and the report shows each as the
    old point it is. Rows and baselines keep only the repetitions at their part's rate.
    """
    out: dict[str, dict] = {}
    for key, point in points.items():
        rates = {
            rep.get("rate")
            for entry in point["rows"].values()
            for rep in entry["reps"]
            if isinstance(rep.get("rate"), int | float)
        }
        if "rate" in point["params"] or not rates:
            out[key] = point
            continue
        for rate in sorted(rates):
            rows = {}
            for row_key, entry in point["rows"].items():
                reps = [rep for rep in entry["reps"] if rep.get("rate") == rate]
                if reps:
                    rows[row_key] = entry | {"reps": reps}
            baselines = {
                session: kept
                for session, by_row in point.get("baselines", {}).items()
                if (
                    kept := {
                        row_key: [rep for rep in reps if rep.get("rate") == rate]
                        for row_key, reps in by_row.items()
                        if any(rep.get("rate") == rate for rep in reps)
                    }
                )
            }
            params = point["params"] | {"rate": rate, DERIVED_RATE: True}
            out[f"{key},rate={rate:g},{DERIVED_RATE}"] = {
                "params": params,
                "rows": rows,
                "baselines": baselines,
            }
    return out


class StoreError(RuntimeError):
    """Stored results that cannot be used as they are."""


def same_machine(one: dict, other: dict) -> bool:
    if machine_key(one) != machine_key(other):
        return False
    first, second = one.get("libraries") or {}, other.get("libraries") or {}
    return all(first[name] == second[name] for name in first.keys() & second.keys())


# -- what the report and the anatomy read ---------------------------------------------------


def load_mode(
    results: Path, mode: str, workloads: list[str], python: str = REFERENCE
) -> dict[str, ResultStore | None]:
    """Each workload's stored results in one mode on one interpreter (None: nothing stored)."""
    stores: dict[str, ResultStore | None] = {}
    for name in workloads:
        path = results_path(results, mode, name, python)
        stores[name] = ResultStore.load(path, name, mode) if path.exists() else None
    return stores


def stored_points(results: Path, mode: str, workload: str) -> dict[str, dict]:
    """One workload's stored points by key ({} where nothing is stored)."""
    path = results_path(results, mode, workload)
    return ResultStore.load(path, workload, mode).data["points"] if path.exists() else {}


def instructions_path(results: Path) -> Path:
    return results / INSTRUCTIONS


def load_instructions(results: Path) -> dict | None:
    path = instructions_path(results)
    return json.loads(path.read_text()) if path.exists() else None


def anatomy_path(results: Path, closed: bool = False) -> Path:
    """The file of the cost anatomy at echo's fixed offered load, or in the closed loop."""
    return results / (ANATOMY_CLOSED if closed else ANATOMY)


def load_anatomy(results: Path, closed: bool = False) -> dict | None:
    """The stored cost anatomy (see bench.studies.anatomy.measure) at the fixed offered load, or in
    the closed loop; None where it is not stored."""
    path = anatomy_path(results, closed)
    return json.loads(path.read_text()) if path.exists() else None


def save_anatomy(results: Path, data: dict, closed: bool = False) -> None:
    path = anatomy_path(results, closed)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
