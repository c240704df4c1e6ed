"""Instructions per echo request under callgrind (bench/studies/instructions/measure.py): a count
holds the load window alone (every connection open and primed), so a row counted twice agrees within
1%, in the closed loop and at the fixed load."""

import json
import shutil

import pytest

from bench.fingerprint import fingerprint
from bench.plan import Row
from bench.studies.instructions import measure as instructions

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("callgrind_control") is None,
    reason="valgrind is not installed (apt-get install valgrind)",
)


@needs_valgrind
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "variant, style, regime",
    [
        ("selectors-floor", "native", "closed"),  # the smallest server: a short count
        # At the fixed load a turn serves one request or a few, and this row's count moved by
        # a sixth between two runs while set-up and teardown were counted with the requests.
        ("asyncio", "callbacks", "paced"),
    ],
)
def test_the_same_row_counted_twice_agrees_within_one_percent(variant, style, regime):
    row = Row(variant, style, anchor=style == "native")
    first, second = (instructions.count(row, regime, 2.0) for _ in range(2))
    for found in (first, second):
        assert found["requests"] > 0
        assert 1_000 < found["per_request"] < 1_000_000
    if regime == "paced":  # every request of the window, and none of another
        assert first["requests"] == second["requests"] == 2 * instructions.PACED_RATE
    assert abs(second["per_request"] / first["per_request"] - 1) < 0.01, (first, second)


@needs_valgrind
@pytest.mark.timeout(300)
def test_bench_instructions_stores_both_regimes_of_a_row(tmp_path):
    assert instructions.run(["selectors-floor"], tmp_path, seconds=2.0) == 0
    stored = json.loads((tmp_path / "instructions.json").read_text())
    entry = stored["rows"]["selectors-floor/native"]
    assert set(instructions.REGIMES) <= entry.keys()
    assert all(entry[regime]["per_request"] > 0 for regime in instructions.REGIMES)
    assert stored["rates"] == {"closed": None, "paced": instructions.PACED_RATE}
    assert stored["point"] == {"size": 1024, "connections": 100}


def test_the_work_ranking_reads_the_stored_counts(tmp_path):
    """bench.md's first table ranks every counted row by its closed-loop instructions."""
    from bench import registry
    from bench.studies.instructions import render_work as work

    def entry(kind: str, closed: float, paced: float, key: str = "", before=None) -> dict:
        # Counted on today's code where a key is given; on unrecorded (changed) code otherwise.
        variant, style = key.split("/") if key else ("", "")
        code = fingerprint(registry.get("echo"), Row(variant, style, style == "native"))
        counted = {"date": "2026-11-27T15:00:00+00:00", "commit": "abc"}
        counted |= {"code": code} if key else {}
        earlier = {"before": {"per_request": before, **counted}} if before else {}
        return {
            "kind": kind,
            "closed": {"per_request": closed, **counted, **earlier},
            "paced": {"per_request": paced, **counted},
        }

    stored = {
        "point": {"size": 1024, "connections": 100},
        "rates": {"closed": None, "paced": 200},
        "rows": {
            "asyncio-protocol/native": entry("anchor", 20_000, 40_000),
            "uvloop-protocol/native": entry("anchor", 10_000, 30_000, "uvloop-protocol/native"),
            "traps/coroutines": entry("home-made", 25_000, 50_000, "traps/coroutines", 24_000),
            "callbacks/callbacks": entry(
                "home-made", 15_000, 45_000, "callbacks/callbacks", 15_030
            ),
            "broken/coroutines": {"kind": "home-made", "closed": {"error": "no dumps"}},
        },
    }
    (tmp_path / "instructions.json").write_text(json.dumps(stored))
    assert [key for key, _ in work.ranking(tmp_path)] == [
        "uvloop-protocol/native",
        "callbacks/callbacks",
        "asyncio-protocol/native",
        "traps/coroutines",
    ]
    text = "\n".join(work.section(tmp_path))
    # Ranked by the closed loop's count, and by the count at 200/s in brackets.
    assert "| 2 (3) | callbacks · callbacks | 15,000 | -0.2% / — | ×0.75 | 45,000 | — | — |" in text
    assert "| 1 (1) | **uvloop-protocol** | 10,000 | — / — | ×0.50 | 30,000 |" in text
    # asyncio-protocol's count recorded no code: marked as counted on changed code.
    assert "| 3 (2) | **asyncio-protocol**‡ | 20,000 | — / — |" in text
    assert "*Counted in:* 2026-11-27 machine not recorded, commit `abc`" in text
    assert "1 of 2 rows agree within 1% in the closed loop" in text
    assert "the largest change: traps · coroutines, +4.2%" in text


def test_a_recount_keeps_the_count_it_replaces_and_a_failure_replaces_no_count():
    how = {"code": "x", "method": "window", "seconds": 3.5}
    first = {"per_request": 100.0, "date": "d1", "commit": "a"} | how
    again = {"per_request": 100.5, "date": "d2", "commit": "b"} | how
    kept = instructions._replace(first, again)
    assert kept["per_request"] == 100.5
    assert kept["before"] == {"per_request": 100.0, "date": "d1", "commit": "a"}
    # Changed code: a first count, nothing to compare it with.
    assert "before" not in instructions._replace(first, again | {"code": "y"})
    # The same code counted another way (a longer window, or before the window was counted
    # alone): a first count too, since the two need not agree.
    assert "before" not in instructions._replace(first, again | {"seconds": 8.0})
    assert "before" not in instructions._replace(first | {"method": None}, again)
    failed = {"error": "valgrind died", "date": "d3", "commit": "c", "code": "x"}
    assert instructions._replace(kept, failed) == kept | {"failed": failed}
    assert instructions._replace(None, failed) == failed
