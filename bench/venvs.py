"""The interpreters a run measures on: each one's virtualenv, and what it can run.

``python -m bench run --python 3.13`` measures the loops on CPython 3.13. The interpreter running
the bench measures with its own environment; another one gets a virtualenv of its own,
``.venvs/bench-3.13/`` (gitignored), made once with ``python3.13 -m venv`` and the workloads'
dependency groups (``http``: the workloads and uvicorn) plus pyperf, and made again only when
``pyproject.toml`` changes. ``--python`` also takes a path to a Python executable (a virtualenv
of your own). What a variant can do there is asked of that interpreter (``python -m loops
--json``), so a variant unavailable on it is skipped there with its own reason.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.environment import ROOT
from bench.interpreters import RUNNING, find

VENVS = ROOT / ".venvs"
GROUPS = ("http",)  # every workload's dependencies, references included
EXTRA = ("pyperf>=2.6",)  # the micro benchmarks' harness


@dataclass(frozen=True)
class Interpreter:
    """One interpreter a run measures on: its version, its executable, what runs there."""

    version: str  # "3.13"
    executable: str
    styles: dict[str, tuple[str, ...]] = field(compare=False)  # available variants' styles
    unavailable: dict[str, str] = field(compare=False)  # variant or anchor -> why not
    environment: dict = field(compare=False)  # bench.environment.capture() run there
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
    if not spec or spec == RUNNING or spec == sys.executable:
        return here()
    if is_version(spec):
        return ask(str(virtualenv(spec, say)))
    executable = shutil.which(spec)
    if executable is None:
        raise NoInterpreter(f"--python {spec}: neither a version (3.13) nor a Python executable")
    return ask(executable)


def is_version(spec: str) -> bool:
    return re.fullmatch(r"\d+\.\d+", spec) is not None


def here() -> Interpreter:
    """The interpreter running the bench, asked in this process."""
    import loops
    from bench import environment
    from bench.registry.echo import anchor_reasons

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
    return _interpreter(
        data["python"], executable, variants, *json.loads(run_there(executable, CAPTURE))
    )


# The environment record as the interpreter under test sees it (its version, its libraries),
# and which echo anchors it cannot run, with why.
CAPTURE = (
    "import json; from bench import environment; from bench.registry.echo import anchor_reasons; "
    "print(json.dumps([environment.capture(), anchor_reasons()]))"
)


def run_there(executable: str, code: str) -> str:
    """stdout of `code` run by `executable` from the lab's root."""
    done = subprocess.run([executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise NoInterpreter(f"{executable}: {done.stderr.strip()[-300:]}")
    return done.stdout


def virtualenv(version: str, say) -> Path:
    """`.venvs/bench-X.Y/bin/python`, created and filled once (again when pyproject changes)."""
    venv = VENVS / f"bench-{version}"
    python = venv / "bin" / "python"
    stamp = venv / "lab-requirements.sha256"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return python
    base = find(version)
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
        done = subprocess.run([str(a) for a in argv], cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise NoInterpreter(f"{what} failed:\n{(done.stdout + done.stderr)[-800:]}")
    stamp.write_text(wanted)
    return python
