"""The lab's commands. `nox -l` lists them; dependencies come from pyproject's groups."""

import nox

nox.options.sessions = ["conformance"]
nox.options.reuse_venv = "yes"

PYPROJECT = nox.project.load_toml("pyproject.toml")


def _install(session: nox.Session, *groups: str) -> None:
    session.install(*nox.project.dependency_groups(PYPROJECT, *groups))


@nox.session
def conformance(session: nox.Session) -> None:
    """Run the conformance suite on every variant and write reports/conformance.md."""
    _install(session, "test")
    args = list(session.posargs)
    # A narrowed run (--loop NAME) must not overwrite the full matrix with a partial one.
    if "--loop" not in args and not any(a.startswith("--loop=") for a in args):
        args += ["--matrix", "reports/conformance.md"]
    session.run("python", "-m", "pytest", "conformance", *args)


@nox.session
def tests(session: nox.Session) -> None:
    """Run the lab's own tests: discovery, workloads end to end, crawler parsing, reports."""
    # The bench's own tests render tables and charts; the http workload's run uvicorn.
    _install(session, "test", "bench", "http")
    session.run("python", "-m", "pytest", "tests", *session.posargs)


@nox.session(venv_backend="none")
def new(session: nox.Session) -> None:
    """Scaffold a variant folder from the contract: nox -s new -- NAME --style STYLE."""
    session.run("python", "-m", "loops._template", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """Measure the quick matrix (-- --full, --loop NAME, --workload NAME) and render reports/."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "run", *session.posargs)
    # The cost anatomy (syscalls and user/system CPU per echo request); about 4 s per row.
    session.run("python", "-m", "bench", "anatomy", success_codes=[0, 1])
    session.run("python", "-m", "bench", "report")


@nox.session
def report(session: nox.Session) -> None:
    """Render reports/bench.md and its charts from stored results only (runs no workload)."""
    _install(session, "bench")
    session.run("python", "-m", "bench", "report", *session.posargs)


@nox.session
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


@nox.session
def lint(session: nox.Session) -> None:
    """Check style with ruff."""
    _install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
