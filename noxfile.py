"""The lab's commands. `nox -l` lists them; dependencies come from pyproject's groups.

Every session runs on each CPython the lab supports, the nox way: `nox -s conformance-3.13`
or `nox -p 3.13 -s conformance`. Without either, a session runs on the interpreter nox itself
runs on, so `python3 -m nox -s conformance` means what it always did.
"""

import re
import sys
from pathlib import Path

import nox

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the lab's own modules
from bench import debian_root, interpreters  # the lab's interpreters, declared once

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


# python=RUNNING: named, it passes the running-interpreter selection above (no venv is made).
@nox.session(python=RUNNING, venv_backend="none")
def pythons(session: nox.Session) -> None:
    """Make Debian's root with CPython 3.13, 3.14 and 3.15, once (bench/debian_root.py)."""
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
    for _name in ("conformance", "tests", "bench", "report", "timeline"):
        nox.session(name=f"{_name}-{_version}", venv_backend="none")(
            _in_debian_root(f"{_name}-{_version}")
        )
