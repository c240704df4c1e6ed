"""The lab's commands. `nox -l` lists them; dependencies come from pyproject's groups.

Every session runs on each CPython the lab supports, the nox way: `nox -s conformance-3.13`
or `nox -p 3.13 -s conformance`. Without either, a session runs on the interpreter nox itself
runs on, so `python3 -m nox -s conformance` means what it always did.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import nox

nox.options.sessions = ["conformance"]
nox.options.reuse_venv = "yes"

RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"  # the interpreter nox runs on
PYTHONS = sorted({"3.11", "3.12", "3.13", RUNNING}, key=lambda v: tuple(map(int, v.split("."))))
# No interpreter named on the command line (no `-p`, no `session-3.x`): the running one.
if not any(re.search(r"-3\.\d+$", arg) for arg in sys.argv[1:]):
    nox.options.pythons = [RUNNING]


def _runs(command: str) -> bool:
    try:
        return subprocess.run([command, "-c", ""], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _version_of(interpreter: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", interpreter.parent.parent.name))


def _put_pyenv_interpreters_on_path() -> None:
    """Let nox find `python3.X` installed by pyenv but not active (pyenv's shim then fails)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in PYTHONS:
        if _runs(f"python{version}"):
            continue
        found = sorted(versions.glob(f"{version}.*/bin/python{version}"), key=_version_of)
        if found:
            os.environ["PATH"] = f"{found[-1].parent}{os.pathsep}{os.environ['PATH']}"


_put_pyenv_interpreters_on_path()

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, *groups))


@nox.session(python=PYTHONS)
def conformance(session: nox.Session) -> None:
    """Run the conformance suite on every variant and write reports/conformance.md."""
    _install(session, "test")
    args = list(session.posargs)
    # A narrowed run (--loop NAME) must not overwrite the full matrix with a partial one, nor
    # a run that names its own --matrix.
    if not any(a.split("=")[0] in ("--loop", "--matrix") for a in args):
        args += ["--matrix", "reports/conformance.md"]
    session.run("python", "-m", "pytest", "conformance", *args)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """Run the lab's own tests: discovery, workloads end to end, crawler parsing, reports."""
    # The bench's own tests render tables and charts; the http workload's run uvicorn.
    _install(session, "test", "bench")
    session.run("python", "-m", "pytest", "tests", *session.posargs)


@nox.session(venv_backend="none")
def new(session: nox.Session) -> None:
    """Scaffold a variant folder from the contract: nox -s new -- NAME --style STYLE."""
    session.run("python", "-m", "loops._template", *session.posargs)


@nox.session(python=PYTHONS)
def bench(session: nox.Session) -> None:
    """Measure the quick matrix (-- --full, --loop NAME, --workload NAME) and render reports/."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "run", *session.posargs)
    # The cost anatomy (syscalls and user/system CPU per echo request); about 4 s per row.
    session.run("python", "-m", "bench", "anatomy", success_codes=[0, 1])
    session.run("python", "-m", "bench", "report")


@nox.session(python=PYTHONS)
def report(session: nox.Session) -> None:
    """Render reports/bench.md and its charts from stored results only (runs no workload)."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "report", *session.posargs)


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
