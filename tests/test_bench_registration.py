"""A workload's registration: arrows one way, rows that go stale when they should.

A study's declaration (``bench/studies/<name>/__init__.py``) names its running module by name
and never imports it; the runner does. Every setting that shapes a figure is a parameter of the
row's point or part of the row's fingerprint, so editing the running module, or a setting it
reads from the declaration, plans the row again. Nothing here measures anything: the plan is
read, not run.
"""

from __future__ import annotations

import ast
import importlib
import io
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from rich.console import Console

import bench.studies as studies  # the package study folders are found in
from bench import fingerprint as fingerprints
from bench import registry, runner
from bench.fingerprint import fingerprint
from bench.pages import report
from bench.store import ResultStore, results_path
from bench.studies import crawler, http, micro
from machine.interpreters import RUNNING

ROOT = Path(__file__).resolve().parent.parent
ENV = {"host": "testhost", "cpu": "Test CPU", "python": "3.11.7", "libraries": {}}


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at its top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return found


def test_no_declaration_imports_the_running_side_and_the_runner_imports_it():
    for path in sorted((ROOT / "bench" / "studies").glob("*/__init__.py")):
        running = {m for m in imported_modules(path) if m.endswith(".measure")}
        assert not running, f"{path.parent.name} imports {running}"
    for workload in registry.STUDIES:
        assert workload.running == f"bench.studies.{workload.name}.measure"
        assert runner.running_side(workload).measure is not None


def stored_complete(workload, tmp_path: Path) -> ResultStore:
    """Every row of every quick point stored as complete, on the code as it is now."""
    path = results_path(tmp_path, "quick", workload.name)
    found = ResultStore.empty(path, workload.name, "quick", workload.kept)
    found.add_session("s1", ENV, [])
    headline = workload.metric(workload.headline).name
    for point in workload.points(False):
        for row in point.rows:
            reps = [{headline: 1.0}] * point.repetitions
            found.put(point, row, "s1", fingerprint(workload, row), reps)
    return found


def planned(workload, stored: ResultStore) -> int:
    """How many rows a quick run would measure."""
    jobs, _ = runner.plan_jobs(stored, workload, False, None, False)
    return sum(len(job.rows) for job in jobs)


@pytest.mark.parametrize(
    ("workload", "setting", "value"),
    [
        (http.STUDY, "SECONDS", {False: 3.0, True: 4.0}),
        (http.STUDY, "WARMUP_S", 2.0),
        (crawler.STUDY, "SEED", 2),
        (micro.STUDY, "PYPERF_CAP_S", 900.0),
        (micro.STUDY, "OPERATIONS", {"switch": ("callbacks",)}),
    ],
)
def test_a_setting_the_running_side_reads_plans_its_rows_again(
    workload, setting, value, monkeypatch, tmp_path
):
    stored = stored_complete(workload, tmp_path)
    assert planned(workload, stored) == 0
    declaration = {"http": http, "crawler": crawler, "micro": micro}[workload.name]
    monkeypatch.setattr(declaration, setting, value)
    rows = sum(len(point.rows) for point in workload.points(False))
    assert planned(workload, stored) == rows


def test_editing_the_running_module_plans_its_rows_again_and_its_docstrings_do_not(
    monkeypatch, tmp_path
):
    """bench/studies/http/measure.py, edited in a copy the fingerprint reads in its place."""
    copy = tmp_path / "http.py"
    shutil.copy(ROOT / "bench" / "studies" / "http" / "measure.py", copy)
    real = fingerprints._source
    monkeypatch.setattr(
        fingerprints,
        "_source",
        lambda module: copy if module == "bench.studies.http.measure" else real(module),
    )
    stored = stored_complete(http.STUDY, tmp_path)
    assert planned(http.STUDY, stored) == 0
    text = copy.read_text()
    copy.write_text(text.replace('"""One repetition:', '"""One repetition, told better:'))
    assert planned(http.STUDY, stored) == 0  # prose: nothing a measurement runs
    copy.write_text(text.replace("timeout=point.cap_s or 120", "timeout=point.cap_s or 180"))
    assert planned(http.STUDY, stored) == len(http.rows())


