"""curio's own ``test_reentrant_kernel``, from its released sdist, on every home-made coroutine
loop: a ``run`` inside a running kernel is refused with ``RuntimeError`` and leaves nothing
behind (a coroutine left unawaited, reported when it is collected, fails it: checked against
roundrobin before it closed what it refused).

The test is curio's, unmodified, taken from the sdist at the version the lab pins
(``curio>=1.6`` in ``pyproject.toml``) when the test runs, never committed; the plugin that
runs it on the lab's loop is ``tests/real_suites/curio_kernel.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from importlib.metadata import version
from pathlib import Path

import pytest

import loops

ROOT = Path(__file__).resolve().parent.parent
TEST = "tests/test_kernel.py::test_reentrant_kernel"
COROUTINE_LOOPS = sorted(
    name
    for name, variant in loops.discover().items()
    if not variant.reference and "coroutines" in variant.styles
)


@pytest.fixture(scope="module")
def curio_sdist(tmp_path_factory) -> Path:
    """The installed curio's sdist, unpacked: its tests/ folder is what runs."""
    pytest.importorskip("curio")
    where = tmp_path_factory.mktemp("curio")
    pinned = f"curio=={version('curio')}"
    fetched = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--dest",
            str(where),
            pinned,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if fetched.returncode:
        pytest.skip(f"could not download {pinned}'s sdist: {fetched.stderr.strip()[-200:]}")
    (archive,) = where.glob("curio-*.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(where, filter="data")
    (folder,) = (p for p in where.iterdir() if p.is_dir())
    return folder


def test_every_home_made_coroutine_loop_is_here():
    # The four that curio's suite first caught the regression on, and any added since.
    assert {"traps", "roundrobin", "futures", "completions"} <= set(COROUTINE_LOOPS)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("loop", COROUTINE_LOOPS)
def test_curios_reentrant_kernel_test_passes(loop, curio_sdist):
    if not loops.get(loop).available:
        pytest.skip(loops.get(loop).unavailable)
    env = {
        **os.environ,
        "LAB_LOOP": loop,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "tests" / "real_suites"), str(ROOT)]),
    }
    # An unawaited coroutine is reported when it is collected, as an unraisable warning,
    # which pytest only prints unless told it is an error.
    errors = ["-W", "error::RuntimeWarning", "-W", "error::pytest.PytestUnraisableExceptionWarning"]
    command = [sys.executable, "-m", "pytest", TEST, "-p", "curio_kernel", *errors, "-q"]
    done = subprocess.run(
        [*command, "-p", "no:cacheprovider"],
        cwd=curio_sdist,
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr
