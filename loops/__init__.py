"""The lab's loops: discovery of variant folders and the contract they follow.

A variant is a folder ``loops/<name>/`` (a name not starting with ``_``) whose ``__init__.py``
defines ``VARIANT`` (see :mod:`loops.contract`). An optional ``deviations.toml`` beside it lists
known deviations from conformance properties. Nothing else lists the variants: adding a folder
adds a variant everywhere (the suite, the workloads, the bench, the reports).

``LAB_EXTRA_LOOPS`` (directories separated by ``os.pathsep``) adds folders of variants kept
outside the tree, which is how the lab's own tests try a throw-away variant.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import tomllib
from dataclasses import replace
from pathlib import Path

from loops.contract import (
    CAPABILITIES,
    EVERY_CAPABILITY,
    STYLES,
    TASK_CAPABILITIES,
    Deviation,
    Variant,
    check_nonblocking,
)

__all__ = [
    "CAPABILITIES",
    "EVERY_CAPABILITY",
    "STYLES",
    "TASK_CAPABILITIES",
    "Deviation",
    "UnknownVariantError",
    "Variant",
    "check_nonblocking",
    "discover",
    "get",
]

for _extra in filter(None, os.environ.get("LAB_EXTRA_LOOPS", "").split(os.pathsep)):
    if _extra not in __path__:
        __path__.append(_extra)


class UnknownVariantError(LookupError):
    """A loop name that no folder under loops/ defines."""

    def __str__(self) -> str:
        return str(self.args[0])


def _variant_names() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.iter_modules(__path__)
        if info.ispkg and not info.name.startswith("_")
    )


def _load(name: str) -> Variant:
    module = importlib.import_module(f"{__name__}.{name}")
    variant = getattr(module, "VARIANT", None)
    if not isinstance(variant, Variant):
        raise TypeError(f"loops/{name}/__init__.py must define VARIANT = loops.Variant(...)")
    if variant.name != name:
        raise ValueError(f"loops/{name}/ defines VARIANT.name = {variant.name!r}; use {name!r}")
    return replace(
        variant, deviations=_deviations(Path(module.__file__).parent / "deviations.toml")
    )


def _deviations(path: Path) -> tuple[Deviation, ...]:
    if not path.exists():
        return ()
    entries = tomllib.loads(path.read_text()).get("deviation", [])
    return tuple(
        Deviation(
            property=entry["property"],
            reason=entry["reason"],
            styles=tuple(entry.get("styles", STYLES)),
            strict=entry.get("strict", True),
        )
        for entry in entries
    )


_cache: dict[str, Variant] = {}


def discover() -> dict[str, Variant]:
    """Every variant folder under loops/, by name, in name order."""
    for name in _variant_names():
        if name not in _cache:
            _cache[name] = _load(name)
    return {name: _cache[name] for name in _variant_names()}


def get(name: str) -> Variant:
    """The variant called name, or UnknownVariantError listing the known ones."""
    names = _variant_names()
    if name not in names:
        raise UnknownVariantError(
            f"unknown loop {name!r}; known loops: {', '.join(names) or '(none)'}"
        )
    if name not in _cache:
        _cache[name] = _load(name)
    return _cache[name]
