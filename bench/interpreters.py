"""The interpreter as a dimension of the bench: which CPythons, where each one's results live.

Declared once here and read by both rooms and by ``noxfile.py``: the versions the lab supports
(``PYTHONS``), the one whose results are the report's main tables (``REFERENCE``), how to find
an interpreter that pyenv installed but did not activate (``find``), and where a version's
results are stored (``results_dir``). The reference interpreter's results stay where they always
were (``reports/results/<mode>/``); another interpreter's go beside them, in
``reports/results/<mode>/python-3.13/``, so no table ever mixes two interpreters and the main
tables read the same data whichever interpreter renders them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

PYTHONS = ("3.11", "3.12", "3.13")  # the CPythons the lab supports, oldest first
REFERENCE = "3.11"  # the interpreter of the report's main tables, and of every "× 3.11" ratio
RUNNING = f"{sys.version_info.major}.{sys.version_info.minor}"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def results_dir(results: Path, mode: str, python: str = REFERENCE) -> Path:
    """The folder of one interpreter's stored results in one mode."""
    return results / mode if python == REFERENCE else results / mode / f"python-{python}"


def runs(command: str) -> bool:
    """True if `command` starts a Python (a pyenv shim of an inactive version does not)."""
    try:
        return subprocess.run([command, "-c", ""], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def pyenv_installed(version: str) -> Path | None:
    """The newest `python3.X` pyenv installed for a version, active or not (None: none)."""
    versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(
        versions.glob(f"{version}.*/bin/python{version}"),
        key=lambda path: version_key(path.parent.parent.name),
    )
    return found[-1] if found else None


def find(version: str) -> str | None:
    """The path of a CPython `version`: this one, `python3.X` on PATH, or pyenv's."""
    if version == RUNNING:
        return sys.executable
    if runs(f"python{version}"):
        return shutil.which(f"python{version}")
    installed = pyenv_installed(version)
    return str(installed) if installed else None


def put_pyenv_interpreters_on_path(versions=PYTHONS) -> None:
    """Let a tool that looks for `python3.X` on PATH (nox) find pyenv's inactive versions."""
    for version in versions:
        if runs(f"python{version}"):
            continue
        installed = pyenv_installed(version)
        if installed:
            os.environ["PATH"] = f"{installed.parent}{os.pathsep}{os.environ['PATH']}"
