"""The interpreter as a dimension of the bench: rows measured on two CPythons in one run, stored
apart, and read side by side in the report's Interpreters section.

The second interpreter is a bare CPython of another version (found the way nox finds it, see
``machine.interpreters.find``), given to the run as a path: the tiny workload needs only the
standard library, and the variants whose library that interpreter lacks (trio) are unavailable
there, which is what the section must show.
"""

from __future__ import annotations

import io
import json
import os
import re
import sys

import pytest
from rich.console import Console

from bench import headline, interpreter_figures, registry, runner
from bench.pages import interpreters, report
from bench.plan import Row
from bench.render.intervals import KINDS, kind
from bench.store import results_path
from bench.venvs import NoInterpreter, ask, interpreter
from machine.interpreters import BUILDS, PYTHONS, REFERENCE, RUNNING, find
from tests import tiny_workload

TINY = interpreter_figures.Figure(
    "tiny", "tiny wall time (ms)", "tiny", (("sleep_ms", 1),), "wall_ms", 1, False
)


def other_interpreter() -> str:
    """A CPython of another version than this one, as a path (skip the test if there is none)."""
    for version in reversed(PYTHONS):
        found = find(version) if version != RUNNING else None
        if found:
            return found
    pytest.skip(f"no CPython other than {RUNNING} found (python3.X on PATH or under pyenv)")


@pytest.fixture
def tiny(monkeypatch):
    """The tiny workload registered, with trio too, and the Interpreters section reading it."""
    monkeypatch.setattr(registry, "STUDIES", (*registry.STUDIES, tiny_workload.STUDY))
    monkeypatch.setattr(tiny_workload, "ROWS", (*tiny_workload.ROWS, Row("trio", "coroutines")))
    monkeypatch.setattr(interpreter_figures, "FIGURES", (TINY,))
    monkeypatch.setattr(interpreters, "FIGURES", (TINY,))
    monkeypatch.setattr(interpreters, "COST", TINY)


def test_rows_on_two_interpreters_are_stored_apart_and_read_side_by_side(tiny, tmp_path):
    if RUNNING != REFERENCE:
        pytest.skip(f"the reference interpreter ({REFERENCE}) runs this test's first column")
    other = other_interpreter()
    results, reports = tmp_path / "results", tmp_path / "reports"
    console = Console(file=io.StringIO(), width=200)
    code = runner.run(
        ["tiny"], False, None, False, results, console=console, pythons=[RUNNING, other],
        only=interpreter_figures.read_at,
    )  # fmt: skip
    assert code == 0, console.file.getvalue()
    version = ask(other).version  # its results go beside the reference interpreter's
    stored = json.loads(results_path(results, "quick", "tiny", version).read_text())
    here = json.loads(results_path(results, "quick", "tiny", RUNNING).read_text())
    assert set(here["points"]) == {"sleep_ms=1"}  # --across: only the points the section reads
    assert set(here["points"]["sleep_ms=1"]["rows"]) == {
        "asyncio/coroutines", "traps/coroutines", "trio/coroutines"
    }  # fmt: skip
    there = stored["points"]["sleep_ms=1"]["rows"]
    assert "trio/coroutines" not in there  # trio does not load there: skipped, not failed
    assert all("error" not in entry["reps"][0] for entry in there.values())
    assert "skipping trio" in console.file.getvalue()
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    section = text.split("## Interpreters", 1)[1].split("\n## ", 1)[0]
    assert "`trio`, `trio-streams` unavailable on " in section
    assert "| trio · coroutines" in section and "unavailable" in section
    # traps on the other interpreter: its figure, then its change against 3.11, each read
    # against its own session's control (here asyncio, the tiny workload declaring none).
    assert "(change against pyenv 3.11)" in section
    traps = next(line for line in section.splitlines() if line.startswith("| traps · coroutines"))
    cells = [cell.strip() for cell in traps.split("|")[1:-1]]
    assert "×" not in cells[1] and cells[2].count("×") == 1, traps
    assert "no interval" in cells[2] or kind(cells[2].rsplit("] ", 1)[-1]) in KINDS, cells[2]
    asyncio = next(x for x in section.splitlines() if x.startswith("| asyncio · coroutines"))
    assert asyncio.count("(control)") == 2
    assert (reports / "charts" / "quick-interpreters-echo-cost.png").exists()


