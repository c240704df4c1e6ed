"""The lab installs: `pip install -e .` in a fresh virtualenv, then `import loops` from anywhere.

A learner's notebook imports `loops` from wherever it sits, so the project must be an
installable package, not only a directory to run from. The check copies the packages into a
temporary directory (the working tree, not a commit), creates a fresh virtualenv there and
installs the copy in editable mode, offline: no build isolation (the build backend is the one
this interpreter has) and no dependencies (they are this interpreter's, seen through a `.pth`
file). The same check by hand, with network, from a fresh clone::

    python3 -m venv /tmp/lab && /tmp/lab/bin/pip install -e .
    cd / && /tmp/lab/bin/python -c "import loops; print(sorted(loops.discover()))"

(there, without the reference loops installed, discovery lists them as unavailable).
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.clones import fresh_clone

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_build_backend_and_the_packages_are_declared():
    assert PYPROJECT["build-system"]["build-backend"] == "setuptools.build_meta"
    include = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    packages = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name != "tests")
    assert packages == sorted(pattern.rstrip("*") for pattern in include)


def test_pip_install_editable_in_a_fresh_venv_then_import_loops_from_elsewhere(tmp_path):
    pytest.importorskip("setuptools", minversion="70.1")  # builds wheels without `wheel`
    tree = tmp_path / "lab"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in [
        n.rstrip("*") for n in PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    ]:
        shutil.copytree(ROOT / name, tree / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # This interpreter's packages (setuptools, the reference loops) seen from the fresh venv.
    Path(purelib, "_parent.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index"]
    done = subprocess.run(
        [*pip, "--no-build-isolation", "--no-deps", "-e", str(tree)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    elsewhere = tmp_path / "notebook"
    elsewhere.mkdir()
    done = subprocess.run(
        [python, "-c", "import loops; print(loops.__file__); print(sorted(loops.discover()))"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    where, names = done.stdout.splitlines()
    assert Path(where).is_relative_to(tree)  # the editable install, not the checkout
    for name in ("callbacks", "futures", "handlers", "roundrobin", "traps"):
        assert repr(name) in names


@pytest.mark.timeout(900)  # a hang guard for the install (network) and every step, not a bound
def test_every_reading_path_step_runs_after_the_documented_install(tmp_path):
    """The reading path's own commands, in a fresh clone, after exactly its install line, on a
    fresh venv's own pip (what `python3 -m venv` gives, no upgrade): every essence runs,
    greenlets' (which imports `greenlet`) included. Needs the package index."""
    from tests.test_documented_commands import documented_commands

    clone = fresh_clone(tmp_path / "lab")
    steps = [c.text for c in documented_commands(clone) if c.document == "loops/README.md"]
    install = [s for s in steps if "pip install" in s]
    assert install == ["python3 -m venv .venv && .venv/bin/python -m pip install -e ."], steps
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "activate").exists()
    )  # no venv of the caller's (the lab's, nox's) leaks into the fresh one
    done = subprocess.run(
        install[0], shell=True, executable="/bin/bash", cwd=clone, env=env,
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    if done.returncode != 0 and "Could not find a version" in done.stdout + done.stderr:
        pytest.skip("no package index reachable")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    essences = sorted(p.parent.name for p in (clone / "loops").glob("*/essence.py"))
    assert "greenlets" in essences
    runs = [s for s in steps if s.startswith("python -m ")]
    runs += [f"python -m loops.{name}.essence" for name in essences]
    for run in dict.fromkeys(runs):
        done = subprocess.run(
            f". .venv/bin/activate && {run}", shell=True, executable="/bin/bash", cwd=clone,
            env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert done.returncode == 0, f"$ {run}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
