"""The lab's commands. `nox -l` lists them; dependencies come from pyproject's groups.

Every session runs on each CPython the lab supports, the nox way: `nox -s conformance-3.13`
or `nox -p 3.13 -s conformance`. Without either, a session runs on the interpreter nox itself
runs on, so `python3 -m nox -s conformance` means what it always did. A session that needs no
venv of its own (`pythons`) is declared with `@no_venv` and runs on that interpreter too.
"""

import re
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the lab's own modules
from machine import debian_root, interpreters  # the lab's interpreters, declared once

nox.options.sessions = ["conformance"]
nox.options.reuse_venv = "yes"

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter nox runs on
# The versions this host lacks and Debian's root has: their sessions run nox inside the root.
ROOTED = interpreters.rooted()
PYTHONS = [
    v
    for v in sorted({*interpreters.PYTHONS, RUNNING}, key=interpreters.version_key)
    if v not in ROOTED
]
# No interpreter named on the command line (no `-p`, no `session-3.x`): the running one.
if not any(re.search(r"-3\.\d+$", arg) for arg in sys.argv[1:]):
    nox.options.pythons = [RUNNING]


def no_venv(func):
    """Declare a session that runs in nox's own process, on the interpreter nox runs on.

    nox's python selection (`nox.options.pythons` above, or `-p`) keeps only the sessions whose
    python is in its list, so a session declared without one is dropped by it, and `nox -s new`
    printed "Python version selection caused no sessions to be selected". Naming the running
    interpreter, which is what such a session runs on anyway, keeps it selected wherever that
    interpreter is (always, unless `-p` names only others).
    tests/test_scaffold.py checks that every session of this file is selectable by its name.
    """
    return nox.session(python=RUNNING, venv_backend="none")(func)


# The pyenv lookup is the bench's too (`python -m bench run --python 3.13`): one copy.
interpreters.put_pyenv_interpreters_on_path(PYTHONS)

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str) -> None:
    """The groups, and the project's own dependencies (greenlet), which no group repeats."""
    session.install(
        *PYPROJECT["project"]["dependencies"], *nox.project.dependency_groups(PYPROJECT, *groups)
    )


@nox.session(python=PYTHONS)
def conformance(session: nox.Session) -> None:
    """Run the conformance suite on every variant and write reports/conformance.md."""
    _install(session, "test")
    args = list(session.posargs)
    # A narrowed run (--loop NAME) must not overwrite the full conformance matrix with a partial
    # one, nor a run that names its own --matrix.
    if not any(a.split("=")[0] in ("--loop", "--matrix") for a in args):
        args += ["--matrix", "reports/conformance.md"]
    session.run("python", "-m", "pytest", "conformance", *args)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the lab's own tests: discovery, workloads end to end, crawler parsing, reports."""
    # The bench's own tests render tables and charts; the http workload's run uvicorn.
    _install(session, "test", "bench")
    session.run("python", "-m", "pytest", "tests", *session.posargs)


@nox.session(python=PYTHONS)
def new(session: nox.Session) -> None:
    """Scaffold a variant folder from the contract: nox -s new -- NAME --style STYLE.

    A run that fails part way puts the tree back as it found it (and says what it undid)."""
    if any(arg in ("-h", "--help", "--into") for arg in session.posargs):
        # Help, or a folder outside loops/: the lab's listings do not change.
        session.run("python", "-m", "loops._template", *session.posargs)
        return
    # The listings' renderer (bench.pages.reading) needs the render group; nox's own
    # interpreter has only nox, so the session has a venv of its own.
    _install(session, "render")
    root = Path(__file__).resolve().parent
    before = _snapshot(root)
    try:
        session.run("python", "-m", "loops._template", *session.posargs)
        # The lab's listings of its variants (the README tables, the reading path's designs
        # table), so that the house's tests hold of the new folder the day it is made.
        session.run("python", "-m", "loops", "--readme")
        session.run("python", "-m", "bench.pages.reading")
    except nox.command.CommandFailed:
        undone = _restore(root, before)
        session.error(f"nox -s new failed; the tree is as it was ({undone or 'nothing changed'})")