def test_one_interpreter_stored_says_so(tiny, tmp_path):
    results, reports = tmp_path / "results", tmp_path / "reports"
    console = Console(file=io.StringIO())
    across = interpreter_figures.read_at
    assert runner.run(["tiny"], False, None, False, results, console=console, only=across) == 0
    report.render_all(results, reports)
    section = (reports / "bench.md").read_text().split("## Interpreters", 1)[1]
    others = [v for v in BUILDS if v != RUNNING]
    assert f"No results stored yet on Python {', '.join(others)}" in section
    assert interpreters.MEASURE in section


def test_an_interpreter_is_named_by_version_path_or_command_on_path(tmp_path, monkeypatch):
    """`--python` takes "3.13", a path, or a command found on PATH ("python3.13" once nox or a
    user put it there); the command is not mistaken for a version, and a name that is none of
    them is a usage error saying so."""
    (tmp_path / "lab-python").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    by_command = interpreter("lab-python", print)
    assert by_command.executable == str(tmp_path / "lab-python")
    assert by_command.version == RUNNING
    with pytest.raises(NoInterpreter, match="neither a version"):
        interpreter("no-such-python-anywhere", print)


CONTROL_ROWS = {"asyncio-protocol": 20.0, "uvloop-protocol": 16.0, "selectors-floor": 12.0}


def _row(label: str) -> Row:
    if " · " in label:
        return Row(*label.split(" · "))
    return Row(label, "native", True)


def _reps(median: float) -> tuple[float, ...]:
    """Three repetitions 1% either side of a median: a spread like a quiet session's."""
    return (median * 0.99, median, median * 1.01)


def _costs(session: str = "S", scale: float = 1.0, **by_python: dict[str, float]) -> dict:
    """Interpreters' data holding only the fixed-load cost, each interpreter's rows with the
    echo controls (CONTROL_ROWS) measured in the same session: python -> row label -> µs,
    every figure of it (controls too) times `scale`."""
    data = {}
    for python, costs in by_python.items():
        controls = tuple(_reps(v * scale) for v in CONTROL_ROWS.values())
        cells = {
            _row(label): interpreters.Cell(_reps(v * scale), "ok", "", session, controls)
            for label, v in costs.items()
        }
        for label, v in CONTROL_ROWS.items():
            cells[_row(label)] = interpreters.Cell(
                _reps(v * scale), "ok", "", session, controls, control=True
            )
        data[python] = {interpreters.COST.name: cells}
    return data


def test_an_interpreter_whose_every_row_rose_20_percent_reads_no_move_in_the_section():
    """Every row of one interpreter's session, the controls too, dearer by one factor (a
    busier machine, or an interpreter slower alike for all): its table, its chart's figures
    and its sentence read no move (within ±5%, or can't tell); one row that rose alone reads
    dearer."""
    rows = {"traps · coroutines": 24.3, "handlers · callbacks": 49.6, "futures · coroutines": 30}
    data = {**_costs(**{"3.11": rows}), **_costs("S2", 1.2, **{"3.13": rows})}
    text = interpreters.table(interpreters.COST, data, {})
    for label in rows:
        line = next(x for x in text.splitlines() if x.startswith(f"| {label} "))
        said = line.rstrip(" |").rsplit("] ", 1)[1]
        assert "1.00× [" in line and kind(said) in ("within ±5%", "can't tell"), line
    assert "cheaper" not in text and "dearer" not in text
    said = interpreters.gain_sentence(data)
    assert "cheaper" not in said.split("cancels")[0] and "dearer" not in said.split("cancels")[0]
    assert re.search(r"3 (within ±5%|can't tell) \(of 3 rows", said), said
    cost = data["3.13"][interpreters.COST.name]
    assert all(
        abs(cost[_row(k)].relative - data["3.11"][interpreters.COST.name][_row(k)].relative) < 1e-9
        for k in rows
    )  # the chart draws each row over its session's controls: the 20% is gone
    handlers = _row("handlers · callbacks")
    cost[handlers] = interpreters.Cell(_reps(49.6 * 1.2 * 1.5), "ok", "", "S2",
                                       cost[handlers].controls)  # fmt: skip
    said = interpreters.gain_sentence(data)
    assert re.search(r"2 (within ±5%|can't tell), 1 dearer \(of 3 rows", said), said
    assert "most dearer handlers · callbacks (1.50× [" in said


