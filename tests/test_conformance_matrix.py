"""The suite's own bookkeeping: its size and topics, and deviations that must stay current."""

import os
import re
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import loops
from conformance import findings, matrix
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
    "regressions",  # the field's fixed bugs, on the variants with an asyncio loop
    "structured",  # nurseries and cancel scopes: trio's names, and asyncio's TaskGroup
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


def test_the_suite_covers_its_eleven_topics_with_at_least_35_properties():
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


# --- findings first: severities, stored outcomes, the page's opening --------------------------

LOOPS = ROOT / "loops"


def _every_deviation() -> list[tuple[str, str]]:
    """(variant, property) of every deviations.toml, read directly: a variant unavailable on
    this interpreter (asyncio_eager on 3.11) has its deviations ranked too."""
    found = []
    for path in sorted(LOOPS.glob("*/deviations.toml")):
        for entry in tomllib.loads(path.read_text()).get("deviation", []):
            found.append((path.parent.name, entry["property"]))
    return found


def test_every_known_deviation_has_a_declared_severity():
    severities = findings.load_severities()
    unranked = [
        f"loops/{variant}/deviations.toml: {pid}"
        for variant, pid in _every_deviation()
        if severities.of(pid, variant) == findings.UNRANKED
    ]
    assert unranked == [], "add these properties to conformance/severities.toml"


def test_every_severity_entry_names_a_property_of_the_suite():
    properties = all_properties()
    severities = findings.load_severities()
    assert [pid for pid in severities.entries if pid not in properties] == []
    assert severities.order[0] == "loses data" and severities.order[-1] == "by design"


def _results(python: str = "3.11.7", **outcomes: str) -> findings.Results:
    """Results from keyword cases 'pid__variant__style' = outcome (dots in pid as '__')."""
    results = findings.Results(python, "x86_64", "abc1234")
    for key, outcome in outcomes.items():
        topic, name, variant, style = key.split("__")
        results.outcomes[f"{topic}.{name}", variant, style] = outcome
        if outcome == "deviation":
            results.reasons[f"{topic}.{name}", variant, style] = f"why {variant} deviates"
    return results


DATA_LOSS = "deadlines__a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way"
RANDOM = "scheduling__call_soon_runs_in_fifo_order"


def _sample(python: str = "3.11.7") -> findings.Results:
    return _results(
        python,
        **{
            f"{RANDOM}__trio__coroutines": "deviation",
            f"{RANDOM}__traps__coroutines": "pass",
            f"{DATA_LOSS}__asyncio__coroutines": "deviation",
            f"{DATA_LOSS}__traps__coroutines": "pass",
            f"{DATA_LOSS}__trio__coroutines": "pass",
        },
    )


def test_findings_come_worst_first_with_their_loops_and_command():
    found = findings.findings(_sample(), findings.load_severities(), {})
    assert [(f.severity, list(f.affected)) for f in found] == [
        ("loses data", ["asyncio"]),
        ("by design", ["trio"]),
    ]
    assert found[0].command() == (
        "python3 -m pytest conformance/test_deadlines.py::"
        "test_a_timeout_and_the_wake_up_it_guards_in_one_poll_end_one_way --loop asyncio"
    )


def test_a_variant_ranked_apart_gets_its_own_sentence():
    """One property, two severities: the data loss of asyncio and the design of threads are two
    findings, each with the sentence severities.toml gives its severity."""
    cases = {f"{DATA_LOSS}__asyncio__coroutines": "deviation"}
    cases[f"{DATA_LOSS}__threads__blocking"] = "deviation"
    severities = findings.load_severities()
    found = findings.findings(_results(**cases), severities, {})
    assert [(f.severity, list(f.affected)) for f in found] == [
        ("loses data", ["asyncio"]),
        ("by design", ["threads"]),
    ]
    entry = severities.entries[DATA_LOSS.replace("__", ".")]
    assert [f.text for f in found] == [entry["finding"], entry["findings"]["by design"]]