def _snapshot(root: Path) -> tuple[set[Path], dict[Path, bytes]]:
    """What `new` may change: the paths under loops/, and every README's bytes."""
    readmes = {
        p: p.read_bytes()
        for p in root.rglob("README.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
    }
    return _paths(root), readmes


def _paths(root: Path) -> set[Path]:
    return {p for p in (root / "loops").rglob("*") if "__pycache__" not in p.parts}


def _restore(root: Path, before: tuple[set[Path], dict[Path, bytes]]) -> str:
    """Undo what happened since `before` was taken; what was undone, in words."""
    import shutil

    paths, readmes = before
    undone = []
    for path in sorted(_paths(root) - paths):
        if path.parent in paths or path.parent == root / "loops":  # the top of what is new
            shutil.rmtree(path) if path.is_dir() else path.unlink()
            undone.append(f"removed {path.relative_to(root)}")
    for path, text in readmes.items():
        if path.read_bytes() != text:
            path.write_bytes(text)
            undone.append(f"restored {path.relative_to(root)}")
    return "; ".join(undone)


@nox.session(python=PYTHONS)
def bench(session: nox.Session) -> None:
    """Measure the quick run (-- --full, --loop NAME, --workload NAME), the cost anatomy at
    both points and the instructions per request for the same loops, and render reports/
    (`python -m bench all`)."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "all", *session.posargs)


@nox.session(python=PYTHONS)
def report(session: nox.Session) -> None:
    """Render reports/bench.md, its charts and the HTML site (reports/site/) from stored data
    only (runs no workload)."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "report", *session.posargs)
    session.run("python", "-m", "htmlreport")


@nox.session(python=PYTHONS)
def timeline(session: nox.Session) -> None:
    """Trace every variant on the same small programs; write reports/timelines.md and charts.

    `-- --report` re-renders from the stored records only; `-- --loop NAME` (and --style,
    --scenario) re-records just those runs before rendering.
    """
    _install(session, "timeline")
    args = list(session.posargs)
    if "--report" not in args:
        session.run("python", "-m", "timeline", "--all", *args)
    session.run("python", "-m", "timeline", "--report")


@nox.session(python=PYTHONS)
def lint(session: nox.Session) -> None:
    """Check style with ruff."""
    _install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


def _real_suite(session: nox.Session, suite: str, loops: list[str]) -> None:
    """Download SUITE's sdist, install it with its test needs, run its tests once per loop."""
    import json
    import os
    import tarfile
    import tempfile

    from tests.real_suites.suites import SUITES

    spec = SUITES[suite]
    root = Path(__file__).resolve().parent
    tmp = Path(session.create_tmp()).resolve()
    sdist = tmp / f"{spec.name}-{spec.version}.tar.gz"
    if not sdist.exists() and spec.source:
        _download(session, spec.source, spec.sha256, sdist)
    elif not sdist.exists():
        session.run(
            "python", "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
            f"{spec.name}=={spec.version}", "-d", str(tmp),
        )  # fmt: skip
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp, filter="data")
    source = tmp / f"{spec.name}-{spec.version}"
    # A venv per suite inside the session's: the suites pin different versions of one another
    # (uvicorn's tests install anyio; anyio's suite is anyio's sdist).
    venv = tmp / f"venv-{suite}"
    if not venv.exists():
        session.run("python", "-m", "venv", str(venv))
    python_in = str(venv / "bin" / "python")
    session.run(python_in, "-m", "pip", "install", "-q",
                *(arg.format(sdist=sdist) for arg in spec.install), external=True)  # fmt: skip
    # LAB_SUITES_RESULTS: another folder for the counts (CI's run), and no page rendered.
    results = Path(os.environ.get("LAB_SUITES_RESULTS") or root / "reports" / "suites")
    results.mkdir(parents=True, exist_ok=True)
    python = session.run(python_in, "-c", "import platform; print(platform.python_version())",
                         silent=True, external=True).strip()  # fmt: skip
    session.chdir(source)
    failing = []  # the loops whose run failed a test not listed as expected
    for loop in loops:
        record = results / f"{suite}-{python}-{loop}.json"
        env = {
            "LAB_SUITE": suite,
            "LAB_LOOP": loop,
            "LAB_EXPECTED": str(spec.expected),
            "LAB_RESULTS": str(record),
            "PYTHONPATH": f"{root}:{root / 'tests' / 'real_suites'}",
            # The system's, not nox's session folder: a Unix socket's path under the latter
            # is longer than AF_UNIX allows, which failed the suites' Unix-socket tests.
            "TMPDIR": tempfile.gettempdir(),
            # The installed (built) package, not the sdist's source folder beside the tests:
            # as -P, but inherited, so the Pythons a suite starts import the build too
            # (aiohttp's import check starts one per module; from the source folder, its
            # compiled modules were missing).
            "PYTHONSAFEPATH": "1",
            **dict(spec.env),
        }
        session.run(
            python_in, "-m", "pytest", spec.tests, "-p", "lab_loop", "-q",
            "-p", "no:cacheprovider", *spec.args, env=env, success_codes=[0, 1], external=True,
        )  # fmt: skip
        result = json.loads(record.read_text())
        # A run on a lab loop that made no loop ran on something else: say so, loudly.
        if loop != "asyncio" and result["loops_made"] == 0:
            session.error(f"{suite} on {loop}: the suite made no loop through the plugin")
        if result["failed"]:
            failing.append(loop)
    session.chdir(root)
    if not os.environ.get("LAB_SUITES_RESULTS"):
        session.run("python", "-m", "tests.real_suites.report")
    # Every loop is run and recorded first; then a failure not in the suite's TOML fails it.
    if failing:
        session.error(f"{suite}: failures {spec.expected.name} does not list, on {failing}")


