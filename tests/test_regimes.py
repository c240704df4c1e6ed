"""What the first screen says each regime measures: Linux's share and the wake-ups from the
cost anatomy, and the fit of idle cost on instructions, from stored files of the shape the
anatomy and the instruction count write (tests/test_anatomy.py and tests/test_instructions.py
measure those for real)."""

import json

import pytest

from bench.pages import regimes
from bench.studies.anatomy import FILES
from bench.studies.instructions import FILE

HERE = {"cpu": "AMD EPYC", "kernel_release": "6.18.44-fc-v1272", "logical_cores": 2}
ELSEWHERE = {**HERE, "kernel_release": "6.18.44-fc-v669"}


def row(user: float, system: float, voluntary: float) -> dict:
    return {"user_us": user, "system_us": system, "switches": {"voluntary": voluntary}}


def store(tmp_path, fixed: dict, closed: dict, counts: dict | None, env: dict = HERE):
    for regime, rows in ((False, fixed), (True, closed)):
        (tmp_path / FILES[regime]).write_text(json.dumps({"environment": env, "rows": rows}))
    if counts is not None:
        rows = {key: {"paced": {"per_request": n}} for key, n in counts.items()}
        (tmp_path / FILE).write_text(json.dumps({"rates": {"paced": 200}, "rows": rows}))


def test_the_fit_recovers_a_line_and_says_how_well_it_holds():
    """Rows whose CPU is exactly 40 µs + 2 ns per instruction: the fit finds both, R² 1; a
    row off the line lowers R²; completions (io_uring) and threads stay out of it."""
    counts = {"a-protocol/native": 5_000, "callbacks/callbacks": 10_000, "traps/coroutines": 20_000}
    anatomy = {"rows": {key: row(10, 30 + 0.002 * n, 1) for key, n in counts.items()}}
    anatomy["rows"]["completions/coroutines"] = row(10, 900, 1)  # off the line: left out
    counted = {key: {"paced": {"per_request": n}} for key, n in counts.items()}
    counted["completions/coroutines"] = {"paced": {"per_request": 1_000}}
    intercept, slope, r2, middle = regimes.fit(anatomy, counted)
    assert intercept == pytest.approx(40) and slope == pytest.approx(0.002)
    assert r2 == pytest.approx(1) and middle == 10_000
    anatomy["rows"]["callbacks/callbacks"] = row(10, 200, 1)  # the middle row, far off
    assert regimes.fit(anatomy, counted)[2] < 0.5
    assert not regimes.readiness("completions/coroutines")
    assert not regimes.readiness("threads/blocking")
    assert regimes.readiness("uvloop-protocol/native") and regimes.readiness("traps/coroutines")


def test_the_line_gives_each_regime_its_share_and_its_wake_ups(tmp_path):
    servers = ["uvloop-protocol/native", "asyncio-protocol/native"]
    fixed = {servers[0]: row(20, 60, 0.9), servers[1]: row(25, 25, 0.5)}
    closed = {servers[0]: row(2, 8, 0.0), servers[1]: row(4, 6, 0.001)}
    fixed["traps/coroutines"] = row(60, 60, 1.0)  # in the fit, not among the servers
    counts = {servers[0]: 4_000, servers[1]: 15_000, "traps/coroutines": 60_000}
    store(tmp_path, fixed, closed, counts)
    said = regimes.line(tmp_path, servers, HERE, "bench.md")
    assert "*capacity*: Linux holds 60–80% of a server's CPU" in said
    assert "never blocks" in said.split("*idle cost*")[0]
    assert "*idle cost*: Linux holds 50–75%" in said and "blocks 0.50–0.90 times" in said
    assert "blocks 0.50–1.00" not in said  # traps is in the fit only
    assert "R² 0." in said and "of the median row's fitted cost" in said


def test_an_anatomy_of_another_machine_is_not_set_beside_the_table(tmp_path):
    servers = ["uvloop-protocol/native"]
    store(tmp_path, {servers[0]: row(20, 60, 0.9)}, {servers[0]: row(2, 8, 0)}, None, ELSEWHERE)
    assert regimes.line(tmp_path, servers, HERE) is None
    store(tmp_path, {servers[0]: row(20, 60, 0.9)}, {servers[0]: row(2, 8, 0)}, None)
    said = regimes.line(tmp_path, servers, HERE)
    assert said.endswith("a wake-up each.") and "R²" not in said  # no counts: no fit
