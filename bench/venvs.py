"""The interpreters a run measures on: each one's virtualenv, and what it can run.

``python -m bench run --python 3.13`` measures the loops on CPython 3.13. The interpreter running
the bench measures with its own environment; another one gets a virtualenv of its own,
``.venvs/bench-3.13/`` (gitignored), made once with ``python3.13 -m venv`` and the workloads'
dependency groups (``http``: the workloads and uvicorn) plus pyperf, and made again only when
``pyproject.toml`` changes. ``--python`` also takes a path to a Python executable (a virtualenv
of your own). What a variant can do there is asked of that interpreter (``python -m loops
--json``), so a variant unavailable on it is skipped there with its own reason.

A version this host lacks and Debian's root has (``--python 3.14``, or ``--python debian-3.13``
for Debian's build beside pyenv's) is measured inside the root (:mod:`machine.debian_root`): its
virtualenv ``.venvs/bench-debian-3.14/`` is made there (the checkout is mounted at its own path,
so the venv's paths read the same inside and out), and the bench starts it through
``.venvs/bench-debian-3.14/in-root``, a script that enters the root and execs the venv's python
under the same process id, so a server measured there is the process the bench started. Its
results are stored as ``debian-3.14``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import loops
from bench.plan import anchor_reasons
from machine import debian_root, environment
from machine.environment import ROOT
from machine.interpreters import DEBIAN, RUNNING, VERSION, family, find, rooted, version_of

VENVS = ROOT / ".venvs"
GROUPS = ("http",)  # every workload's dependencies, references included
# The micro benchmarks' harness, and the project's own dependencies (greenlet), no group's.
EXTRA = (
    "pyperf>=2.6",
    *tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"],
)


@dataclass(frozen=True)
class Interpreter:
    """One interpreter a run measures on: its version, its executable, what runs there."""

    version: str  # "3.13"
    executable: str
    styles: dict[str, tuple[str, ...]] = field(compare=False)  # available variants' styles
    unavailable: dict[str, str] = field(compare=False)  # variant or anchor -> why not
    environment: dict = field(compare=False)  # machine.environment.capture() run there
    anchors: tuple[str, ...] = field(compare=False)  # the echo anchors whose library loads there

    @property
    def running(self) -> bool:
        return self.executable == sys.executable


class NoInterpreter(RuntimeError):
    """An interpreter asked for cannot be found or prepared: a usage error, said in one line."""


def interpreter(spec: str, say) -> Interpreter:
    """The interpreter `spec` names, asked what it can run.

    A version ("3.13") is measured from its own virtualenv, prepared here; anything else is an
    executable used as it is: a path, or a command on PATH ("python3.13", "pypy3").
    """
    if not spec or spec in (RUNNING, VERSION, sys.executable):
        return here()
    if is_version(spec) and (family(spec) == DEBIAN or spec in rooted([spec])):
        version = version_of(spec)
        if version not in debian_root.PYTHONS:
            raise NoInterpreter(f"--python {spec}: Debian's root holds {debian_root.PYTHONS}")
        return ask(str(in_root(version, say)))  # named debian-X.Y there (RUNNING)
    if is_version(spec):
        return ask(str(virtualenv(spec, say)))
    executable = shutil.which(spec)
    if executable is None:
        raise NoInterpreter(f"--python {spec}: neither a version (3.13) nor a Python executable")
    return ask(executable)


def is_version(spec: str) -> bool:
    """ "3.13", or a build's name: "debian-3.13"."""
    return re.fullmatch(rf"({DEBIAN}-)?\d+\.\d+", spec) is not None


def here() -> Interpreter:
    """The interpreter running the bench, asked in this process."""

    found = loops.discover().values()
    return _interpreter(
        RUNNING,
        sys.executable,
        {v.name: (tuple(v.styles), v.unavailable) for v in found},
        environment.capture(),
        anchor_reasons(),
    )


def _interpreter(version, executable, variants, environment, anchors) -> Interpreter:
    """An Interpreter from what it said: variant -> (styles, why not), anchor -> why not."""
    return Interpreter(
        version,
        executable,
        {name: styles for name, (styles, why) in variants.items() if not why},
        {name: why for name, (styles, why) in variants.items() if why}
        | {name: why for name, why in anchors.items() if why},
        environment,
        tuple(name for name, why in anchors.items() if not why),
    )