def test_the_micro_rows_follow_the_pyperf_cli_their_repetition_runs(monkeypatch, tmp_path):
    copy = tmp_path / "pyperf_micro.py"
    shutil.copy(ROOT / "bench" / "studies" / "micro" / "pyperf_micro.py", copy)
    real = fingerprints._source
    monkeypatch.setattr(
        fingerprints,
        "_source",
        lambda module: copy if module == "bench.studies.micro.pyperf_micro" else real(module),
    )
    stored = stored_complete(micro.STUDY, tmp_path)
    assert planned(micro.STUDY, stored) == 0
    copy.write_text(copy.read_text().replace("/ 1e9", "/ 1e9 + 0"))
    assert planned(micro.STUDY, stored) > 0


def test_a_setting_is_fingerprinted_alike_in_every_process():
    """A set's order follows string hashing, which differs between processes: sorted here."""
    setting = fingerprints._setting
    assert setting(frozenset({"b", "a"})) == setting(frozenset({"a", "b"}))
    assert setting({False: 2.0}) == "{False: 2.0}"


# -- the bench/README.md recipe "Add a study", followed literally -----------------------

NAME = "zzrecipe"
# Step 1: its CLI in workloads/<name>/, one module per style, named after the style.
RECIPE_CLI = '''"""One short sleep on a loop, its wall time as JSON."""

import argparse
import json
import time

import loops


async def main(api, seconds: float) -> None:
    await api.sleep(seconds)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--loop", required=True)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    api = loops.get(args.loop).coroutines
    start = time.perf_counter()
    api.run(main(api, args.seconds))
    with open(args.json, "w") as out:
        json.dump({"wall_ms": (time.perf_counter() - start) * 1000}, out)
'''
# Step 2: bench/studies/<name>/__init__.py, its declaration: the required fields, one hook (glance).
RECIPE_DECLARATION = '''"""Recipe: one short sleep in a fresh process."""

from bench.plan import Glance, Metric, Point, implemented_styles, variant_rows
from bench.study import Study

NAME = "zzrecipe"
SLEEP_S = 0.002  # a setting the running side reads: part of every row's fingerprint
METRICS = (Metric("wall_ms", "wall time (ms)", higher_is_better=False, digits=1),)


def points(full: bool) -> list[Point]:
    rows = tuple(variant_rows(implemented_styles("workloads.zzrecipe")))
    return [Point(NAME, (("sleeps", 1),), rows, 1)]


def point_title(params: dict) -> str:
    return f"{params['sleeps']} sleep of {SLEEP_S * 1000:g} ms"


STUDY = Study(
    name=NAME,
    title="Recipe",
    description="One short sleep in a fresh process (the bench README's recipe, followed).",
    metrics=METRICS,
    headline="wall_ms",
    points=points,
    point_title=point_title,
    running="bench.studies.zzrecipe.measure",
    rendering="bench.studies.zzrecipe.render",
    glance=(Glance("recipe wall (ms)", (("sleeps", 1),), "wall_ms", "ms of wall", "one sleep"),),
)
'''
# Step 3: bench/studies/<name>/measure.py, its running side.
RECIPE_RUNNING = '''"""Recipe, the running side: one fresh process per repetition."""

import importlib.util
import json

from bench.studies.zzrecipe import SLEEP_S
from bench.procs import Child, python
from bench.study import Measuring


def measure(point, row, cores, workdir, full) -> dict:
    cli = importlib.util.find_spec(f"workloads.zzrecipe.{row.style}").origin
    out = workdir / "recipe.json"
    argv = python(cli, "--loop", row.variant, "--seconds", str(SLEEP_S), "--json", str(out))
    child = Child(argv, cores.subject, stderr_path=workdir / "recipe.err")
    usage = child.wait(timeout=60)
    child.check(usage)
    return json.loads(out.read_text())


MEASURING = Measuring(measure=measure)
'''
# Step 4: bench/studies/<name>/render.py, its rendering side: one sentence from its figures.
RECIPE_RENDERING = '''"""Recipe, the rendering side: a sentence under each table."""

from bench.studies.zzrecipe import SLEEP_S
from bench.study import Rendering


def observations(params, rows):
    fastest = min(r.summary.stats["wall_ms"].median for r in rows if r.summary.stats)
    return [f"The fastest process took {fastest / (SLEEP_S * 1000):.0f}× its sleep."]


RENDERING = Rendering(observations=observations)
'''