def _download(session: nox.Session, url: str, sha256: str, to: Path) -> None:
    """url into `to`, if its SHA-256 is the one pinned (else the session fails, keeping nothing)."""
    import hashlib
    import urllib.request

    session.log(f"downloading {url}")
    with urllib.request.urlopen(url, timeout=120) as reply:
        data = reply.read()
    found = hashlib.sha256(data).hexdigest()
    if found != sha256:
        session.error(f"{url}: SHA-256 {found}, not the pinned {sha256}")
    to.write_bytes(data)


@nox.session(name="real-suites", python=PYTHONS)
def real_suites(session: nox.Session) -> None:
    """Real projects' own test suites, unmodified, on asyncio, uvloop and the callbacks drop-in.

    `-- SUITE [LOOP ...]`: one suite of tests/real_suites/suites.py (uvicorn, anyio, aiohttp,
    websockets), on the loops named (all three by default). Downloads the suite's pinned sdist
    or source tarball (its tests are never committed here), installs it with its test needs,
    and runs its tests once per
    loop with tests/real_suites/lab_loop.py making the loops; expected failures:
    tests/real_suites/<suite>.toml. Counts go to reports/suites/<suite>-<python>-<loop>.json
    and reports/real-suites.md. Fails if the drop-in or uvloop made no loop.
    """
    from tests.real_suites.suites import LOOPS, SUITES

    if not session.posargs or session.posargs[0] not in SUITES:
        session.error(f"name a suite: nox -s real-suites -- SUITE [LOOP ...]; one of {[*SUITES]}")
    _real_suite(session, session.posargs[0], session.posargs[1:] or list(LOOPS))


@nox.session(name="uvicorn-suite", python=PYTHONS)
def uvicorn_suite(session: nox.Session) -> None:
    """uvicorn's own suite: `nox -s real-suites -- uvicorn`, by its older name."""
    from tests.real_suites.suites import LOOPS

    _real_suite(session, "uvicorn", session.posargs or list(LOOPS))


@no_venv
def pythons(session: nox.Session) -> None:
    """Make Debian's root with CPython 3.13, 3.14 and 3.15, once (machine/debian_root.py)."""
    try:
        debian_root.make(session.log)
    except debian_root.CannotMake as error:
        session.error(f"cannot make the Debian root: {error}")


def _in_debian_root(name: str):
    """A session that re-runs `nox -s NAME` inside Debian's root, made first if need be, with
    this checkout mounted at its own path (so results land where they do on the host)."""

    def run(session: nox.Session) -> None:
        try:
            debian_root.make(session.log)
        except debian_root.CannotMake as error:
            session.error(f"{name} needs Debian's root, which cannot be made: {error}")
        debian_root.copy_host_files()
        # The root's venvs in a folder of their own: their interpreter is the root's.
        argv = ["nox", "--envdir", ".nox/debian-root", "-s", name, "--", *session.posargs]
        session.log(f"inside {debian_root.ROOT}: {' '.join(argv)}")
        session.run(*debian_root.command(argv), env={"LAB_CWD": str(Path.cwd())}, external=True)

    run.__doc__ = f"Run `{name}` inside Debian's root (this host has no such Python)."
    return run


# A session on a version only the root has: the same name, run inside the root.
for _version in ROOTED:
    for _name in ("conformance", "tests", "bench", "report", "timeline", "real-suites"):
        nox.session(name=f"{_name}-{_version}", venv_backend="none")(
            _in_debian_root(f"{_name}-{_version}")
        )
