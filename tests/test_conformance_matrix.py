"""The suite's own bookkeeping: its size and topics, and deviations that must stay current."""

import os
import subprocess
import sys
from pathlib import Path

import loops
from conformance.harness import all_properties, deviation_problems

ROOT = Path(__file__).resolve().parent.parent
TOPICS = {
    "cancellation",  # played through asyncio's own API (conformance/test_cancellation.py)
    "scheduling",
    "timers",
    "deadlines",
    "tasks",
    "exceptions",
    "io",
    "threads",
    "hygiene",
}

STALE_VARIANT = """
import asyncio
from loops import Variant
from loops._aio import coroutines_namespace

VARIANT = Variant(
    name="{name}",
    summary="a throw-away variant with a stale deviation",
    lineage="asyncio, borrowed for tests/test_conformance_matrix.py",
    capabilities=frozenset({{"core"}}),
    coroutines=coroutines_namespace(asyncio.SelectorEventLoop),
)
"""

STALE_DEVIATIONS = """
[[deviation]]
property = "timers.a_property_that_was_renamed"
reason = "it used to fail"

[[deviation]]
property = "io.echo_over_a_socketpair"
reason = "the variant does not even claim io"

[[deviation]]
property = "timers.timers_fire_in_deadline_order"
styles = ["callbacks"]
reason = "a style the variant does not speak"
"""


def test_the_suite_covers_its_nine_topics_with_at_least_35_properties():
    properties = all_properties()
    topics = {pid.split(".", 1)[0] for pid in properties}
    # ... and the fault suite's own topics (conformance/test_faults_*.py) besides them.
    assert {topic for topic in topics if not topic.startswith("faults_")} == TOPICS
    assert len(properties) >= 35


def test_every_property_has_a_scenario_and_a_known_capability():
    for pid, test in all_properties().items():
        spec = test.lab_property
        assert spec.scenarios, f"{pid} has no scenario"
        assert spec.needs in loops.CAPABILITIES, pid


def test_every_discovered_deviation_is_current():
    assert deviation_problems(loops.discover().values()) == []


def test_a_stale_deviation_stops_the_suite_with_a_clear_error(tmp_path):
    name = "zz_stale"
    folder = tmp_path / name
    folder.mkdir()
    (folder / "__init__.py").write_text(STALE_VARIANT.format(name=name))
    (folder / "deviations.toml").write_text(STALE_DEVIATIONS)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", "--loop", name, "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    output = result.stdout + result.stderr
    assert result.returncode == 4, output  # pytest's usage error: nothing ran
    assert "stale known deviations" in output
    assert "names no property of the suite" in output
    assert "which the variant does not claim" in output
    assert "none of which the variant speaks" in output