def test_a_single_repetition_has_no_interval_and_no_word():
    data = _costs(**{"3.11": {"traps · coroutines": 10.0}, "3.13": {"traps · coroutines": 12.0}})
    traps = _row("traps · coroutines")
    old = data["3.11"][interpreters.COST.name][traps]
    data["3.11"][interpreters.COST.name][traps] = interpreters.Cell(
        (10.0,), "ok", "", "S", old.controls
    )
    line = next(
        x for x in interpreters.table(interpreters.COST, data, {}).splitlines()
        if x.startswith("| traps")
    )  # fmt: skip
    assert "1.20×, no interval (one repetition)" in line
    assert not any(w in line for w in ("dearer", "within", "can't tell"))


def test_a_row_measured_on_code_changed_since_reads_no_change_and_is_marked():
    """A cell whose row was measured on code that has changed since (‡) is shown, marked, and
    no change is read from it or against it: the figure would mix the interpreter's effect
    with the code's."""
    data = _costs(**{"3.11": {"traps · coroutines": 10.0}, "3.13": {"traps · coroutines": 8.0}})
    traps = _row("traps · coroutines")
    old = data["3.13"][interpreters.COST.name][traps]
    text = interpreters.table(interpreters.COST, data, {})
    assert "cheaper" in text and "‡" not in text  # fresh on both: a change is read
    data["3.13"][interpreters.COST.name][traps] = interpreters.Cell(
        old.values, "ok", "", old.session, old.controls, stale=True
    )
    text = interpreters.table(interpreters.COST, data, {})
    line = next(x for x in text.splitlines() if x.startswith("| traps"))
    assert "8.0‡ · –" in line and "cheaper" not in line
    assert "‡ measured on code that has changed since" in text
    assert interpreters.gain_sentence(data) is None  # no row left to count


def test_an_invalid_cell_says_why_it_has_no_figure():
    data = _costs(**{"3.11": {"traps · coroutines": 10.0}, "3.13": {"traps · coroutines": 11.0}})
    for python in data:
        data[python][interpreters.COST.name][Row("uvloop-protocol", "native", True)] = (
            interpreters.Cell(
                (), "invalid", "invalid (the load generator saturated its core (99%): x)"
            )
        )
    data["3.13"][interpreters.COST.name][Row("futures", "coroutines")] = interpreters.Cell(
        (), "invalid", "replies were lost"
    )
    text = interpreters.table(interpreters.COST, data, {})
    assert (
        "the peer saturated its core before the process under test did (uvloop-protocol "
        "on every interpreter)" in text
    )
    assert "no figure for futures · coroutines on 3.13: replies were lost." in text


def test_a_lab_measured_only_on_another_interpreter_renders_its_own_main_tables(tiny, tmp_path):
    """Run only on 3.13 (say), the results sit in python-3.13/; the report's main tables are
    that interpreter's, and it says so, rather than "no stored results"."""
    results, reports = tmp_path / "results", tmp_path / "reports"
    other = next(v for v in PYTHONS if v != REFERENCE)
    store = results_path(results, "quick", "tiny", other)
    assert runner.run(["tiny"], False, None, False, results, console=Console(file=io.StringIO()),
                      only=interpreter_figures.read_at) == 0  # fmt: skip
    made = results_path(results, "quick", "tiny", RUNNING)
    store.parent.mkdir(parents=True, exist_ok=True)
    if made != store:  # what a run on `other` would have stored: its own folder only
        made.replace(store)
    assert not results_path(results, "quick", "tiny").exists()
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    assert "## Tiny" in text and "| traps · coroutines" in text
    section = text.split("## Interpreters", 1)[1].split("\n## ", 1)[0]
    assert f"the tables above are Python {other}'s" in section


