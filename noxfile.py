"""The lab's commands. `nox -l` lists them; dependencies come from pyproject's groups.

Every session runs on each CPython the lab supports, the nox way: `nox -s conformance-3.13`
or `nox -p 3.13 -s conformance`. Without either, a session runs on the interpreter nox itself
runs on, so `python3 -m nox -s conformance` means what it always did. A session that needs no
venv of its own (`new`) is declared with `@no_venv` and runs on that interpreter too.
"""

import re
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the lab's own modules
from bench import interpreters  # the lab's interpreters, declared once

nox.options.sessions = ["conformance"]
nox.options.reuse_venv = "yes"

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter nox runs on
PYTHONS = sorted({*interpreters.PYTHONS, RUNNING}, key=interpreters.version_key)
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
    session.install(*nox.project.dependency_groups(PYPROJECT, *groups))


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


@no_venv
def new(session: nox.Session) -> None:
    """Scaffold a variant folder from the contract: nox -s new -- NAME --style STYLE."""
    # The scaffolder needs only the standard library: nox's own interpreter runs it (a bare
    # `python` may not be on PATH where only `python3` is).
    session.run(sys.executable, "-m", "loops._template", *session.posargs)


@nox.session(python=PYTHONS)
def bench(session: nox.Session) -> None:
    """Measure the quick run (-- --full, --loop NAME, --workload NAME) and render reports/."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "run", *session.posargs)
    # The cost anatomy (syscalls and user/system CPU per echo request); about 4 s per row. A run
    # narrowed to some loops narrows it alike; one narrowed to workloads other than echo skips it.
    workloads = _values(session.posargs, "--workload")
    if not workloads or "echo" in workloads:
        only = [arg for name in _values(session.posargs, "--loop") for arg in ("--loop", name)]
        session.run("python", "-m", "bench", "anatomy", *only, success_codes=[0, 1])
    session.run("python", "-m", "bench", "report")


def _values(args: list[str], option: str) -> list[str]:
    """The values a repeatable option takes among a session's arguments (`--loop X`, `--loop=X`)."""
    found = []
    for i, arg in enumerate(args):
        if arg.startswith(f"{option}="):
            found.append(arg.split("=", 1)[1])
        elif arg == option and i + 1 < len(args):
            found.append(args[i + 1])
    return found


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