@pytest.fixture
def recipe(monkeypatch, tmp_path):
    """The recipe's files, written where the packages look for them (a folder of this test's
    beside each of workloads/ and bench/studies/), then step 5: the study added to STUDIES.
    A child process finds the CLI by its path, and the lab's packages by PYTHONPATH, since
    the folder beside workloads/ is this process's alone."""
    import workloads

    files = {
        (workloads, f"{NAME}/__init__.py"): "",
        (workloads, f"{NAME}/coroutines.py"): RECIPE_CLI,
        (studies, f"{NAME}/__init__.py"): RECIPE_DECLARATION,
        (studies, f"{NAME}/measure.py"): RECIPE_RUNNING,
        (studies, f"{NAME}/render.py"): RECIPE_RENDERING,
    }
    for (package, name), text in files.items():
        folder = tmp_path / "beside" / package.__name__
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
        if str(folder) not in package.__path__:
            monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    importlib.invalidate_caches()
    declared = importlib.import_module(f"bench.studies.{NAME}")
    monkeypatch.setattr(registry, "STUDIES", (*registry.STUDIES, declared.STUDY))
    yield declared
    for module in [m for m in sys.modules if NAME in m]:
        del sys.modules[module]


def test_the_add_a_study_recipe_followed_literally_is_planned_run_and_rendered(
    recipe, monkeypatch, tmp_path
):
    workload = registry.get(NAME)
    (point,) = workload.points(False)
    assert {row.style for row in point.rows} == {"coroutines"}  # found by the style's name
    results, reports = tmp_path / "results", tmp_path / "reports"
    console = Console(file=io.StringIO())
    assert runner.run([NAME], False, ["traps"], False, results, console=console) == 0
    stored = json.loads(results_path(results, "quick", NAME, RUNNING).read_text())
    rows = stored["points"]["sleeps=1"]["rows"]
    assert set(rows) == {"asyncio/coroutines", "traps/coroutines"}  # traps, and its baseline
    for entry in rows.values():
        assert entry["reps"][0]["wall_ms"] > 0, entry["reps"][0]
    report.render_all(results, reports)
    text = (reports / "bench.md").read_text()
    assert "## Recipe" in text and "### 1 sleep of 2 ms" in text
    assert re.search(r"The fastest process took \d+× its sleep\.", text)  # its render.py
    glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert "recipe wall (ms)" in glance and "- **One sleep**: " in glance
    # its ratio to asyncio: bare, as the recipe's quick run measures one repetition a row
    # (a bootstrap of one value a side has no width, so no interval is drawn)
    ratio = r"\(×[\d.]+\)"
    assert re.search(rf"\| traps · coroutines +\|.*\| [\d.]+ {ratio} +\|", glance), glance
    # Its setting, read by its running side, is part of its rows' fingerprint.
    again = ResultStore.load(results_path(results, "quick", NAME, RUNNING), NAME, "quick")
    assert planned_for(workload, again, ["traps"]) == 0
    monkeypatch.setattr(recipe, "SLEEP_S", 0.003)
    assert planned_for(workload, again, ["traps"]) == 2


def planned_for(workload, stored: ResultStore, loop_names: list[str]) -> int:
    jobs, _ = runner.plan_jobs(stored, workload, False, loop_names, False)
    return sum(len(job.rows) for job in jobs)
