"""A fresh clone of this checkout, as a user's would be, with the working tree's changes.

Tests of what a user runs from a fresh clone (the documented commands, the reading path after
its install, `nox -s new` where only nox is installed) start from one.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def fresh_clone(where: Path) -> Path:
    """`git clone` of this checkout into `where`, with the uncommitted changes to tracked files
    applied and staged (so `git status` there shows only what a command then changes)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout to clone")
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where)], check=True)
    changes = subprocess.run(
        ["git", "diff", "HEAD", "--binary"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    if changes:
        subprocess.run(
            ["git", "apply", "--whitespace=nowarn"], cwd=where, input=changes, check=True
        )
        subprocess.run(["git", "add", "-A"], cwd=where, check=True)
    return where


def bare_environment(where: Path, *install: str) -> tuple[Path, dict[str, str]]:
    """A fresh venv under `where` with only `install` (and its pip), and an environment that
    leaks none of the caller's (the lab's venv, nox's): on its PATH, `python3` and `python` are
    that venv's. What a user has after `python3 -m pip install nox` on a fresh machine is this
    venv with `install` = ("nox",), or with nothing when the user's command installs nox."""
    import os
    import sys

    subprocess.run([sys.executable, "-m", "venv", str(where / "venv")], check=True)
    python = where / "venv" / "bin" / "python"
    if install:
        done = subprocess.run(
            [python, "-m", "pip", "install", "-q", *install],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0 and "Could not find a version" in done.stdout + done.stderr:
            pytest.skip("no package index reachable")
        assert done.returncode == 0, done.stdout + done.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(
        [str(python.parent)]
        + [p for p in env["PATH"].split(os.pathsep) if not (Path(p) / "activate").exists()]
    )
    return python, env


def tree_state(clone: Path) -> str:
    """The clone's state as git sees it: what differs from its index, untracked files included
    (ignored ones, such as nox's venvs, left out)."""
    return subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=clone, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
