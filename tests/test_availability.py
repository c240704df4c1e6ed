"""Availability: a variant that cannot run here is listed with its reason, never a crash.

A throw-away folder (kept outside the tree, added by LAB_EXTRA_LOOPS) fences an import that
cannot succeed with ``loops.requires``; every consumer must show it as unavailable with the
reason: discovery, ``loops.get``, ``python -m loops``, a workload's CLI, the conformance
matrix and the timelines. The real case, curio 1.6 on Python 3.12+, is checked on whichever
interpreter runs the suite (CI runs it on 3.11 and on the newest one present).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import loops

ROOT = Path(__file__).resolve().parent.parent
NAME = "zz_unavailable"
REASON = "no_such_frobnicator does not load"

UNAVAILABLE_VARIANT = """
from loops import Variant, requires

with requires("no_such_frobnicator"):
    import no_such_frobnicator

VARIANT = Variant(
    name="{name}",
    summary="never seen: the import above fails first",
    lineage="tests/test_availability.py",
    capabilities=frozenset({{"core"}}),
    coroutines=no_such_frobnicator,
)
"""


@pytest.fixture
def extra(tmp_path: Path) -> dict[str, str]:
    """The environment of a process that also discovers the unavailable throw-away variant."""
    folder = tmp_path / NAME
    folder.mkdir()
    (folder / "__init__.py").write_text(UNAVAILABLE_VARIANT.format(name=NAME))
    return {**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}


def _run(args: list[str], env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def test_discovery_keeps_it_with_its_reason_and_get_raises_it(extra):
    probe = (
        "import loops\n"
        f"v = loops.discover()[{NAME!r}]\n"
        "print(v.available, v.styles, v.unavailable)\n"
        f"assert {NAME!r} not in loops.available()\n"
        f"try:\n    loops.get({NAME!r})\n"
        "except loops.UnavailableVariantError as error:\n    print('get:', error)\n"
    )
    done = _run(["-c", probe], extra)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("False () ") and REASON in first
    assert second.startswith(f"get: loop {NAME!r} is unavailable on Python {loops.PYTHON}: ")
    assert "ModuleNotFoundError" in second


def test_an_error_that_is_not_unavailable_still_surfaces(tmp_path):
    # Only Unavailable means "cannot run here": a bug in a folder must not hide as a reason.
    folder = tmp_path / "zz_broken"
    folder.mkdir()
    (folder / "__init__.py").write_text("raise RuntimeError('a bug in the folder')\n")
    env = {**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    done = _run(["-c", "import loops; loops.discover()"], env)
    assert done.returncode == 1
    assert "RuntimeError: a bug in the folder" in done.stderr


def test_python_m_loops_lists_it_with_the_reason_and_exits_0(extra):
    done = _run(["-m", "loops"], extra)
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if f"`{NAME}`" in line)
    assert f"| `{NAME}` | home-made loop | — | unavailable on Python {loops.PYTHON}: " in row
    assert REASON in row
    assert "`traps` | home-made loop" in done.stdout  # the others are still there


def test_an_unavailable_reference_adapter_keeps_its_kind(tmp_path):
    """The kind is read from the folder's docstring, which a failed import does not hide."""
    folder = tmp_path / NAME
    folder.mkdir()
    adapter = '"""Reference: a production loop this machine lacks."""\n' + UNAVAILABLE_VARIANT
    (folder / "__init__.py").write_text(adapter.format(name=NAME).replace(
        "capabilities=", "reference=True,\n    capabilities="))  # fmt: skip
    env = {**os.environ, "LAB_EXTRA_LOOPS": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    probe = f"import loops; v = loops.discover()[{NAME!r}]; print(v.available, v.kind)"
    done = _run(["-c", probe], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", loops.REFERENCE]
    listing = _run(["-m", "loops"], env)
    assert f"| `{NAME}` | reference adapter | — | unavailable on Python" in listing.stdout


def test_asyncio_eager_is_a_reference_adapter_on_every_python():
    # Unavailable on 3.11 (no eager task factory): it once reported reference=False there.
    assert loops.discover()["asyncio_eager"].kind == loops.REFERENCE


def test_every_variant_declares_its_kind_alike_in_its_record_and_its_docstring():
    """An adapter says "Reference:" in its docstring (read when it cannot load) and
    `reference=True` in its VARIANT (read when it can): the two must agree."""
    from loops import _docstring
    from loops.contract import REFERENCE_DOCSTRING

    for name, variant in loops.available().items():
        says = _docstring(ROOT / "loops" / name / "__init__.py").startswith(REFERENCE_DOCSTRING)
        assert says == variant.reference, name


def test_a_workload_cli_names_the_reason(extra):
    done = _run(["-m", "workloads.sleep", "--loop", NAME, "--tasks", "10"], extra)
    assert done.returncode == 2
    assert f"is unavailable on Python {loops.PYTHON}: {REASON}" in done.stderr


def test_the_conformance_matrix_shows_it_and_a_narrowed_run_says_why(extra, tmp_path):
    matrix = tmp_path / "matrix.md"
    one_property = "join_returns_the_result and traps"  # a second's run, yet a whole matrix
    done = _run(
        ["-m", "pytest", "conformance", "-q", "--matrix", str(matrix), "-k", one_property], extra
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    text = matrix.read_text()
    assert f"- **{NAME}** is unavailable on Python {loops.PYTHON}: {REASON}" in text
    summary = text.split("## Summary by variant", 1)[1]
    assert f"| {NAME} " in summary and REASON in summary
    narrowed = _run(["-m", "pytest", "conformance", "-q", "--loop", NAME], extra)
    assert narrowed.returncode == 4  # a usage error: nothing ran, and it says why
    assert REASON in narrowed.stdout + narrowed.stderr


def test_the_timelines_say_why_it_is_absent_and_keep_records_made_elsewhere(tmp_path, monkeypatch):
    from timeline import __main__ as timeline_main

    monkeypatch.setattr(
        loops, "discover", lambda: {NAME: loops.Variant.unavailable_here(NAME, REASON)}
    )
    assert timeline_main.run_all(tmp_path, None, None, None) == 0
    failures = json.loads((tmp_path / "failures.json").read_text())
    assert failures == {NAME: f"unavailable on Python {loops.PYTHON}: {REASON}"}
    # Recorded on an interpreter where it runs (each record names its Python): kept, shown.
    elsewhere = tmp_path / f"spin-{NAME}-coroutines.json"
    elsewhere.write_text("{}")
    assert timeline_main.run_all(tmp_path, None, None, None) == 0
    assert elsewhere.exists()
    assert json.loads((tmp_path / "failures.json").read_text()) == {}


def test_curio_is_unavailable_exactly_where_it_cannot_import():
    curio = loops.discover()["curio"]
    if sys.version_info >= (3, 12):
        # curio 1.6 reads multiprocessing.connection.CHALLENGE, which 3.12 removed.
        assert not curio.available
        assert "CHALLENGE" in curio.unavailable
        with pytest.raises(loops.UnavailableVariantError, match="CHALLENGE"):
            loops.get("curio")
    else:
        assert curio.available, curio.unavailable
        assert curio.styles == ("coroutines",)


def test_an_anchor_whose_library_does_not_load_is_left_out_with_its_reason():
    from bench.plan import anchor_names
    from workloads.echo.native import SERVERS, unavailable

    reasons = {name: unavailable(name) for name in SERVERS}
    assert sorted(anchor_names()) == sorted(name for name, why in reasons.items() if why is None)
    if sys.version_info < (3, 12):
        assert reasons["curio-sockets"] is None
        return
    # curio 1.6 on 3.12+: a usage error with the reason, not a traceback.
    assert "CHALLENGE" in reasons["curio-sockets"]
    done = _run(["-m", "workloads.echo.native", "curio-sockets"], dict(os.environ), timeout=60)
    assert done.returncode == 2
    assert "anchor 'curio-sockets' is unavailable on Python 3." in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("blocked", "names"), [("greenlet", {"greenlets", "gevent"})])
def test_a_greenlet_variant_whose_library_does_not_import_is_unavailable_with_why(blocked, names):
    """Where greenlet cannot import (no wheel for the interpreter), greenlets and gevent, which
    need it, are listed unavailable with the import's reason; every other variant is as before."""
    program = (
        f"import sys; sys.modules[{blocked!r}] = None\n"  # import of it raises ImportError
        "import json, loops\n"
        "print(json.dumps({n: v.unavailable for n, v in loops.discover().items()}))"
    )
    done = _run(["-c", program], dict(os.environ), timeout=60)
    assert done.returncode == 0, done.stderr
    reasons = json.loads(done.stdout)
    for name in names:
        assert " does not load: " in reasons[name] and blocked in reasons[name], reasons[name]
    here = {n: v.unavailable for n, v in loops.discover().items()}
    assert {n: r for n, r in reasons.items() if n not in names} == {
        n: r for n, r in here.items() if n not in names
    }
