"""Instructions per echo request under callgrind (bench/measure/instructions.py): a count is
exact, so the same row counted twice agrees within 1%, whatever else the machine runs."""

import json
import shutil

import pytest

from bench.measure import instructions
from bench.plan import Row

needs_valgrind = pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("callgrind_control") is None,
    reason="valgrind is not installed (apt-get install valgrind)",
)


@needs_valgrind
@pytest.mark.timeout(300)
def test_the_same_row_counted_twice_agrees_within_one_percent():
    row = Row("selectors-floor", "native", anchor=True)  # the smallest server: a short count
    first, second = (instructions.count(row, "closed", (0.3, 2.0)) for _ in range(2))
    for found in (first, second):
        assert found["requests"][1] > found["requests"][0] > 0
        assert 1_000 < found["per_request"] < 1_000_000
    assert abs(second["per_request"] / first["per_request"] - 1) < 0.01, (first, second)


@needs_valgrind
@pytest.mark.timeout(300)
def test_bench_instructions_stores_both_regimes_of_a_row(tmp_path):
    assert instructions.run(["selectors-floor"], tmp_path, seconds=(0.3, 2.0)) == 0
    stored = json.loads((tmp_path / "instructions.json").read_text())
    entry = stored["rows"]["selectors-floor/native"]
    assert set(instructions.REGIMES) <= entry.keys()
    assert all(entry[regime]["per_request"] > 0 for regime in instructions.REGIMES)
    assert stored["rates"] == {"closed": None, "paced": instructions.PACED_RATE}
    assert stored["point"] == {"size": 1024, "connections": 100}