def ask(executable: str) -> Interpreter:
    """What `executable` can run: `python -m loops --json` there, from the lab's root."""
    done = subprocess.run(
        [executable, "-m", "loops", "--json"], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise NoInterpreter(f"{executable} -m loops --json failed: {done.stderr.strip()[-300:]}")
    data = json.loads(done.stdout)
    variants = {n: (tuple(v["styles"]), v["unavailable"]) for n, v in data["variants"].items()}
    environment, anchors, name = json.loads(run_there(executable, CAPTURE))
    return _interpreter(name, executable, variants, environment, anchors)


# The environment record as the interpreter under test sees it (its version, its libraries),
# which echo anchors it cannot run, with why, and its name in the results (RUNNING: its build's).
CAPTURE = (
    "import json; from machine import environment; from bench.plan import anchor_reasons; "
    "from machine.interpreters import RUNNING; "
    "print(json.dumps([environment.capture(), anchor_reasons(), RUNNING]))"
)


def run_there(executable: str, code: str) -> str:
    """stdout of `code` run by `executable` from the lab's root."""
    done = subprocess.run([executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise NoInterpreter(f"{executable}: {done.stderr.strip()[-300:]}")
    return done.stdout


def in_root(version: str, say) -> Path:
    """`.venvs/bench-debian-X.Y/in-root`: Debian's python `version` in its virtualenv, made
    inside the root (the root made first if it is not)."""
    try:
        debian_root.make(say)
    except debian_root.CannotMake as error:
        raise NoInterpreter(
            f"Python {version} needs Debian's root, which cannot be made: {error}"
        ) from None
    venv = VENVS / f"bench-{DEBIAN}-{version}"
    script = venv / "in-root"
    virtualenv(version, say, venv, inside=lambda argv: debian_root.command(argv))
    debian_root.copy_host_files()
    argv = debian_root.command([str(venv / "bin" / "python")])
    script.write_text(f'#!/bin/sh\nLAB_CWD="$PWD" exec {shlex.join(argv)} "$@"\n')
    script.chmod(0o755)
    return script


def virtualenv(version: str, say, venv: Path | None = None, inside=None) -> Path:
    """`.venvs/bench-X.Y/bin/python`, created and filled once (again when pyproject changes).

    `inside` wraps each step's argv (Debian's root: ``debian_root.command``)."""
    venv = venv or VENVS / f"bench-{version}"
    python = venv / "bin" / "python"
    stamp = venv / "lab-requirements.sha256"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    # pyvenv.cfg, not bin/python: a root's venv links to a python only the root has.
    if (venv / "pyvenv.cfg").exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    base = f"/usr/bin/python{version}" if inside else find(version)
    if base is None:
        raise NoInterpreter(
            f"no CPython {version} found (python{version} on PATH or under ~/.pyenv/versions/)"
        )
    steps = [
        (f"creating {venv.relative_to(ROOT)} with {base}", [base, "-m", "venv", str(venv)]),
        (
            "upgrading pip (--group needs pip >= 25.1)",
            [python, "-m", "pip", "install", "-U", "pip"],
        ),
        (
            f"installing the groups {', '.join(GROUPS)} and {', '.join(EXTRA)}",
            [python, "-m", "pip", "install", *(f"--group={g}" for g in GROUPS), *EXTRA],
        ),
    ]
    for number, (what, argv) in enumerate(steps, 1):
        say(f"Python {version} [{number}/{len(steps)}]: {what}")
        argv = [str(a) for a in argv]
        done = subprocess.run(
            inside(argv) if inside else argv,
            cwd=ROOT,
            capture_output=True,
            text=True,
            env={**os.environ, "LAB_CWD": str(ROOT)},
        )
        if done.returncode != 0:
            raise NoInterpreter(f"{what} failed:\n{(done.stdout + done.stderr)[-800:]}")
    stamp.write_text(wanted)
    return python
