"""Bad arguments: every CLI refuses them with a clear message and a non-zero exit.

Two halves. The property plays the three CLIs that take a loop (echo server, sleep, crawler)
with the case's ``--loop``/``--style`` and one bad argument at a time, called in-process (a
bad argument must be refused before any loop runs, so there is nothing to start): negative
sizes, a port out of range, a port in use, a style the variant does not speak. The plain tests
below run all five CLIs (those three, the load generator and the site server) as real
processes, as a user types them: an unknown loop or style, negative or zero sizes, a port in
use; each must exit non-zero with a one-line message naming the argument, and no traceback.
"""

from __future__ import annotations

import contextlib
import io
import socket
import subprocess

import pytest

from conformance.processes import ROOT, case_prop, module_command
from loops import STYLES
from workloads.crawler import __main__ as crawler_cli
from workloads.echo import __main__ as echo_cli
from workloads.sleep import __main__ as sleep_cli

NOWHERE = "http://127.0.0.1:9/"


@pytest.fixture
def port_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield str(busy.getsockname()[1])


def refusals(case, port_in_use: str) -> list[tuple]:
    """(status, says-what-is-wrong) for each bad command line."""
    loop = ["--loop", case.variant.name, "--style", case.style]
    bad = [
        (echo_cli.main, [*loop, "--port", "-1"], "argument --port: -1 is outside [0, 65535]"),
        (echo_cli.main, [*loop, "--port", "65536"], "argument --port: 65536 is outside"),
        (echo_cli.main, [*loop, "--port", port_in_use], "Address already in use"),
        (sleep_cli.main, [*loop, "--tasks", "-5", "--max-delay", "1"], "argument --tasks: -5"),
        (sleep_cli.main, [*loop, "--tasks", "5", "--max-delay", "-1"], "--max-delay: -1"),
        (sleep_cli.main, [*loop, "--idle", "0"], "argument --idle: 0 is outside"),
        (crawler_cli.main, [*loop, NOWHERE, "--concurrency", "0"], "must be positive, got 0"),
        (crawler_cli.main, [*loop, NOWHERE, "--max-bytes", "-1"], "must be positive, got -1"),
        (crawler_cli.main, [*loop, NOWHERE, "--max-redirects", "-1"], "--max-redirects: -1"),
    ]
    unspoken = [s for s in STYLES if s not in case.variant.styles]
    if unspoken:
        args = ["--loop", case.variant.name, "--style", unspoken[0], "--port", "0"]
        bad.append((echo_cli.main, args, f"does not speak {unspoken[0]}"))
    return [_refusal(main, argv, says) for main, argv, says in bad]


def _refusal(main, argv: list[str], says: str) -> tuple:
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:
            status = exit_.code
    return (" ".join(argv[4:]), status != 0 and status is not None, says in err.getvalue())


@case_prop("core", timeout=30)
def test_bad_arguments_are_refused_with_a_clear_message(case, port_in_use):
    seen = refusals(case, port_in_use)
    assert seen == [(argv, True, True) for argv, _, _ in seen]


# --- every CLI, as a process -----------------------------------------------------------------

ECHO, SLEEP, CRAWLER = "workloads.echo", "workloads.sleep", "workloads.crawler"
LOAD, SITE = "workloads.echo.load", "workloads.crawler.site"
LOAD_OK = ["--connections", "1", "--size", "10", "--duration", "1"]
PROCESS_CASES = [
    (ECHO, ["--loop", "nope", "--port", "0"], 2, "unknown loop 'nope'; known loops: asyncio"),
    (ECHO, ["--loop", "asyncio", "--style", "threads", "--port", "0"], 2, "unknown style"),
    (ECHO, ["--loop", "asyncio", "--port", "70000"], 2, "--port: 70000 is outside [0, 65535]"),
    (ECHO, ["--loop", "asyncio", "--port", "{busy}"], 1, "Address already in use"),
    (SLEEP, ["--loop", "nope", "--idle", "1"], 2, "unknown loop 'nope'"),
    (SLEEP, ["--loop", "asyncio", "--tasks", "-1", "--max-delay", "1"], 2, "--tasks: -1"),
    (
        SLEEP,
        ["--loop", "asyncio", "--tasks", "1", "--max-delay", "1", "--cancel", "2"],
        2,
        "--cancel: 2 is outside [0.0, 1.0]",
    ),
    (CRAWLER, ["--loop", "nope", NOWHERE], 2, "unknown loop 'nope'"),
    (CRAWLER, ["--loop", "asyncio", NOWHERE, "--timeout", "-1"], 2, "--timeout: must be positive"),
    (CRAWLER, ["--loop", "asyncio", "http://127.0.0.1:99999/"], 2, "bad port"),
    (
        LOAD,
        ["--port", "{busy}", "--connections", "-1", "--size", "10", "--duration", "1"],
        2,
        "--connections: must be positive, got -1",
    ),
    (
        LOAD,
        ["--port", "{busy}", "--connections", "1", "--size", "0", "--duration", "1"],
        2,
        "--size: must be positive, got 0",
    ),
    (LOAD, ["--port", "70000", *LOAD_OK], 2, "--port: 70000 is outside [0, 65535]"),
    (
        LOAD,
        ["--port", "{busy}", "--udp", "--connections", "1", "--size", "70000", "--duration", "1"],
        2,
        "does not fit in a UDP datagram",
    ),
    (SITE, ["--port", "0", "--pages", "0"], 2, "--pages must be at least 1"),
    (SITE, ["--port", "0", "--pages", "5", "--huge-bytes", "-5"], 2, "--huge-bytes: must be"),
    (SITE, ["--port", "0", "--pages", "5", "--delay-ms", "-1"], 2, "--delay-ms: -1 is outside"),
    (SITE, ["--port", "{busy}", "--pages", "5"], 1, "cannot listen on 127.0.0.1:"),
    (SITE, ["--port", "0", "--pages", "5", "--faults", "bogus"], 2, "unknown fault 'bogus'"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("module", "argv", "status", "says"),
    PROCESS_CASES,
    ids=[f"{m.rsplit('.', 1)[-1]}-{'-'.join(a[:4])}" for m, a, _, _ in PROCESS_CASES],
)
def test_every_cli_refuses_bad_arguments_as_a_process(module, argv, status, says, port_in_use):
    argv = [arg.replace("{busy}", port_in_use) for arg in argv]
    done = subprocess.run(
        module_command(module, *argv), cwd=ROOT, capture_output=True, text=True, timeout=20
    )
    assert (done.returncode, says in done.stderr, "Traceback" in done.stderr) == (
        status,
        True,
        False,
    ), done.stderr
