"""Turn deviations.toml into marks on the CPython asyncio tests it names."""

from __future__ import annotations

import gc
import sys
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).parent
DEVIATIONS = HERE / "deviations.toml"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
KINDS = ("xfail", "skip")  # skip: a test that would hang, or that reads asyncio's internals


def load_deviations(path: Path = DEVIATIONS, python: str = PYTHON) -> dict[str, dict]:
    """test id ("Class.test_name") -> its entry, for the entries that apply to `python`.

    An entry: ``test``, ``class`` (the failure class, see the file's header), ``reason``,
    optional ``kind`` (xfail, the default, or skip) and ``python`` (the versions it applies
    to; every version if absent).
    """
    found = {}
    for entry in tomllib.loads(path.read_text()).get("deviation", []):
        if entry.get("kind", "xfail") not in KINDS:
            raise ValueError(f"{path}: kind must be one of {KINDS}: {entry}")
        if python in entry.get("python", [python]):
            found[entry["test"]] = entry
    return found


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    deviations = load_deviations()
    for item in items:
        if HERE not in Path(str(item.path)).parents or item.cls is None:
            continue
        entry = deviations.get(f"{item.cls.__name__}.{item.name}")
        if entry is None:
            continue
        reason = f"{entry['class']}: {entry['reason']}"
        if entry.get("kind", "xfail") == "skip":
            item.add_marker(pytest.mark.skip(reason=reason))
        else:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))


@pytest.fixture(autouse=True)
def _collect_garbage_after():
    """Each test's garbage is collected at its end, not inside the next one: CPython's
    test_streams counts the ResourceWarnings a gc.collect() raises, and would otherwise count
    those of an earlier test (one that failed on a part this loop does not provide)."""
    yield
    gc.collect()
