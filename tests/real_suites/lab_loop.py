"""A pytest plugin: another project's test suite, unmodified, on one of the lab's asyncio loops.

Loaded with ``-p lab_loop`` (``tests/real_suites`` on ``PYTHONPATH``) by ``nox -s
uvicorn-suite``; configured by environment variables, so that nothing in the suite changes:

- ``LAB_LOOP``: the variant whose ``VARIANT.asyncio_loop`` factory makes every event loop the
  suite asks asyncio for (``asyncio.new_event_loop()``, ``asyncio.Runner()`` without a
  factory, anyio's pytest runner): an event loop policy, set at configure time, as uvloop's
  ``install()`` does. A test that builds its own loop by name (uvicorn's ``loop="uvloop"``)
  gets that one; the count of loops the policy made is in the results.
- ``LAB_EXPECTED``: a TOML file of expected failures (``[[expected]]`` with ``test``, an
  fnmatch pattern of node ids, ``loops`` and ``reason``), each a strict xfail on the loops it
  names, so the run is green and a test that starts passing says so.
- ``LAB_RESULTS``: a JSON file the counts are written to (passed, failed, xfailed, ...).
"""

from __future__ import annotations

import asyncio
import fnmatch
import json
import os
import platform
import tomllib
from pathlib import Path

import pytest

import loops

LOOP = os.environ.get("LAB_LOOP", "asyncio")
_made = []  # the loops the policy made, by type name


class _LabPolicy(asyncio.DefaultEventLoopPolicy):
    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        loop = loops.get(LOOP).asyncio_loop()
        _made.append(type(loop).__name__)
        return loop


def _expected() -> list[dict]:
    path = os.environ.get("LAB_EXPECTED")
    if not path:
        return []
    entries = tomllib.loads(Path(path).read_text()).get("expected", [])
    for entry in entries:
        if not entry.get("reason"):
            raise pytest.UsageError(f"{path}: an expected failure without a reason: {entry}")
    return [e for e in entries if LOOP in e["loops"]]


def pytest_configure(config: pytest.Config) -> None:
    if loops.get(LOOP).asyncio_loop is None:
        raise pytest.UsageError(f"LAB_LOOP={LOOP!r} has no asyncio loop")
    asyncio.set_event_loop_policy(_LabPolicy())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    entries = _expected()
    for item in items:
        for entry in entries:
            if fnmatch.fnmatchcase(item.nodeid, entry["test"]):
                item.add_marker(pytest.mark.xfail(reason=entry["reason"], strict=True))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    path = os.environ.get("LAB_RESULTS")
    stats = terminalreporter.stats
    counts = {
        kind: len([r for r in stats.get(kind, []) if getattr(r, "when", "call") != "teardown"])
        for kind in ("passed", "failed", "xfailed", "xpassed", "skipped", "error")
    }
    failed = sorted({r.nodeid for kind in ("failed", "error") for r in stats.get(kind, [])})
    terminalreporter.write_line(f"lab loop {LOOP}: {counts}; loops made: {len(_made)}")
    if path:
        record = {
            "loop": LOOP,
            "python": platform.python_version(),
            "counts": counts,
            "failed": failed,
            "loops_made": len(_made),
            "loop_types": sorted(set(_made)),
        }
        Path(path).write_text(json.dumps(record, indent=1) + "\n")
