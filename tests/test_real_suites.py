"""The real-suites plugin (tests/real_suites/lab_loop.py) on a small suite of our own, run in a
pytest of its own as `nox -s real-suites` runs a project's: the loop under test made and
counted, and each kind of expected-failure entry doing what the TOMLs' headers say. Every
committed TOML is checked against the keys and classes the plugin knows."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.real_suites.suites import CLASSES, LOOPS, NOT_RUN, SUITES

ROOT = Path(__file__).resolve().parent.parent
KEYS = {"test", "tests", "loops", "class", "reason", "pythons", "strict", "not_run"}

SUITE = """
import asyncio, time, unittest

def test_runs_on_the_loop_under_test():
    async def main():
        return type(asyncio.get_running_loop()).__name__
    assert asyncio.run(main()) == "AsyncioLoop"

def test_a_known_failure():
    assert False, "listed as a gap"

def test_never_ends():
    time.sleep(3600)

class Cases(unittest.TestCase):
    def test_fails_in_a_subtest(self):
        for n in (1, 2):
            with self.subTest(n=n):
                self.assertEqual(n, 1)

def test_an_unlisted_failure():
    assert False, "the TOML does not class this one"
"""

EXPECTED = """
[[expected]]
test = "test_suite.py::test_a_known_failure"
loops = ["callbacks"]
class = "gap"
reason = "a gap"

[[expected]]
test = "test_suite.py::test_never_ends"
loops = ["callbacks"]
class = "gap"
not_run = "hangs"
reason = "never ends"

[[expected]]
test = "test_suite.py::Cases::test_fails_in_a_subtest"
loops = ["callbacks"]
class = "asyncio-too"
not_run = "subtests"
reason = "fails in a subtest"
"""


@pytest.mark.timeout(120)
def test_the_plugin_makes_the_loop_and_marks_each_kind_of_entry(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "expected.toml").write_text(EXPECTED)
    results = tmp_path / "results.json"
    env = dict(
        os.environ,
        LAB_SUITE="",
        LAB_LOOP="callbacks",
        LAB_EXPECTED=str(tmp_path / "expected.toml"),
        LAB_RESULTS=str(results),
        PYTHONPATH=f"{ROOT}:{ROOT / 'tests' / 'real_suites'}",
        PYTHONSAFEPATH="1",
    )
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "lab_loop", "-q", "-p", "no:cacheprovider",
         "-c", "/dev/null", "--rootdir", str(tmp_path), "test_suite.py"],
        cwd=tmp_path, env=env, timeout=100, capture_output=True,
    )  # fmt: skip
    record = json.loads(results.read_text())
    counts = record["counts"]
    assert (counts["passed"], counts["xfailed"], counts["skipped"]) == (1, 1, 2), record
    # The one failure the TOML does not class is the one the session fails on.
    assert record["failed"] == ["test_suite.py::test_an_unlisted_failure"]
    assert record["loops_made"] == 1 and record["loop_types"] == ["AsyncioLoop"]
    # Provenance: when, at which commit of the lab, with which versions.
    age = datetime.datetime.now(datetime.UTC) - datetime.datetime.fromisoformat(record["date"])
    assert datetime.timedelta(0) <= age < datetime.timedelta(hours=1), record["date"]
    assert len(record["commit"]["hash"]) == 40
    assert record["versions"]["pytest"] == pytest.__version__


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_every_expected_failure_has_a_class_a_reason_and_only_known_keys(suite):
    entries = tomllib.loads(SUITES[suite].expected.read_text())["expected"]
    for entry in entries:
        assert set(entry) <= KEYS, entry
        assert entry["class"] in CLASSES and entry["reason"], entry
        assert ("test" in entry) != ("tests" in entry), entry
        assert entry["loops"] and set(entry["loops"]) <= set(LOOPS), entry
        assert entry.get("not_run", "hangs") in NOT_RUN, entry
        assert all(p.count(".") == 1 for p in entry.get("pythons", [])), entry
