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
