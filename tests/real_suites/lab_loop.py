"""A pytest plugin: another project's test suite, unmodified, on one of the lab's asyncio loops.

Loaded with ``-p lab_loop`` (``tests/real_suites`` on ``PYTHONPATH``) by ``nox -s
real-suites`` and configured by environment variables, so that nothing in the suite changes:
``LAB_SUITE`` (its name in ``suites.py``), ``LAB_LOOP`` (the variant whose
``VARIANT.asyncio_loop`` makes every loop the suite asks asyncio for), ``LAB_EXPECTED`` (the
suite's TOML of expected failures) and ``LAB_RESULTS`` (the JSON the counts go to, with the
loops made, so a run that fell back to asyncio's own loop shows zero). How the loop is
installed without the policy system, and the TOML's entries and classes: the folder's README.
"""

from __future__ import annotations

import asyncio
import asyncio.events
import datetime
import fnmatch
import json
import os
import platform
import sys
import time
import tomllib
import unittest
from pathlib import Path

import pytest
from suites import CLASSES, SKIPPED_CLASSES

import loops
from machine.environment import commit, library_versions

LOOP = os.environ.get("LAB_LOOP", "asyncio")
SUITE = os.environ.get("LAB_SUITE", "")
_made = []  # the loops the factory made, by type name
# Before 3.14 the policy system is the documented way, and nothing warns about it.
HAS_POLICIES = sys.version_info < (3, 14)


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The loop under test, counted: what every route below hands to the suite."""
    loop = loops.get(LOOP).asyncio_loop()
    _made.append(type(loop).__name__)
    return loop


def install() -> None:
    """Make the loop under test what asyncio hands out, by every route a suite may take."""
    # asyncio.Runner and asyncio.run look the name up in asyncio.events when they run.
    asyncio.new_event_loop = asyncio.events.new_event_loop = new_event_loop
    if hasattr(unittest.IsolatedAsyncioTestCase, "loop_factory"):
        # A plain function would be bound as a method on the test case.
        unittest.IsolatedAsyncioTestCase.loop_factory = staticmethod(new_event_loop)
    if HAS_POLICIES:

        class Policy(asyncio.DefaultEventLoopPolicy):
            def new_event_loop(self) -> asyncio.AbstractEventLoop:
                return new_event_loop()

        asyncio.set_event_loop_policy(Policy())


# --- each suite's own way of taking a loop ------------------------------------------------


def _anyio(items: list[pytest.Item], config: pytest.Config) -> None:
    """anyio: its ``anyio_backend`` fixture's asyncio parameter gets the loop as its
    ``loop_factory``; the parameters that bring their own loop (trio, uvloop's, the eager
    factory) are deselected: they would not run on the loop under test."""
    kept, dropped = [], []
    for item in items:
        backend = getattr(getattr(item, "callspec", None), "params", {}).get("anyio_backend")
        if backend is None or backend == "asyncio":
            kept.append(item)  # no backend, or asyncio's without options: new_event_loop
        elif backend[0] == "asyncio" and backend[1].get("loop_factory", new_event_loop) is (
            new_event_loop
        ):
            backend[1]["loop_factory"] = new_event_loop  # one dict, shared by its tests
            kept.append(item)
        else:
            dropped.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def _aiohttp(items: list[pytest.Item], config: pytest.Config) -> None:
    """aiohttp: its plugin's ``pyloop`` factory is ``asyncio.new_event_loop``, looked up when
    tests are generated, so it is the loop under test already; only ``--aiohttp-loop=pyloop``
    (its default) must hold, or the suite would also run uvloop by name."""
    if config.getoption("aiohttp_loop", "pyloop") != "pyloop":
        raise pytest.UsageError("the lab runs aiohttp's suite with --aiohttp-loop=pyloop only")


HOOKS = {"anyio": _anyio, "aiohttp": _aiohttp}  # the suites that need more than install()


# --- blockbuster, the blocking-call detector anyio's and aiohttp's suites run ----------------
# It fails a test whose loop thread makes a blocking call, except where the call sits in one
# of asyncio's own functions that must make it (spawning a child reads its error pipe,
# create_unix_server stats the path), which it names by asyncio's file path. The drop-in
# makes the same calls in the same places of its own files; each of its counterparts is
# exempted here, so the detector judges it as it judges asyncio, no more and no less.
COUNTERPARTS = {
    "callbacks": [
        ("os.read", "callbacks/asyncio_loop.py", {"subprocess_exec", "subprocess_shell"}),
        ("os.stat", "callbacks/servers.py", {"create_unix_server", "_remove_on_close"}),
        ("os.stat", "callbacks/servers.py", {"_unlink_socket_file"}),
        ("os.unlink", "callbacks/servers.py", {"_unlink_socket_file"}),
        ("os.sendfile", "callbacks/connections.py", {"sendfile"}),
        ("os.sendfile", "callbacks/sockets.py", {"_sock_sendfile_native"}),
        ("threading.Lock.acquire", "callbacks/asyncio_loop.py", {"shutdown_default_executor"}),
    ]
}


def exempt_counterparts() -> None:
    """Every BlockBuster the suite makes learns the counterparts before it is switched on
    (the suites' fixtures make theirs with blockbuster_ctx, and aiohttp's does not yield it)."""
    try:
        from blockbuster import blockbuster as detector_module
    except ImportError:
        return  # the suite does not run it
    activate = detector_module.BlockBuster.activate

    def activate_with_counterparts(detector) -> None:
        for name, filename, functions in COUNTERPARTS.get(LOOP, []):
            if name in detector.functions:
                detector.functions[name].can_block_in(filename, functions)
        activate(detector)

    detector_module.BlockBuster.activate = activate_with_counterparts


# --- pytest hooks ---------------------------------------------------------------------------


def _expected() -> list[dict]:
    path = os.environ.get("LAB_EXPECTED")
    if not path or not Path(path).exists():
        return []
    entries = tomllib.loads(Path(path).read_text()).get("expected", [])
    for entry in entries:
        if not entry.get("reason") or entry.get("class") not in CLASSES:
            raise pytest.UsageError(
                f"{path}: an expected failure needs a reason and a class in {sorted(CLASSES)}:"
                f" {entry}"
            )
    # "pythons" (optional): the versions an entry holds on ("3.13" is every 3.13.x).
    here = platform.python_version()
    return [
        e
        for e in entries
        if LOOP in e["loops"]
        and any(here == v or here.startswith(v + ".") for v in e.get("pythons", [here]))
    ]


_started = time.monotonic()  # the run's wall time goes in the results (CI's budget reads it)


def pytest_configure(config: pytest.Config) -> None:
    if loops.get(LOOP).asyncio_loop is None:
        raise pytest.UsageError(f"LAB_LOOP={LOOP!r} has no asyncio loop")
    install()
    exempt_counterparts()


def pytest_collection_modifyitems(items: list[pytest.Item], config: pytest.Config) -> None:
    if SUITE in HOOKS:
        HOOKS[SUITE](items, config)
    entries = _expected()
    for item in items:
        for entry in entries:
            # "test": one fnmatch pattern; "tests": a list of them, for one cause of many.
            patterns = entry.get("tests") or [entry["test"]]
            if any(fnmatch.fnmatchcase(item.nodeid, pattern) for pattern in patterns):
                reason = f"{entry['class']}: {entry['reason']}"
                # not_run: an xfail cannot hold the test (NOT_RUN in suites.py says why each).
                if entry["class"] in SKIPPED_CLASSES or entry.get("not_run"):
                    item.add_marker(pytest.mark.skip(reason=reason))
                else:
                    # strict = false only for a test that fails now and then on the loops it names.
                    strict = entry.get("strict", True)
                    item.add_marker(pytest.mark.xfail(reason=reason, strict=strict))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    path = os.environ.get("LAB_RESULTS")
    stats = terminalreporter.stats
    counts = {
        kind: len([r for r in stats.get(kind, []) if getattr(r, "when", "call") != "teardown"])
        for kind in ("passed", "failed", "xfailed", "xpassed", "skipped", "error")
    }
    counts["deselected"] = len(stats.get("deselected", []))
    failed = sorted({r.nodeid for kind in ("failed", "error") for r in stats.get(kind, [])})
    terminalreporter.write_line(f"lab loop {LOOP}: {counts}; loops made: {len(_made)}")
    if path:
        record = {
            "suite": SUITE,
            "loop": LOOP,
            "python": platform.python_version(),
            "installed_by": "loop_factory" + (" and policy" if HAS_POLICIES else ""),
            "counts": counts,
            "failed": failed,
            "loops_made": len(_made),
            "loop_types": sorted(set(_made)),
            "seconds": round(time.monotonic() - _started),
            # When the counts were measured, at which commit of the lab.
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "commit": commit(),
            # The suite, its runner and the loop libraries under test.
            "versions": library_versions(n for n in (SUITE, "pytest", "uvloop") if n),
        }
        Path(path).write_text(json.dumps(record, indent=1) + "\n")