def test_other_interpreters_are_compared_from_their_stored_runs():
    here = _sample()
    same = _sample("3.12.1")
    differs = _sample("3.13.0")
    differs.outcomes[DATA_LOSS.replace("__", "."), "asyncio", "coroutines"] = "pass"
    eager = f"{DATA_LOSS}__asyncio_eager__coroutines"
    same.outcomes.update(_results("3.12.1", **{eager: "deviation"}).outcomes)
    loss = findings.findings(
        here, findings.load_severities(), {"3.12": same, "3.13": differs, "3.14": None}
    )[0]
    assert loss.elsewhere == {
        "3.12": "same (also asyncio_eager)",
        "3.13": "differs: holds there on asyncio",
        "3.14": "not measured",
    }


def test_stored_results_round_trip_through_json(tmp_path):
    results = _sample()
    results.unavailable["asyncio_eager"] = "unavailable on Python 3.11: new in 3.12"
    findings.results_path(tmp_path, results.minor).write_text(results.to_json())
    assert findings.stored(tmp_path) == {"3.11": results}


def test_the_page_opens_with_the_findings_and_every_warning_links_to_its_reason():
    variants = [loops.get(name) for name in ("asyncio", "traps", "trio")]
    page = matrix.render(
        _sample(), variants, others={"3.12": None}, severities=findings.load_severities()
    )
    headings = [line for line in page.splitlines() if line.startswith("#")]
    assert headings[:3] == ["# Conformance matrix", "## Findings", "## Summary by variant"]
    first_screen = page.splitlines()[:20]
    assert any("**loses data**" in line and "asyncio" in line for line in first_screen)
    assert any("**by design**" in line and "trio" in line for line in first_screen)
    links = set(re.findall(r"\[(?:cb|gen|co) ⚠️\]\(#([\w-]+)\)", page))
    ids = set(re.findall(r'<a id="([\w-]+)"></a>', page))
    assert len(links) == 2 and links <= ids


def test_the_per_style_counts_on_the_page_are_the_ones_a_report_imports():
    results = _sample()
    assert findings.style_counts(results) == {
        ("asyncio", "coroutines"): (0, 1),
        ("traps", "coroutines"): (2, 2),
        ("trio", "coroutines"): (1, 2),
    }
    variants = [loops.get(name) for name in ("asyncio", "traps", "trio")]
    page = matrix.render(results, variants, others={}, severities=findings.load_severities())
    assert re.search(r"^\| traps +\| co 2/2 +\|$", page, re.M)
    # The bench's glance reads the page's cells (a deviation linked is still "co ⚠️").
    from bench.pages import glance

    counts_from_cells = getattr(glance, "conformance_counts", None)
    if counts_from_cells is not None:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "conformance.md"
            path.write_text(page)
            assert counts_from_cells(path) == findings.style_counts(results)


def test_a_loop_unavailable_on_another_interpreter_is_not_called_the_same_there():
    here = _results(**{f"{DATA_LOSS}__curio__coroutines": "deviation"})
    there = _results("3.12.1", **{f"{DATA_LOSS}__traps__coroutines": "pass"})
    there.unavailable["curio"] = "unavailable on Python 3.12: curio does not load"
    (loss,) = findings.findings(here, findings.load_severities(), {"3.12": there})
    assert loss.elsewhere == {"3.12": "not measured (curio unavailable there)"}
    here.outcomes.update(_results(**{f"{DATA_LOSS}__asyncio__coroutines": "deviation"}).outcomes)
    there.outcomes.update(_results(**{f"{DATA_LOSS}__asyncio__coroutines": "deviation"}).outcomes)
    (loss,) = findings.findings(here, findings.load_severities(), {"3.12": there})
    assert loss.elsewhere == {"3.12": "same (curio unavailable there)"}


def test_the_bench_reads_back_every_style_mark_the_matrix_writes():
    """The glance counts a variant's properties per style from the matrix's cells ("blk ✅"):
    one mark per style of the contract, the same in both."""
    from bench.pages.glance import CELL, STYLE_MARK

    assert {style: matrix.STYLE_ABBREV[style] for style in loops.STYLES} == STYLE_MARK
    for mark in STYLE_MARK.values():
        assert CELL.fullmatch(f"{mark} ✅")


def test_every_style_the_suite_plays_has_a_mark_in_the_matrix():
    from conformance.harness import PLAYABLE

    assert set(PLAYABLE) <= set(matrix.STYLE_ABBREV), "add it to conformance/matrix.py STYLES_SHOWN"
