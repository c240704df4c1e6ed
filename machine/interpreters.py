"""The interpreter as a dimension of the lab: which CPythons, and where each one is.

Declared once and read by every room and by ``noxfile.py``: the versions the lab supports
(``PYTHONS``), the one whose results are the report's main tables (``REFERENCE``), how to find
an interpreter pyenv installed but did not activate (``find``). Debian's builds (from the root
:mod:`machine.debian_root` makes, for the versions this host lacks) are named ``debian-3.14``,
so Debian's 3.13 never mixes with pyenv's; ``BUILDS`` lists the interpreters the report
compares. Where each one's results are stored is the bench's (``bench.store.results_dir``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from machine import debian_root

PYTHONS = ("3.11", "3.12", "3.13", "3.14", "3.15")  # the CPythons the lab supports, oldest first
REFERENCE = "3.11"  # the interpreter of the report's main tables, and of every "× 3.11" ratio
DEBIAN = debian_root.FAMILY  # the prefix of a Debian build's name: "debian-3.14"
# The interpreters the report compares: pyenv's (this machine's own builds) and Debian's.
BUILDS = ("3.11", "3.12", "3.13", *(f"{DEBIAN}-{v}" for v in debian_root.PYTHONS))
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"  # this interpreter's version
# This interpreter's name in the results: its version, or "debian-3.14" inside Debian's root.
RUNNING = f"{DEBIAN}-{VERSION}" if debian_root.inside() else VERSION


def version_key(version: str) -> tuple[int, ...]:
    """Sort key of a version or a build name: "3.13" before "debian-3.13" before "3.14"."""
    return (*(int(part) for part in re.findall(r"\d+", version)), family(version) == DEBIAN)


def family(name: str) -> str:
    """The build family a name says: "debian" for "debian-3.14", else "" (this machine's)."""
    return DEBIAN if name.startswith(f"{DEBIAN}-") else ""


def version_of(name: str) -> str:
    """ "3.14" of "debian-3.14" (and of "3.14")."""
    return name.removeprefix(f"{DEBIAN}-")


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
    if version == VERSION:
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


def rooted(versions=PYTHONS) -> list[str]:
    """The versions this host cannot run and Debian's root can: the lab runs them inside it.

    Inside the root itself, none (its interpreters are on PATH there)."""
    if debian_root.inside():
        return []
    return [v for v in versions if v in debian_root.PYTHONS and find(v) is None]