def test_each_build_family_is_read_against_its_own_oldest_and_named_on_its_column():
    """Debian's 3.14 against Debian's 3.13, never against pyenv's 3.11; every column names
    its family; one sentence says what the build moves on the version both families have,
    and only when one session measured both."""
    data = {
        **_costs("S1", **{"3.11": {"traps · coroutines": 10.0, "futures · coroutines": 20.0}}),
        **_costs("S2", **{
            "3.13": {"traps · coroutines": 9.0, "futures · coroutines": 18.0},
            "debian-3.13": {"traps · coroutines": 8.0, "futures · coroutines": 18.0},
        }),
        **_costs("S3", **{"debian-3.14": {"traps · coroutines": 4.0, "futures · coroutines": 9.0}}),
    }  # fmt: skip
    pyenv = {"python": "3.13.0", "python_config_args": "'--prefix=/r/.pyenv/v' '--enable-shared'"}
    envs = {
        "3.11": {**pyenv, "python": "3.11.7"},
        "3.13": pyenv,
        "debian-3.13": {"python": "3.13.15", "python_config_args": "'--enable-optimizations'"},
    }
    names = interpreters.column_names(data, envs)
    assert names == {
        "3.11": "pyenv 3.11", "3.13": "pyenv 3.13",
        "debian-3.13": "Debian 3.13", "debian-3.14": "Debian 3.14",
    }  # fmt: skip
    text = interpreters.table(interpreters.COST, data, {}, names)
    header = text.splitlines()[0]
    assert "Debian 3.14 (change against Debian 3.13)" in header
    assert "| Debian 3.13 " in header and "Debian 3.13 (change" not in header
    traps = next(line for line in text.splitlines() if line.startswith("| traps · coroutines"))
    # 4 µs against Debian's 3.13 (8), not pyenv's 3.11 (10): half, the controls alike.
    assert "4.0 · 0.50× [" in traps
    said = interpreters.build_sentence(data, envs)
    assert "the same rows on pyenv's 3.13.0 and Debian's 3.13.15" in said
    assert "in one session" in said
    assert "1.00× per request (median over 5 rows, from 0.89× to 1.00×" in said  # controls too
    for row, here in data["debian-3.13"][interpreters.COST.name].items():  # another session
        data["debian-3.13"][interpreters.COST.name][row] = interpreters.Cell(
            here.values, "ok", "", "S9", here.controls, here.control
        )
    said = interpreters.build_sentence(data, envs)
    assert "were not measured in one session, so no figure" in said and "×" not in said
    builds = interpreters.builds_table(data, envs, names)
    assert "| Debian 3.13 " in builds and "`--enable-optimizations`" in builds
    assert "--prefix" not in builds  # only the options that shape speed
    envs["3.13"] |= {"date": "2026-11-26T17:19:05+00:00", "load_average": [7.6], "logical_cores": 2}
    assert "2026-11-26 17:19 |" in interpreters.builds_table(data, envs, names)
    envs["3.13"] |= {"session": "S3", "host": "vm", "commit": {"hash": "abcdef0123456"}}
    said = interpreters.ran_in(data, envs, names)
    assert said.startswith("*Ran in:* ") and "session S3 on vm (" in said
    assert "commit `abcdef0123`" in said
    assert "`--enable-shared`" in builds and "not recorded" in builds  # Debian 3.14: no env
    assert [list(p) for p in interpreters.families(data)] == [
        ["3.11", "3.13"], ["debian-3.13", "debian-3.14"]
    ]  # fmt: skip


def test_the_fixed_load_figure_reads_the_declared_rate_never_an_old_derived_point():
    """An interpreter's store can keep a fixed-load point from before the rate was declared
    (its rate derived from the slowest row, marked rate_derived): the section reads the point
    at the declared rate, whichever is stored first."""

    declared = {
        "measure": headline.PACED,
        **headline.HEADLINE_POINT,
        "rate": headline.HEADLINE_RATE,
    }
    derived = {**declared, "rate": 7000, headline.DERIVED: True}
    assert interpreter_figures.COST.matches(declared)
    assert not interpreter_figures.COST.matches(derived)
    assert not interpreter_figures.COST.matches({**declared, "rate": 2000, "curve": True})
