"""The real projects whose own test suites run on the lab's asyncio loops, declared once.

Read by ``noxfile.py`` (what to download, install and run) and by ``lab_loop.py`` (each suite's
own way of taking a loop), so a suite is one entry here plus its TOML of expected failures.
Pure data and the standard library: the noxfile imports it before any venv exists.

A suite's tests come from its released sdist on the package registry, at the pinned version,
downloaded when the session runs and never committed (the lab carries no copy of anyone's
tests). Where the sdist leaves the tests that drive a loop out (websockets' has no
``tests/asyncio``), the suite names the project's release tarball instead, as a distribution
archives it (Debian's ``orig.tar.gz``, the GitHub release's archive), pinned by its SHA-256.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LOOPS = ("asyncio", "uvloop", "callbacks")  # the references first, then the drop-in
# The classes of an expected failure, each a sentence a user can act on.
CLASSES = {
    "internals": "the test reads or patches a loop's private internals or concrete classes",
    "asyncio-too": "the test fails on stock asyncio as well",
    "gap": "a real gap in the loop under test",
    "order": "the test relies on an order of events the asyncio API does not promise (a task's "
    "first step against a socket's bytes), which the loop under test keeps otherwise",
    # Not a failure of any loop: skipped with the reason rather than expected to fail, so the
    # same TOML holds on a machine that has what the test needs.
    "machine": "the test needs what this machine lacks (IPv6 localhost, the outside network)",
}
SKIPPED_CLASSES = {"machine"}  # entries of these classes are skips, not strict xfails
# An entry's not_run: why an xfail cannot hold that test, so it is skipped with its reason.
NOT_RUN = {
    "hangs": "it never ends on those loops, and would stop the run",
    "crashes": "it kills the process on those loops, ending the run and every count with it",
    "subtests": "it fails inside unittest's subTest, whose failures pytest reports where no "
    "xfail reaches",
    "leaks": "it fails half way and leaves objects open whose warnings, collected during a "
    "later test, fail that test instead",
}


@dataclass(frozen=True)
class Suite:
    name: str  # the distribution on the package registry, and the key of everything else
    version: str  # pinned: a new release is a deliberate change with its own run
    install: list[str]  # pip's arguments: the sdist ({sdist} is its path) and the test needs
    args: tuple[str, ...]  # pytest arguments after the test folder, run from the sdist's root
    tests: str = "tests"
    # The release's source tarball and its SHA-256, where the registry's sdist lacks the tests.
    source: str = ""
    sha256: str = ""
    env: tuple[tuple[str, str], ...] = ()  # set for the test run

    @property
    def expected(self) -> Path:
        """The suite's TOML of expected failures, each with its class and reason."""
        return HERE / f"{self.name}.toml"


SUITES = {
    s.name: s
    for s in (
        Suite(
            name="uvicorn",
            version="0.54.0",  # the uvicorn the lab's http workload runs on too
            install=[
                "{sdist}[standard]",
                "pytest",
                "pytest-mock",
                "pytest-xdist",
                "pytest-codspeed",
                "trustme",
                "cryptography",
                "httpx2",
                "a2wsgi",
                "wsproto",
                "anyio",
                "zttp",
            ],
            # -n 0: one process, so the plugin sees every loop made (the addopts ask for 8).
            args=("-n", "0"),
        ),
        Suite(
            name="anyio",
            version="4.16.0",
            # Its `test` dependency group, less coverage; trio is left out, since the lab runs
            # only the asyncio backend (the plugin deselects the others).
            install=[
                "{sdist}",
                "blockbuster>=1.5.29",
                "hypothesis>=4.18.2",
                "psutil>=5.9",
                "pytest>=9.0",
                "pytest-mock>=3.14",
                "pytest-timeout>=2.4.0",
                "trustme>=1.0.0",
                "truststore>=0.9.1",
                "uvloop>=0.22.1; python_version < '3.15'",  # 3.15: not tried, run without it
            ],
            args=(),
        ),
        Suite(
            name="aiohttp",
            version="3.14.5",
            # requirements/test-common.in, less coverage, mypy and the autobahn runner.
            install=[
                "{sdist}[speedups]",
                "uvloop",
                "gunicorn",
                "pytest",
                "pytest-mock",
                "pytest-xdist",
                "pytest-codspeed",
                "blockbuster",
                "freezegun",
                "isal",
                "zlib_ng",
                "trustme",
                "re-assert",
                "proxy.py",
                "setuptools-git",
                "wait-for-it",
                "pytest-cov",
                "pytest-timeout",
            ],
            # One process (loops counted in it); no coverage; a hung test fails after 120 s
            # rather than stopping the run (uvloop is reported to hang in this suite).
            args=("-n", "0", "--no-cov", "--timeout", "120"),
        ),
        Suite(
            name="websockets",
            version="15.0.1",
            # tests/requirements.txt; mitmproxy is the proxy the client's proxy tests run.
            install=[
                "{sdist}",
                "pytest",
                "pytest-timeout",
                "python-socks[asyncio]",
                "mitmproxy",
                "uvloop; python_version < '3.15'",  # a loop under test, not a test need
            ],
            # It keeps no pytest configuration (it runs under unittest), so pytest would take
            # the lab's, a folder up: an empty one, and node ids from the tarball's root.
            args=("-c", "/dev/null", "--rootdir", ".", "--timeout", "120"),
            # The GitHub release's archive as Debian keeps it (the sdist has no tests/asyncio).
            source="http://deb.debian.org/debian/pool/main/p/python-websockets/"
            "python-websockets_15.0.1.orig.tar.gz",
            sha256="8451495265af3e368f794c4dc15c99ce90c771d95560f542bff8c64b5455af3b",
            # A release's tests default to 100 ms where a development tree's to 1 ms (its
            # tests/utils.py, for build farms): 10 is the 2-core machine's room, not 100's wait.
            env=(("WEBSOCKETS_TESTS_TIMEOUT_FACTOR", "10"),),
        ),
    )
}
