"""`nox -s new`: a scaffolded variant is discovered at once and the suite says what is missing."""

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loops._template import scaffold
from loops.contract import STYLES, CallbacksLoop, CoroutinesAPI
from tests.clones import bare_environment, fresh_clone, tree_state

ROOT = Path(__file__).resolve().parent.parent


def _contract_methods(protocol):
    return {n for n, m in vars(protocol).items() if inspect.isfunction(m) and n[0] != "_"}


@pytest.mark.parametrize("style", STYLES)
def test_scaffold_has_every_contract_method_raising_a_clear_error(tmp_path, style):
    folder = scaffold("demo", style, into=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo"]  # writes nowhere else
    module = "loop.py" if style == "callbacks" else "api.py"
    assert sorted(p.name for p in folder.iterdir()) == sorted(["README.md", "__init__.py", module])
    source = (folder / module).read_text()
    protocol = CallbacksLoop if style == "callbacks" else CoroutinesAPI
    for method in _contract_methods(protocol):
        assert f"def {method}(" in source, method
    compile(source, module, "exec")


def test_scaffold_refuses_bad_names_and_existing_folders(tmp_path):
    with pytest.raises(ValueError, match="lowercase Python identifier"):
        scaffold("Not-A-Name", "callbacks", into=tmp_path)
    with pytest.raises(ValueError, match="unknown style"):
        scaffold("demo", "threads", into=tmp_path)
    scaffold("demo", "callbacks", into=tmp_path)
    with pytest.raises(FileExistsError):
        scaffold("demo", "callbacks", into=tmp_path)


@pytest.mark.timeout(120)
def test_a_scaffold_is_discovered_and_the_suite_reports_what_to_implement(tmp_path):
    scaffold("demo", "coroutines", into=tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "conformance", "--loop", "demo", "-q"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=110,
        env={**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert result.returncode == 1, result.stdout + result.stderr  # tests ran and failed
    assert "demo-coroutines" in result.stdout
    assert "to implement next" in result.stdout
    assert "run()" in result.stdout and "loops/demo/api.py" in result.stdout


def _nox(*args: str) -> str:
    """Run the lab's noxfile with nox as a user runs it (`python3 -m nox ...`); its stdout."""
    result = subprocess.run(
        [sys.executable, "-m", "nox", *args], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_every_nox_session_is_selected_by_its_bare_name():
    """`nox -s NAME` selects every session of the noxfile, those that make no venv included.

    The noxfile narrows nox's python selection to the running interpreter (`nox -s conformance`
    runs conformance on it, not on every CPython), and nox drops from that selection every
    session whose python is not listed, so `nox -s new` once selected nothing.
    """
    listing = _nox("--list")
    names = sorted(
        {re.sub(r"-3\.\d+$", "", s) for s in re.findall(r"^[*-] (\S+) ->", listing, re.M)}
    )
    assert "new" in names and "conformance" in names, listing
    selected = json.loads(_nox("--list", "--json", "-s", *names))
    assert sorted({entry["name"] for entry in selected}) == names


def test_nox_new_scaffolds_a_variant(tmp_path):
    """The documented verb, `nox -s new -- NAME --style STYLE`, writes the folder."""
    _nox("-s", "new", "--", "demo", "--style", "coroutines", "--into", str(tmp_path))
    assert sorted(p.name for p in (tmp_path / "demo").iterdir()) == [
        "README.md",
        "__init__.py",
        "api.py",
    ]


# The house's tests that read every variant folder: what a new folder must pass at once.
HOUSE_TESTS = (
    "tests/test_designs.py",
    "tests/test_discovery.py",
    "tests/test_reading_path.py",
    "tests/test_twins.py",
    "tests/test_availability.py",
    "tests/test_house.py",
)


@pytest.mark.timeout(300)
@pytest.mark.parametrize("style", STYLES)
def test_a_fresh_scaffold_passes_the_house_tests_the_day_it_is_made(tmp_path, style):
    """`nox -s new -- demo --style STYLE` in a copy of the checkout, then the house's tests
    there: the scaffold's design declarations hold of its code, its README ends as every
    home-made loop's does, and the lab's listings name it."""
    copy = tmp_path / "lab"
    shutil.copytree(
        ROOT, copy, ignore=shutil.ignore_patterns(".git", ".nox", ".venvs", "__pycache__", "site")
    )
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "new", "--", "demo", "--style", style],
        cwd=copy, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "`demo`" in (copy / "README.md").read_text()  # the variants table names it
    house = subprocess.run(
        [sys.executable, "-m", "pytest", *HOUSE_TESTS, "-v", "-p", "no:randomly", "-x"],
        cwd=copy, capture_output=True, text=True, timeout=280,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )  # fmt: skip
    assert house.returncode == 0, house.stdout[-3000:] + house.stderr[-2000:]
    assert "test_a_home_made_loops_io_model_and_wait_are_in_its_code[demo] PASSED" in house.stdout


@pytest.fixture(scope="module")
def bare_nox(tmp_path_factory):
    """A venv whose only install is nox, the README's way (`python3 -m pip install nox`), run
    with an environment that leaks none of the lab's: the python of `python -m nox`."""
    return bare_environment(tmp_path_factory.mktemp("bare"), "nox")


@pytest.mark.timeout(600)
def test_nox_new_works_in_a_fresh_clone_whose_only_install_is_nox(tmp_path, bare_nox):
    """The documented verb on a fresh clone with nothing but nox: the scaffold and every
    listing that names it (the renderer's needs come from the session's own venv)."""
    python, env = bare_nox
    clone = fresh_clone(tmp_path / "lab")
    done = subprocess.run(
        [python, "-m", "nox", "-s", "new", "--", "mine", "--style", "coroutines"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=500,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (clone / "loops" / "mine" / "api.py").is_file()
    assert "`mine`" in (clone / "README.md").read_text()
    assert "`mine`" in (clone / "loops" / "README.md").read_text()


@pytest.mark.timeout(600)
def test_nox_new_that_fails_part_way_leaves_the_tree_as_it_found_it(tmp_path, bare_nox):
    """The scaffold written and the READMEs edited, then the last listing fails (its renderer
    broken in this clone): the run fails, says what it undid, and git sees the tree it had."""
    python, env = bare_nox
    clone = fresh_clone(tmp_path / "lab")
    reading = clone / "bench" / "render" / "reading.py"
    reading.write_text(reading.read_text() + "\nraise SystemExit('a renderer that fails')\n")
    subprocess.run(["git", "add", "-A"], cwd=clone, check=True)
    found = tree_state(clone)
    done = subprocess.run(
        [python, "-m", "nox", "-s", "new", "--", "mine", "--style", "blocking"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=500,
    )  # fmt: skip
    said = done.stdout + done.stderr
    assert done.returncode != 0, said
    assert "removed loops/mine" in said and "restored README.md" in said, said[-3000:]
    assert tree_state(clone) == found, tree_state(clone)
    assert not (clone / "loops" / "mine").exists()
